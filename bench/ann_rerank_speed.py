#!/usr/bin/python3
"""Recall@10 and time of uform's approximate search against the candidates rescored, beside exact
search of the same batch (the measurement behind the default rerank's cap at a quarter of the
codes scanned, docs/indexes.md "Rescoring by default").

Builds (once, under --work) an index of bench_ann's clustered mixture through the Python binding
and the default rule's IVF-PQ recipe for --rows, then searches every query in one call per point,
best of --rounds, on an executor of --threads threads. "default" in --reranks leaves rerank at the
library's default; 0 is FAISS's own scores.

    UFORM_LIBRARY=build/libuform.so.4.0.0 PYTHONPATH=python OMP_WAIT_POLICY=PASSIVE \\
    /usr/bin/python3 bench/ann_rerank_speed.py [--rows 1000000] [--dims 64] [--nprobe 4,8,16,128]
        [--reranks 0,50,100,200,400,1000,default] [--threads 2] [--rounds 3]
        [--cache build-h/ann_cache] [--work build-h/ann_rerank_speed]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ann_vs_exact import cached_data, data_arguments  # noqa: E402
from bench_ann import TOP, default_ivfpq, recall  # noqa: E402


def best_time(rounds, search):
    best, hits = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        hits = search()
        best = min(best, time.perf_counter() - start)
    return best, hits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(parser)
    parser.add_argument("--nprobe", default="4,8,16,128")
    parser.add_argument("--reranks", default="0,50,100,200,400,1000,default")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="build-h/ann_rerank_speed")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    import uform

    os.makedirs(args.cache, exist_ok=True), os.makedirs(args.work, exist_ok=True)
    paths, truth = cached_data(args.cache, args.rows, args.dims, args.queries, args.spread)
    queries = np.fromfile(paths["queries"], dtype=np.float32).reshape(-1, args.dims)
    recipe, _ = default_ivfpq(args.rows, args.dims)
    index_path = os.path.join(args.work, f"x_{args.rows}x{args.dims}.index")
    if not os.path.exists(index_path):
        vectors = np.fromfile(paths["vectors"], dtype=np.float32).reshape(args.rows, args.dims)
        uform.Index.build(vectors=vectors, out=index_path)
    index = uform.Index.open(index_path)
    if not os.path.exists(index_path[:-len(".index")] + ".faiss"):
        start = time.perf_counter()
        index.build_ann(recipe=recipe, threads=args.threads)
        print(f"built {recipe} in {time.perf_counter() - start:.0f} s")
    description = index.open_ann()
    executor = uform.Executor.for_ram(threads=args.threads)
    exact_seconds, _ = best_time(args.rounds, lambda: index.search(queries, TOP, exact=True, executor=executor))
    print(f"{description.recipe} over {args.rows} x {args.dims}, {len(queries)} queries in one call, "
          f"{args.threads} threads; exact search {exact_seconds:.3f} s")
    for nprobe in (int(n) for n in args.nprobe.split(",")):
        scanned = args.rows * nprobe / description.lists
        for word in args.reranks.split(","):
            rerank = None if word == "default" else int(word)
            seconds, hits = best_time(args.rounds, lambda: index.search(queries, TOP, nprobe=nprobe, rerank=rerank,
                                                                        executor=executor))
            print(f"  nprobe {nprobe:5d} ({scanned:9.0f} codes scanned) rerank {word:>7}: recall@10 "
                  f"{recall(np.asarray(hits.items, dtype=np.int64), truth[:, :TOP]):.4f} in {seconds:.3f} s, "
                  f"{exact_seconds / seconds:.1f}x exact search")


if __name__ == "__main__":
    main()
