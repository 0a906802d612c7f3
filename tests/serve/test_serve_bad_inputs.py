"""Every bad input of issue 23 against `uform serve`, each answered with its documented status and
an OpenAI-style error object, and /health still answering 200 after each: malformed JSON, wrong
types, token arrays, invalid UTF-8, NUL, deep nesting, huge numbers, URLs and bad data: URIs,
an undecodable picture (422 naming the input), bodies over --max-body (413, declared and chunked),
a full queue (429 with Retry-After), --timeout (504), too many inputs (413), unknown routes and
methods, foreign Host headers (DNS rebinding), 10,000 headers, slow clients (slowloris) and path
traversal in /media/.

Usage: test_serve_bad_inputs.py UFORM CHECKPOINT FIXTURES WORK"""

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, pictures, raw_exchange, status_of, wait_until  # noqa: E402

MAX_BODY = 256 * 1024


def error_shape(answer):
    return (isinstance(answer, dict) and set(answer) == {"error"} and
            set(answer["error"]) == {"message", "type", "param", "code"} and answer["error"]["message"])


def healthy(t, server, after):
    status, _, body = server.get("/health")
    t.check(status == 200 and b'"ok"' in body, f"/health after {after}: {status}")


def expect(t, server, what, body, status, code=None, contains=None, path="/v1/embeddings"):
    got, answer, headers = server.post(path, body)
    ok = got == status and error_shape(answer) and (code is None or answer["error"]["code"] == code)
    ok = ok and (contains is None or contains in answer["error"]["message"])
    t.check(ok, f"{what}: {got} {answer}, expected {status} {code}")
    healthy(t, server, what)
    return answer


def json_cases(t, server):
    expect(t, server, "malformed JSON", b'{"input": ', 400, "invalid_json")
    expect(t, server, "an empty body", b"", 400, "invalid_json")
    expect(t, server, "not an object", b"[1, 2]", 400, "invalid_json")
    expect(t, server, "trailing bytes", b'{"input": "a"} x', 400, "invalid_json")
    expect(t, server, "a single quote", b"{'input': 'a'}", 400, "invalid_json")
    expect(t, server, "no input", {"model": "tiny"}, 400, "missing_input")
    expect(t, server, "a number as input", {"input": 5}, 400, "invalid_type")
    expect(t, server, "a token array", {"input": [1, 2, 3]}, 400, "unsupported_input")
    expect(t, server, "token arrays", {"input": [[1, 2], [3]]}, 400, "unsupported_input")
    expect(t, server, "an empty array", {"input": []}, 400, "invalid_input")
    expect(t, server, "null in the array", {"input": ["a", None]}, 400, "invalid_type", "input[1]")
    expect(t, server, "an unknown key", {"input": [{"picture": "x"}]}, 400, "invalid_input", "input[0]")
    expect(t, server, "two keys", {"input": [{"text": "a", "image": "b"}]}, 400, "invalid_input")
    expect(t, server, "an image as a number", {"input": [{"image": 5}]}, 400, "invalid_type")
    expect(t, server, "a model as a number", {"input": "a", "model": 5}, 400, "invalid_type")
    expect(t, server, "encoding_format hex", {"input": "a", "encoding_format": "hex"}, 400, "invalid_value")
    expect(t, server, "dimensions as a string", {"input": "a", "dimensions": "16"}, 400, "invalid_value")
    expect(t, server, "dimensions 0", {"input": "a", "dimensions": 0}, 400, "invalid_value")
    expect(t, server, "dimensions 16.5", {"input": "a", "dimensions": 16.5}, 400, "invalid_value")
    expect(t, server, "dimensions -16", {"input": "a", "dimensions": -16}, 400, "invalid_value")
    expect(t, server, "a huge number", b'{"input": "a", "dimensions": 1e400}', 400, "invalid_value")
    expect(t, server, "a long number", b'{"input": "a", "dimensions": 123456789012345678901234567890123}', 400, "invalid_value")
    expect(t, server, "a number of 10,000 digits", b'{"input": "a", "dimensions": ' + b"9" * 10000 + b"}", 400, "invalid_value")
    expect(t, server, "top_k 1e20", {"query": "a", "top_k": 1e20}, 400, "invalid_value", path="/v1/search")
    expect(t, server, "invalid UTF-8", b'{"input": "caf\xe9"}', 400, "invalid_utf8")
    expect(t, server, "an overlong encoding", b'{"input": "\xc0\xaf"}', 400, "invalid_utf8")
    expect(t, server, "a lone surrogate", b'{"input": "\\ud800"}', 400)
    expect(t, server, "a NUL escape", b'{"input": "a\\u0000b"}', 400, "invalid_json")
    expect(t, server, "a raw NUL", b'{"input": "a\x00b"}', 400, "invalid_json")
    expect(t, server, "100,000 open brackets", b"[" * 100000, 400, "invalid_json")
    expect(t, server, "2,000 nested objects", b'{"a": ' * 2000 + b"1" + b"}" * 2000, 400, "invalid_json")
    deep = {"input": "a"}
    for _ in range(500):
        deep = {"x": deep}
    expect(t, server, "500 nested objects around the request", deep, 400, "missing_input")
    expect(t, server, "a URL", {"input": [{"image": "https://example.com/cat.png"}]}, 400, "unsupported_url",
           "fetches nothing")
    expect(t, server, "not a data: URI", {"input": [{"image": "iVBORw0KGgo="}]}, 400, "invalid_input")
    expect(t, server, "bad base64", {"input": [{"image": "data:image/png;base64,@@@@"}]}, 400, "invalid_base64")
    expect(t, server, "an empty data: URI", {"input": [{"audio": "data:audio/wav;base64,"}]}, 400, "invalid_input")
    expect(t, server, "choices twice", {"text": "a", "choices": "aa"}, 400, "invalid_value", path="/v1/choose")


def undecodable(t, server, work):
    import base64
    garbage = base64.b64encode(bytes((i * 37 + 11) % 256 for i in range(900))).decode()
    picture = pictures(os.path.join(work, "ok"), 1, seed=3)[0]
    with open(picture, "rb") as file:
        good = base64.b64encode(file.read()).decode()
    body = {"input": ["a text", {"image": "data:image/png;base64," + good}, {"image": "data:image/png;base64," + garbage}]}
    expect(t, server, "an undecodable picture", body, 422, "undecodable_input", "input[2]")
    truncated = {"input": [{"image": "data:image/png;base64," + good[:200]}]}
    expect(t, server, "a truncated picture", truncated, 422, "undecodable_input", "input[0]")
    expect(t, server, "a recording that is not one", {"input": [{"audio": "data:audio/wav;base64," + garbage}]}, 422,
           "undecodable_input", "input[0]")


def routes(t, server):
    status, headers, body = server.get("/v1/nothing")
    t.check(status == 404 and error_shape(json.loads(body)), f"an unknown route: {status}")
    status, headers, body = server.get("/v1/embeddings")
    t.check(status == 405 and headers.get("allow") == "POST" and error_shape(json.loads(body)), f"GET /v1/embeddings: {status}")
    status, headers, body = server.request("DELETE", "/health")
    t.check(status == 405 and headers.get("allow") == "GET, HEAD", f"DELETE /health: {status}")
    status, _, _ = server.request("HEAD", "/health")
    t.check(status == 200, f"HEAD /health: {status}")
    healthy(t, server, "methods and routes")


def hosts(t, server):
    """A loopback server answers requests addressed to this machine only (DNS rebinding)."""
    for host, expected in (("127.0.0.1:%d" % server.port, 200), ("localhost", 200), ("[::1]:%d" % server.port, 200),
                           ("LOCALHOST:1", 200), ("attacker.example", 403), ("attacker.example:%d" % server.port, 403),
                           ("127.0.0.1.attacker.example", 403)):
        status, _, body = server.request("GET", "/v1/models", headers={"Host": host})
        t.check(status == expected and (expected == 200 or b"forbidden_host" in body), f"Host: {host}: {status}")
    response = raw_exchange(server.port, b"GET /health HTTP/1.0\r\n\r\n", 5)
    t.check(status_of(response) == 200, f"HTTP/1.0 without Host: {response[:40]}")
    healthy(t, server, "foreign Host headers")


def media_traversal(t, server):
    with open("/etc/passwd", "rb") as file:
        secret = file.read()[:16]
    for path in ("/media/../../../../etc/passwd", "/media/%2e%2e/%2e%2e/etc/passwd", "/media/..%2f..%2fetc%2fpasswd",
                 "/media/-1", "/media/1e3", "/media/0x1", "/media/+1", "/media/01", "/media/ 1", "/media/1/",
                 "/media/99999999999999999999", "/media/9223372036854775807", "/media/0/../../etc/passwd",
                 "/media//etc/passwd", "/media/%00", "/etc/passwd", "/media/"):
        response = raw_exchange(server.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(), 10)
        status = status_of(response)
        t.check(status in (400, 404) and secret not in response, f"GET {path}: {status}")
    status, _, body = server.get("/media/1000000")
    t.check(status == 404 and b"rows are 0 to" in body, f"a row past the index: {status}")
    healthy(t, server, "path traversal")


def bodies(t, server):
    # Declared too large (with Expect: 100-continue, as curl sends for large bodies): refused unread.
    response = raw_exchange(server.port, b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 100000000\r\nExpect: 100-continue\r\n\r\n", 10)
    t.check(status_of(response) == 413 and b"request_too_large" in response, f"a declared 100 MB body: {response[:80]}")
    healthy(t, server, "a declared body over --max-body")
    # Declared too large without Expect, the first bytes sent: refused too.
    response = raw_exchange(server.port, b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"
                            + b"x" * 1000, 10)
    t.check(status_of(response) == 413, f"a declared body with its first bytes: {response[:80]}")
    # Chunked past the limit: answered 413 once it ends.
    chunk = b"x" * 65536
    payload = (b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               + (b"10000\r\n" + chunk + b"\r\n") * 6 + b"0\r\n\r\n")
    response = raw_exchange(server.port, payload, 20)
    t.check(status_of(response) == 413, f"a chunked body over --max-body: {response[:80]}")
    healthy(t, server, "a chunked body over --max-body")
    # Just under the limit is read (and refused for what it holds, not for its size).
    body = b'{"input": "' + b"a" * (MAX_BODY - 20) + b'"}'
    got, answer, _ = server.post("/v1/embeddings", body)
    t.check(got == 200, f"a body just under --max-body: {got}")


def headers(t, server):
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-Header-%d: value\r\n" % i for i in range(10000)) + b"\r\n"
    response = raw_exchange(server.port, request, 10)
    t.check(status_of(response) == 431, f"10,000 headers: {response[:60]}")
    healthy(t, server, "10,000 headers")
    request = b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    response = raw_exchange(server.port, request, 10)
    t.check(status_of(response) in (414, 431), f"a 100 kB request line: {response[:60]}")
    healthy(t, server, "a 100 kB request line")
    for garbage in (b"\x00\x01\x02\r\n\r\n", b"GET\r\n\r\n", b"HELLO / HTTP/9.9\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n"):
        raw_exchange(server.port, garbage, 3)
    healthy(t, server, "garbage request lines")


def slow_clients(t, server):
    """Slowloris: 200 connections trickle headers; meanwhile the server answers others, and closes
    a connection that stops sending once --timeout (2 s here) passes."""
    sockets = []
    for _ in range(200):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sockets.append(sock)
    answered = 0
    for round_ in range(6):
        for sock in sockets:
            try:
                sock.sendall(b"X-Slow-%d: 1\r\n" % round_)
            except OSError:
                pass
        status, answer, _ = server.post("/v1/embeddings", {"input": f"meanwhile {round_}"})
        answered += status == 200
        time.sleep(0.25)
    t.check(answered == 6, f"answers while 200 clients trickle headers: {answered} of 6")
    healthy(t, server, "slow clients")
    # An idle half-sent request is closed after the timeout.
    idle = sockets[0]
    idle.settimeout(15)
    started = time.time()
    try:
        closed = idle.recv(1024) == b""
    except (ConnectionResetError, socket.timeout):
        closed = time.time() - started < 15
    t.check(closed, "an idle half-sent request is closed by the server")
    for sock in sockets:
        sock.close()
    # The same with a body that never comes: the server must close the connection (an answer of 408
    # or 400 before it is welcome) well before the 15 s we wait. Silence until our own timeout, which
    # a server that never closes gives too, fails.
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
        sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        started, response, closed = time.time(), b"", False
        while time.time() - started < 15:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            response += chunk
        waited = time.time() - started
    t.check(closed and waited < 15 and (response == b"" or status_of(response) in (408, 400)),
            f"a body that never comes: closed {closed} after {waited:.1f} s, answered {response[:40]}")
    healthy(t, server, "a body that never comes")


def queue_and_timeout(t, uform, checkpoint):
    """A queue of 4 items whose batches (64) wait 60 s: 3 queued texts fill it enough that 2 more
    answer 429; the 3 answer 504 after --timeout (2 s)."""
    server = Server(uform, checkpoint, "--max-queue", "4", "--max-batch", "64", "--max-wait-us", "60000000", "--timeout", "2")
    try:
        first = {}
        thread = threading.Thread(target=lambda: first.update(zip(("status", "answer", "headers"),
                                                                   server.post("/v1/embeddings", {"input": ["a", "b", "c"]}))))
        thread.start()
        t.check(wait_until(lambda: server.metric('uform_queue_depth{queue="text"}') == 3, 20), "three texts queued")
        status, answer, headers = server.post("/v1/embeddings", {"input": ["d", "e"]})
        t.check(status == 429 and error_shape(answer) and answer["error"]["code"] == "queue_full" and
                headers.get("retry-after") == "1", f"a full queue: {status} {answer} {headers.get('retry-after')}")
        status, answer, _ = server.post("/v1/embeddings", {"input": ["a", "b", "c", "d", "e"]})
        t.check(status == 413 and answer["error"]["code"] == "too_many_inputs", f"more inputs than the queue: {status}")
        healthy(t, server, "a full queue")
        thread.join(30)
        t.check(first.get("status") == 504 and first["answer"]["error"]["code"] == "timeout", f"--timeout: {first}")
        healthy(t, server, "a timeout")
        status, answer, _ = server.post("/v1/search", {"query": "a"})
        t.check(status == 404 and answer["error"]["code"] == "index_not_found" and "--index" in answer["error"]["message"],
                f"search without an index: {status}")
    finally:
        t.check(server.stop() == 0, "exit status 0")


def main(argv):
    uform, checkpoint, fixtures, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    corpus = os.path.join(work, "corpus")
    pictures(corpus, 3, seed=2)
    index = os.path.join(work, "corpus.index")
    subprocess.run([uform, "index", checkpoint, corpus, "--out", index, "--quiet"], check=True)
    server = Server(uform, checkpoint, "--index", index, "--max-body", str(MAX_BODY), "--timeout", "2")
    try:
        json_cases(t, server)
        undecodable(t, server, work)
        routes(t, server)
        hosts(t, server)
        media_traversal(t, server)
        bodies(t, server)
        headers(t, server)
        slow_clients(t, server)
    finally:
        code = server.stop()
        t.check(code == 0, f"exit status {code} after the bad inputs")
    queue_and_timeout(t, uform, checkpoint)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
