"""What docs/serve.md promises about `uform serve`'s life and its limits, each tested as written:
503 while the model loads (the checkpoint is a FIFO, so the load waits until the test opens it);
while draining, new connections are refused and a second signal exits at once (143 for SIGTERM);
`--max-connections N` serves N connections at once and leaves the next waiting (unaccepted, in the
kernel's backlog) until one closes; `--host` binds that address only;
no CORS headers, whatever the request's Origin.

Usage: test_serve_lifecycle.py UFORM CHECKPOINT FIXTURES WORK"""

import http.client
import os
import shutil
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, wait_until  # noqa: E402


def refused(host, port):
    """Whether a connection to host:port is refused (or reset at once) rather than accepted."""
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return sock.recv(1024) == b""
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    except OSError:
        return False


def loading(t, uform, work):
    """The server listens before it loads: /health and the API answer 503 until the load ends. The
    load of a FIFO blocks in open() until a writer comes; it then fails (not a regular file), and
    the server exits 1 saying so."""
    fifo = os.path.join(work, "loading.safetensors")
    os.mkfifo(fifo)
    server = Server(uform, fifo, wait_ready=False)
    try:
        status, headers, body = server.get("/health")
        t.check(status == 503 and b'"loading"' in body and headers.get("retry-after") == "1",
                f"/health while loading: {status} {body[:60]} retry-after {headers.get('retry-after')}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a"})
        t.check(status == 503 and answer and answer["error"]["code"] == "loading", f"embeddings while loading: {status} {answer}")
        descriptor = os.open(fifo, os.O_WRONLY)  # the server's open() returns; it reads nothing and refuses
        os.close(descriptor)
        code = server.process.wait(30)
        t.check(code == 1, f"a checkpoint that cannot load: exit status {code}")
        t.check(wait_until(lambda: any("not a regular file" in line for line in server.lines), 5),
                f"the load's failure is said: {server.lines[-2:]}")
    finally:
        server.stop()


def draining(t, uform, checkpoint):
    """A request still being read holds the drain open: meanwhile new connections are refused, and
    a second SIGTERM exits at once with 128 + 15, saying so."""
    server = Server(uform, checkpoint)
    slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    body = b'{"input": "sent slowly"}'
    slow.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body[:5])
    try:
        # 2: the slow request and the /metrics request that asks.
        t.check(wait_until(lambda: server.metric("uform_in_flight_requests") == 2, 20), "the slow request is in flight")
        t.check(not refused("127.0.0.1", server.port), "connections are accepted before the signal")
        server.process.send_signal(signal.SIGTERM)
        t.check(wait_until(lambda: any("answering the requests in flight" in line for line in server.lines), 20),
                "the first SIGTERM drains")
        t.check(refused("127.0.0.1", server.port), "a new connection is refused while draining")
        started = time.time()
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(30)
        t.check(code == 128 + signal.SIGTERM and time.time() - started < 5,
                f"a second SIGTERM: exit status {code} after {time.time() - started:.1f} s")
        t.check(wait_until(lambda: any("SIGTERM again" in line for line in server.lines), 5),
                f"the second signal is said: {server.lines[-2:]}")
    finally:
        slow.close()
        server.stop()


def max_connections(t, uform, checkpoint):
    """--max-connections 3: with three idle connections open, a fourth's whole request waits
    unanswered; once one of the three closes, it is answered."""
    server = Server(uform, checkpoint, "--max-connections", "3")
    held = []
    try:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
            held.append(sock)
        fourth = socket.create_connection(("127.0.0.1", server.port), timeout=3)
        fourth.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        try:
            early = fourth.recv(1024)
        except socket.timeout:
            early = None
        t.check(early is None, f"a fourth connection waits while three are open: {early[:40] if early else early}")
        held.pop().close()
        fourth.settimeout(10)
        try:
            answer = fourth.recv(1024)
        except socket.timeout:
            answer = b""
        t.check(answer.startswith(b"HTTP/1.1 200"), f"the fourth is answered once one of the three closed: {answer[:40]}")
        fourth.close()
    finally:
        for sock in held:
            sock.close()
        t.check(server.stop() == 0, "the server exits 0")


def host(t, uform, checkpoint):
    """--host 127.0.0.2 listens on that address alone (all of 127/8 is this machine on Linux)."""
    server = Server(uform, checkpoint, "--host", "127.0.0.2")
    try:
        connection = http.client.HTTPConnection("127.0.0.2", server.port, timeout=30)
        connection.request("GET", "/health")
        response = connection.getresponse()
        t.check(response.status == 200 and b'"ok"' in response.read(), f"served on 127.0.0.2: {response.status}")
        connection.close()
        t.check(refused("127.0.0.1", server.port), "nothing listens on 127.0.0.1 at that port")
    finally:
        t.check(server.stop() == 0, "the server exits 0")


def no_cors(t, uform, checkpoint):
    """No Access-Control-* header on any answer, with or without an Origin, preflight included: other
    origins' scripts cannot read the answers."""
    server = Server(uform, checkpoint)
    try:
        origin = {"Origin": "http://elsewhere.example"}
        answers = [server.get("/health", origin), server.get("/v1/models", origin), server.get("/", origin),
                   server.request("POST", "/v1/embeddings", b'{"input": "a"}', {**origin, "Content-Type": "application/json"}),
                   server.request("OPTIONS", "/v1/embeddings", None, {**origin, "Access-Control-Request-Method": "POST"})]
        t.check(answers[3][0] == 200, f"the embeddings request with an Origin is answered: {answers[3][0]}")
        for status, headers, _ in answers:
            cors = [name for name in headers if name.startswith("access-control-")]
            t.check(not cors, f"an answer ({status}) with CORS headers: {cors}")
        t.check(not (200 <= answers[4][0] < 300), f"a CORS preflight is not approved: {answers[4][0]}")
    finally:
        t.check(server.stop() == 0, "the server exits 0")


def main(argv):
    uform, checkpoint, _, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    loading(t, uform, work)
    draining(t, uform, checkpoint)
    max_connections(t, uform, checkpoint)
    host(t, uform, checkpoint)
    no_cors(t, uform, checkpoint)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
