"""NumPy peer of bench_search: `scores = index @ q; np.argpartition(-scores, k)` over the F32 rows.

    OPENBLAS_NUM_THREADS=T python3 bench/search_numpy.py INDEX REPEATS TOP

Maps the index file's embeddings.image tensor (safetensors header parsed here) with np.memmap,
copies it into RAM once (as a user's loaded matrix), and prints one JSON line with the best
seconds per call for 1 query and for a batch of 32 (one GEMM, then argpartition per column,
then the top K sorted), the way a user writes it.
"""

import json
import sys
import time

import numpy as np


def main(path, repeats, top):
    raw = open(path, "rb")
    length = int.from_bytes(raw.read(8), "little")
    header = json.loads(raw.read(length))
    entry = header["embeddings.image"]
    begin, end = entry["data_offsets"]
    rows, dims = entry["shape"]
    index = np.array(np.memmap(path, dtype=np.float32, mode="r", offset=8 + length + begin, shape=(rows, dims)))
    generator = np.random.default_rng(0)
    queries = generator.standard_normal((32, dims)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def one():
        scores = index @ queries[0]
        best = np.argpartition(-scores, top)[:top]
        return best[np.argsort(-scores[best])]

    def many():
        scores = index @ queries.T
        best = np.argpartition(-scores, top, axis=0)[:top]
        return [best[:, j][np.argsort(-scores[best[:, j], j])] for j in range(queries.shape[0])]

    results = {}
    for name, call in (("seconds_1", one), ("seconds_32", many)):
        call()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        results[name] = min(times)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
