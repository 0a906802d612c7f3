"""Exact searches that share batches: 64 concurrent clients of `uform serve --index` each send 3
/v1/search requests with their own top_k (1, 3 or 10) and modality filter (none, "text" or
"image"), so batches mix queries that one uform_index_search serves (one filter, the largest K)
with queries searched one by one (mixed filters). The index holds the 96 texts' `uform encode`
embeddings cut to a Matryoshka prefix of 32 columns and normalised (`uform index --vectors
--normalize`, modality text). Every answer must equal NumPy's search of the same rows: the query is
the text's reference prefix renormalised in double, scores are dot products with the normalised
rows, the best top_k first, ties by item; the hit items equal, the scores within 1e-5, and the
text itself first. A filter of "image" answers no hits. Zero errors; /metrics shows shared batches.

Usage: test_serve_search_batch.py UFORM CHECKPOINT WORK [SEED]"""

import os
import random
import shutil
import subprocess
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, encode  # noqa: E402

CLIENTS = 64
REQUESTS = 3
DIMS = 32


def main(argv):
    uform, checkpoint, work = argv[1:4]
    seed = int(argv[4]) if len(argv) > 4 else 20261206
    print(f"seed {seed} (another as the 4th argument)", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    rng = random.Random(seed)
    colours = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white", "grey", "pink"]
    shapes = ["circle", "square", "star", "cross", "triangle", "heart"]
    texts = [f"a {rng.choice(colours)} {rng.choice(shapes)} number {i}" for i in range(96)]
    references = encode(uform, checkpoint, "text", texts, work, "texts").astype(np.float64)
    prefix = references[:, :DIMS].astype(np.float32)
    np.save(os.path.join(work, "prefix.npy"), prefix)
    index = os.path.join(work, "texts.index")
    subprocess.run([uform, "index", "--vectors", os.path.join(work, "prefix.npy"), "--normalize", "--modality", "text",
                    "--model", checkpoint, "--out", index, "--quiet"], check=True)
    wide = prefix.astype(np.float64)
    rows = (wide / np.sqrt((wide * wide).sum(axis=1, keepdims=True))).astype(np.float32).astype(np.float64)

    def expected(i, top):
        query = references[i, :DIMS] / np.linalg.norm(references[i, :DIMS])
        scores = rows @ query
        order = sorted(range(len(texts)), key=lambda item: (-scores[item], item))[:top]
        return order, scores

    # --max-wait-us: a batch waits 20 ms for more items after its first, so queries share batches
    # whatever the host's timing (with the default 0 this machine saw 21 to 139 batches for the 192).
    server = Server(uform, checkpoint, "--index", index, "--max-batch", "32", "--max-wait-us", "20000")
    results = {"requests": 0, "hits": 0, "errors": []}
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def client(number):
        local = random.Random(seed * 1000 + number)
        connection = server.connection(timeout=300)
        barrier.wait()
        for _ in range(REQUESTS):
            i = local.randrange(len(texts))
            top = local.choice([1, 3, 10])
            body = {"query": texts[i], "top_k": top}
            modality = local.choice([None, "text", "image"])
            if modality:
                body["modality"] = modality
            problems = []
            try:
                status, answer, _ = server.post("/v1/search", body, connection=connection)
            except Exception as error:  # noqa: BLE001 - any failure is a finding
                problems.append(f"{error!r}")
                connection = server.connection(timeout=300)
                status, answer = None, None
            if status is not None and status != 200:
                problems.append(f"status {status}: {str(answer)[:200]}")
            elif status == 200:
                hits = answer.get("data", [])
                order, scores = expected(i, top) if modality != "image" else ([], None)
                if [hit["item"] for hit in hits] != order:
                    problems.append(f"text {i} top {top} {modality}: items {[h['item'] for h in hits]}, NumPy {order}")
                elif order and (order[0] != i or max(abs(hit["score"] - scores[hit["item"]]) for hit in hits) > 1e-5):
                    problems.append(f"text {i} top {top} {modality}: first {order[0]}, scores {[h['score'] for h in hits]}")
                with lock:
                    results["hits"] += len(hits)
            with lock:
                results["requests"] += 1
                results["errors"].extend(f"client {number}: {p}" for p in problems)
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    t.check(results["requests"] == CLIENTS * REQUESTS, f"{results['requests']} requests answered of {CLIENTS * REQUESTS}")
    t.check(results["hits"] > CLIENTS, f"{results['hits']} hits in all: the searches found something")
    t.check(not results["errors"], f"{len(results['errors'])} errors, the first: {results['errors'][:3]}")
    batched = server.metric('uform_batch_size_sum{queue="text"}')
    batches = server.metric('uform_batch_size_count{queue="text"}')
    t.check(batched == CLIENTS * REQUESTS, f"{batched} queries batched of {CLIENTS * REQUESTS}")
    print(f"{batches} batches for {batched} queries", flush=True)
    t.check(batches < batched / 2, f"{batches} batches for {batched} queries: shared batches")
    print(f"{results['requests']} searches, {results['hits']} hits, in {batches:.0f} batches", flush=True)
    t.check(server.stop() == 0, "exit status 0")
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
