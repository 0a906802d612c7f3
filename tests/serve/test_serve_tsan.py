"""The HTTP path of `uform serve` under ThreadSanitizer (issue 37, item 3; label `tsan`, `make tsan`).

The binary is the TSan build's. Concurrent clients (threads of this process, each on its own
connections) send /v1/embeddings (texts and pictures), /v1/search over a small index, /v1/models and
a malformed body, all at once, a bounded number of rounds; every answer must have the status its
request calls for, and rows as many as asked. Then a second burst is started and SIGTERM sent while
its requests are in flight: the server must drain and exit 0. The server runs with TSAN_OPTIONS
halt_on_error=1 and exitcode=66, so a race report ends it with 66, and its stderr must not hold
"WARNING: ThreadSanitizer" (a report also fails the check on the exit status, but the text is what
names it). No suppression is used: libmicrohttpd is not instrumented, yet its threads gave no report
here (Debian's libmicrohttpd 0.9.75, 2026-12-06); one that comes up must be named narrowly, with the reason.
A deliberate race (an unguarded counter in tools/serve/http.c's respond) fails this test with
exit 66 and the report.

Usage: test_serve_tsan.py UFORM CHECKPOINT WORK
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, data_uri, pictures, wait_until  # noqa: E402

UFORM, CHECKPOINT, WORK = sys.argv[1:4]
CLIENTS = 6          # concurrent client threads
ROUNDS = 4           # rounds of the four requests per client before the signal
TEXTS = ["a photo of a cat", "a dog on a beach", "a red star", "ünïcödé ✓"]


def sanitizer_environment():
    """This process's TSAN_OPTIONS (make tsan's) with halt_on_error and exitcode 66 appended: later
    options win, so these hold whatever came before."""
    extra = "halt_on_error=1:exitcode=66"
    previous = os.environ.get("TSAN_OPTIONS", "")
    os.environ["TSAN_OPTIONS"] = f"{previous}:{extra}" if previous else extra


def one_round(t, server, who, images):
    """The four kinds of request, each checked for its status and row count."""
    image = data_uri(images[who % len(images)])
    status, answer, _ = server.post("/v1/embeddings", {"input": [TEXTS[who % len(TEXTS)], {"image": image}]})
    t.check(status == 200 and answer is not None and len(answer.get("data", [])) == 2
            and all(len(row["embedding"]) == 64 for row in answer["data"]),
            f"client {who}: embeddings answered {status}")
    status, answer, _ = server.post("/v1/search", {"query": TEXTS[who % len(TEXTS)], "top_k": 3})
    t.check(status == 200 and answer is not None and len(answer.get("data", [])) == 3,
            f"client {who}: search answered {status}")
    status, _, body = server.get("/v1/models")
    t.check(status == 200 and b'"tiny"' in body, f"client {who}: /v1/models answered {status}")
    status, _, _ = server.request("POST", "/v1/embeddings", b'{"input": [', {"Content-Type": "application/json"})
    t.check(status == 400, f"client {who}: a malformed body answered {status}, not 400")


def in_flight(server, who, images, outcomes):
    """A request that the signal catches: any answer or a closed connection is fine, what is
    checked is the server's report and exit; the outcome is kept to say how many got through."""
    try:
        status, _, _ = server.post("/v1/embeddings", {"input": [{"image": data_uri(images[who % len(images)])}] * 8})
        outcomes.append(status)
    except OSError:
        outcomes.append("closed")


def busy(server):
    """Whether /metrics counts two requests in flight; also true once the server has died (a report
    under halt_on_error), which the checks after the wait then name."""
    if server.process.poll() is not None:
        return True
    try:
        return (server.metric("uform_in_flight_requests") or 0) >= 2
    except OSError:
        return server.process.poll() is not None


def main():
    t = Tally()
    sanitizer_environment()
    shutil.rmtree(WORK, ignore_errors=True)
    corpus = os.path.join(WORK, "corpus")
    images = pictures(corpus, 6, seed=37)
    t.check(len(images) == 6, "the generated pictures")
    index = os.path.join(WORK, "corpus.index")
    subprocess.run([UFORM, "index", CHECKPOINT, corpus, "--out", index, "--quiet"], check=True)

    started = time.time()
    server = Server(UFORM, CHECKPOINT, "--index", index, "--http-threads", "4")
    try:
        return exercise(t, server, images, started)
    finally:
        if server.process.poll() is None:  # whatever went wrong, no server outlives the test
            server.process.kill()
            server.process.wait()


def exercise(t, server, images, started):
    threads = [threading.Thread(target=lambda who=who: [one_round(t, server, who, images) for _ in range(ROUNDS)],
                                daemon=True) for who in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(240)
    t.check(not any(thread.is_alive() for thread in threads), "every client finished within 240 s")
    t.check(t.passed >= CLIENTS * ROUNDS * 4 + 1, f"{t.passed} checks passed, expected {CLIENTS * ROUNDS * 4 + 1}")

    # SIGTERM with requests in flight: once /metrics counts at least two requests in flight (its own
    # and one of the burst's at the least), polled for at most 60 s; the outcomes printed below say
    # how many were answered (200, or 503 once draining) and how many found the connection closed.
    outcomes = []
    burst = [threading.Thread(target=in_flight, args=(server, who, images, outcomes), daemon=True) for who in range(CLIENTS)]
    for thread in burst:
        thread.start()
    t.check(wait_until(lambda: busy(server), 60, 0.002), "no request was seen in flight before the signal")
    code = server.stop(signal.SIGTERM, timeout=120)
    for thread in burst:
        thread.join(120)
    t.check(len(outcomes) == CLIENTS, f"every in-flight request ended ({len(outcomes)} of {CLIENTS})")
    report = "".join(server.lines)
    t.check(code == 0, f"the server exited {code} (66: a ThreadSanitizer report), not 0")
    t.check("ThreadSanitizer" not in report, "a ThreadSanitizer report:\n" + report[-6000:])
    print(f"{CLIENTS * ROUNDS * 4} requests and {CLIENTS} in flight at SIGTERM ({outcomes}) "
          f"in {time.time() - started:.1f} s", flush=True)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
