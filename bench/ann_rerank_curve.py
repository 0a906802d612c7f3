#!/usr/bin/python3
"""Recall@10 of the default IVF-PQ recipe against the number of candidates rescored exactly (the
measurement behind uform_index_ann_search's default rerank, docs/indexes.md "Rescoring by default").

FAISS alone (Debian's python3-faiss) builds the recipe uform's default rule picks for --rows
(IVF<n>,PQ<m>np, bench_ann.default_ivfpq), on a fixed-seed sample of --train-rows rows, and searches
the queries at each --nprobe for R candidates; each query's R candidates are rescored with NumPy
(float32 inner products of the stored rows) and the best 10 compared with NumPy's exact top 10. No
uform code runs: the curve is a property of the codes, which uform's build shares with FAISS's
(bench/README.md: uform's build and FAISS's answered recall 0.418 and 0.428 at 10 M x 64).

    ann_rerank_curve.py [--rows 1000000] [--dims 64] [--queries 1000] [--train-rows 1048576]
                        [--nprobe-divisors 32,128] [--reranks 10,100,200,400,1000,2000]
                        [--cache build-h/ann_cache]

The vectors are bench_ann.py's clustered mixture through ann_vs_exact.py's cache (the same files).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ann_vs_exact import cached_data, data_arguments  # noqa: E402
from bench_ann import TOP, default_ivfpq, recall  # noqa: E402


def rescored_top(vectors, queries, candidates):
    """The best TOP of each query's candidates by exact float32 inner product, ties by id."""
    found = np.zeros((len(queries), TOP), dtype=np.int64)
    for j, row in enumerate(candidates):
        ids = np.sort(row[row >= 0])
        scores = np.asarray(vectors[ids]) @ queries[j]
        found[j] = ids[np.argsort(-scores, kind="stable")[:TOP]]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(parser)
    parser.add_argument("--train-rows", type=int, default=1048576)
    parser.add_argument("--nprobe-divisors", default="32,128", help="nprobe = lists / each (uform's default: 32)")
    parser.add_argument("--reranks", default="10,100,200,400,1000,2000")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    import faiss

    os.makedirs(args.cache, exist_ok=True)
    paths, truth = cached_data(args.cache, args.rows, args.dims, args.queries, args.spread)
    vectors = np.memmap(paths["vectors"], dtype=np.float32, mode="r").reshape(args.rows, args.dims)
    queries = np.fromfile(paths["queries"], dtype=np.float32).reshape(-1, args.dims)
    recipe, lists = default_ivfpq(args.rows, args.dims)
    structure = faiss.index_factory(args.dims, recipe, faiss.METRIC_INNER_PRODUCT)
    sample = np.sort(np.random.default_rng(1).choice(args.rows, min(args.train_rows, args.rows), replace=False))
    start = time.perf_counter()
    structure.train(np.ascontiguousarray(vectors[sample]))
    for first in range(0, args.rows, 1000000):
        structure.add(np.ascontiguousarray(vectors[first:first + 1000000]))
    print(f"{recipe} on {args.rows} x {args.dims}, trained on {len(sample)} rows: built in "
          f"{time.perf_counter() - start:.0f} s")
    for divisor in (int(d) for d in args.nprobe_divisors.split(",")):
        structure.nprobe = max(1, lists // divisor)
        for rerank in (int(r) for r in args.reranks.split(",")):
            start = time.perf_counter()
            _, candidates = structure.search(queries, rerank)
            took = time.perf_counter() - start
            found = rescored_top(vectors, queries, candidates)
            print(f"  nprobe {structure.nprobe:5d} (lists/{divisor}) rerank {rerank:5d}: recall@10 "
                  f"{recall(found, truth[:, :TOP]):.4f}   FAISS's search of {len(queries)} queries {took:.2f} s")


if __name__ == "__main__":
    main()
