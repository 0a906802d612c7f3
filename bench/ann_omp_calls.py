#!/usr/bin/python3
"""FAISS alone (Debian's python3-faiss): the cost of calling HNSW32's search once for 1,000 queries
against calling it in chunks of 256 and 64, on 2 and 1 OpenMP threads, wall and process CPU
seconds, three rounds. Each call is an OpenMP region; run it with and without
OMP_WAIT_POLICY=PASSIVE to see what libgomp's spinning at the regions' ends costs (bench/README.md,
"Where the 2-thread overhead goes").

    /usr/bin/python3 bench/ann_omp_calls.py
"""
import time

import faiss
import numpy as np

rng = np.random.default_rng(0)
rows, dims = 50000, 64
centres = rng.standard_normal((500, dims)).astype("float32")
centres /= np.linalg.norm(centres, axis=1, keepdims=True)


def near(count):
    points = centres[rng.integers(0, 500, count)] + rng.standard_normal((count, dims)).astype("float32") / 8
    return points / np.linalg.norm(points, axis=1, keepdims=True)


vectors, queries = near(rows), near(1000)
faiss.omp_set_num_threads(2)
index = faiss.index_factory(dims, "HNSW32", faiss.METRIC_INNER_PRODUCT)
index.add(vectors)
index.hnsw.efSearch = 16
for threads in (2, 1):
    faiss.omp_set_num_threads(threads)
    for _ in range(3):
        costs = {}
        for chunk in (1000, 256, 64):
            wall, cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(queries), chunk):
                index.search(queries[start:start + chunk], 10)
            costs[chunk] = (round(time.perf_counter() - wall, 4), round(time.process_time() - cpu, 4))
        print(f"threads {threads}: queries per call -> (wall s, CPU s): {costs}", flush=True)
