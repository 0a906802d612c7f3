"""256 concurrent clients of `uform serve`, each sending requests that mix texts and pictures
(as strings, {"text"} and {"image": data:} objects, float and base64 answers): every answer is its
own inputs' (each row's cosine with its input's `uform encode` reference >= 0.9999, and no other
reference of the corpus is closer, so no row was swapped between requests or within one), with
zero errors, and /metrics shows the items went through shared batches.

Usage: test_serve_concurrency.py UFORM CHECKPOINT FIXTURES WORK [SEED]"""

import base64
import os
import random
import shutil
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, data_uri, encode, pictures  # noqa: E402

CLIENTS = 256
REQUESTS = 3


def main(argv):
    uform, checkpoint, fixtures, work = argv[1:5]
    seed = int(argv[5]) if len(argv) > 5 else random.randrange(1 << 30)
    print(f"seed {seed} (rerun with it as the 5th argument)", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    rng = random.Random(seed)
    colours = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white", "grey", "pink"]
    shapes = ["circle", "square", "star", "cross", "triangle", "heart"]
    texts = [f"a {rng.choice(colours)} {rng.choice(shapes)} number {i}" for i in range(96)]
    images = pictures(os.path.join(work, "pictures"), 48, seed=seed)
    text_refs = encode(uform, checkpoint, "text", texts, work, "texts")
    image_refs = encode(uform, checkpoint, "image", images, work, "images")
    uris = [data_uri(path) for path in images]
    server = Server(uform, checkpoint, "--max-batch", "32")
    results = {"requests": 0, "rows": 0, "errors": []}
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def client(number):
        local = random.Random(seed * 1000 + number)
        connection = server.connection(timeout=300)
        barrier.wait()
        for _ in range(REQUESTS):
            picks = []
            for _ in range(local.randint(1, 4)):
                if local.random() < 0.6:
                    i = local.randrange(len(texts))
                    picks.append(("text", i, texts[i] if local.random() < 0.5 else {"text": texts[i]}))
                else:
                    i = local.randrange(len(images))
                    picks.append(("image", i, {"image": uris[i]}))
            fmt = local.choice(["float", "base64"])
            try:
                status, answer, _ = server.post("/v1/embeddings", {"input": [p[2] for p in picks], "encoding_format": fmt},
                                                connection=connection)
            except Exception as error:  # noqa: BLE001 - any failure is a finding
                with lock:
                    results["errors"].append(f"client {number}: {error!r}")
                connection = server.connection(timeout=300)
                continue
            problems = []
            if status != 200 or len(answer.get("data", [])) != len(picks):
                problems.append(f"status {status}: {str(answer)[:200]}")
            else:
                for row, (kind, i, _) in zip(answer["data"], picks):
                    vector = (np.frombuffer(base64.b64decode(row["embedding"]), dtype="<f4") if fmt == "base64"
                              else np.asarray(row["embedding"], dtype=np.float32))
                    references = text_refs if kind == "text" else image_refs
                    scores = references @ vector
                    if scores[i] < 0.9999 or int(np.argmax(scores)) != i and scores.max() > scores[i] + 1e-6:
                        problems.append(f"{kind} {i}: cosine {scores[i]:.6f}, closest {int(np.argmax(scores))}")
            with lock:
                results["requests"] += 1
                results["rows"] += len(picks)
                results["errors"].extend(f"client {number}: {p}" for p in problems)
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    t.check(results["requests"] == CLIENTS * REQUESTS, f"{results['requests']} requests answered of {CLIENTS * REQUESTS}")
    t.check(not results["errors"], f"{len(results['errors'])} errors, the first: {results['errors'][:3]}")
    batched = server.metric('uform_batch_size_sum{queue="text"}') + server.metric('uform_batch_size_sum{queue="image"}')
    batches = server.metric('uform_batch_size_count{queue="text"}') + server.metric('uform_batch_size_count{queue="image"}')
    t.check(batched == results["rows"], f"{batched} items batched, {results['rows']} rows answered")
    t.check(batches < batched / 2, f"{batches} batches for {batched} items: shared batches")
    print(f"{results['requests']} requests, {results['rows']} rows in {batches:.0f} batches", flush=True)
    t.check(server.stop() == 0, "exit status 0")
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
