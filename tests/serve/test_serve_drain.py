"""SIGTERM and SIGINT with requests in flight: `uform serve` stops accepting, answers every request
it holds (each with its own input's embedding), and exits 0; /health says 503 while it drains.

The requests are held in the queue by batches that would wait 60 s for company (--max-batch 64,
--max-wait-us 60000000), so they are provably in flight when the signal comes: draining runs them
at once instead of waiting.

Usage: test_serve_drain.py UFORM CHECKPOINT FIXTURES WORK"""

import os
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, cosine, data_uri, encode, pictures, wait_until  # noqa: E402

REQUESTS = 40


def drain(t, uform, checkpoint, work, signal_number):
    name = signal.Signals(signal_number).name
    texts = [f"request number {i} in flight" for i in range(REQUESTS)]
    references = encode(uform, checkpoint, "text", texts, work, "drain")
    images = pictures(os.path.join(work, "drain-pictures"), 4, seed=9)
    image_refs = encode(uform, checkpoint, "image", images, work, "drain-images")
    server = Server(uform, checkpoint, "--max-batch", "64", "--max-wait-us", "60000000", "--timeout", "120")
    answers = [None] * (REQUESTS + len(images))

    def call(i):
        body = {"input": texts[i]} if i < REQUESTS else {"input": [{"image": data_uri(images[i - REQUESTS])}]}
        answers[i] = server.post("/v1/embeddings", body)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(answers))]
    for thread in threads:
        thread.start()
    queued = lambda: (server.metric('uform_queue_depth{queue="text"}') == REQUESTS and  # noqa: E731
                      server.metric('uform_queue_depth{queue="image"}') == len(images))
    t.check(wait_until(queued, 30), f"{name}: every request queued before the signal")
    started = time.time()
    server.process.send_signal(signal_number)
    for thread in threads:
        thread.join(60)
    code = server.process.wait(60)
    t.check(code == 0, f"{name}: exit status {code}")
    t.check(time.time() - started < 30, f"{name}: drained in {time.time() - started:.1f} s, not after max-wait")
    for i, answer in enumerate(answers):
        status, body, _ = answer or (None, None, None)
        reference = references[i] if i < REQUESTS else image_refs[i - REQUESTS]
        t.check(status == 200 and cosine(body["data"][0]["embedding"], reference) >= 0.9999,
                f"{name}: request {i} answered {status}")
    t.check(any("answering the requests in flight" in line for line in server.lines), f"{name}: said it drains")
    refused = False
    try:
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
    except OSError:
        refused = True
    t.check(refused, f"{name}: connections refused after exit")


def health_while_draining(t, uform, checkpoint):
    """While a request is still being read, /health on another connection answers 503 draining and
    the request that completes is still served."""
    server = Server(uform, checkpoint)
    keep = server.connection()
    status, _, _ = server.request("GET", "/health", connection=keep)
    t.check(status == 200, "healthy before the signal")
    slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    body = b'{"input": "sent slowly"}'
    slow.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body[:5])
    t.check(wait_until(lambda: server.metric("uform_in_flight_requests") == 2, 20), "the slow request is in flight")
    server.process.send_signal(signal.SIGTERM)
    t.check(wait_until(lambda: server.request("GET", "/health", connection=keep)[0] == 503, 20),
            "/health answers 503 while draining")
    slow.sendall(body[5:])
    response = b""
    while b"\r\n\r\n" not in response or not response.rstrip().endswith(b"}"):
        chunk = slow.recv(65536)
        if not chunk:
            break
        response += chunk
    t.check(response.startswith(b"HTTP/1.1 200"), f"the request read while draining is served: {response[:40]}")
    slow.close()
    keep.close()
    code = server.process.wait(60)
    t.check(code == 0, f"exit status {code}")


def main(argv):
    uform, checkpoint, fixtures, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    drain(t, uform, checkpoint, work, signal.SIGTERM)
    drain(t, uform, checkpoint, work, signal.SIGINT)
    health_while_draining(t, uform, checkpoint)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
