"""Exact-search latency and throughput of `uform serve --index` over loopback: 100 sequential
/v1/search requests (p50, mean) and 8 concurrent clients of 40 requests each (searches a second).
Bounded: 425 requests, then the server is stopped. Used for issue 36 item 4 (docs/serve.md):
    /usr/bin/python3 -c "import numpy as np; np.save('big.npy', np.random.default_rng(36).standard_normal((500000, 64)).astype(np.float32))"
    build/tools/uform index --vectors big.npy --normalize --model build/tests/model/tiny.safetensors --out big.index --quiet
    /usr/bin/python3 bench/serve_search.py build/tools/uform build/tests/model/tiny.safetensors big.index LABEL
Usage: serve_search.py UFORM CHECKPOINT INDEX LABEL"""
import http.client, json, re, subprocess, sys, threading, time

uform, checkpoint, index, label = sys.argv[1:5]
server = subprocess.Popen([uform, "serve", checkpoint, "--index", index, "--port", "0", "--threads", "2", "--http-threads", "4"],
                          stderr=subprocess.PIPE, text=True)
port = None
while True:
    line = server.stderr.readline()
    if not line:
        sys.exit("no server: " + line)
    m = re.search(r"listening on http://\S+?:(\d+)/", line)
    if m:
        port = int(m.group(1))
    if "ready in" in line:
        break
threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()


def search(connection, i):
    connection.request("POST", "/v1/search", json.dumps({"query": f"a red star number {i}", "top_k": 10}),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200, body[:200]


c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(5):
    search(c, i)
times = []
for i in range(100):
    started = time.perf_counter()
    search(c, i)
    times.append(time.perf_counter() - started)
times.sort()
print(f"{label}: sequential: p50 {times[50] * 1e3:.2f} ms, mean {sum(times) / len(times) * 1e3:.2f} ms (100 requests)")

done = [0]
def client(k):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(40):
        search(conn, k * 1000 + i)
    done[0] += 40
started = time.perf_counter()
threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
elapsed = time.perf_counter() - started
print(f"{label}: 8 clients: {done[0] / elapsed:.1f} searches/s ({done[0]} in {elapsed:.2f} s)")
server.terminate()
server.wait()
