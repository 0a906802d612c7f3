#!/usr/bin/python3
"""Speed-up of approximate over exact search at a recall, measured in one process (issue 35's bench).

bench_ann.py times exact search once per data set, before the recipes, so on a shared machine its
speed-up rides on whatever load exact search met minutes earlier (at 1 M x 64 the same ratio read
7.0x in one run and 10.7x in another). Here one worker (peer_ann_worker, bench/bench_ann.c) answers
both searches, alternating within each round (exact first on even rounds, approximate first on odd
ones), so each round's ratio compares two searches a few seconds apart; the table gives the median
ratio of the rounds, their range, the median rates and the load average of every round.

For each recipe: a sweep of nprobe (ef for HNSW recipes; one search per value, at the first --threads count) finds the
first value whose recall@10 (against NumPy's exact top 10) reaches each --targets recall, with and
without --rerank; those points are then timed against exact search for every --threads count.

    ann_vs_exact.py --worker build-h/bench/peer_ann_worker [--rows 1000000] [--dims 64]
                    [--recipe IVF4096,Flat --recipe IVF1024,Flat ...] [--nprobe 1,2,4,8,16,32,64]
                    [--rerank 0,100] [--targets 0.95,0.99] [--threads 2,1] [--rounds 5]
                    [--queries 1000] [--cache build-h/ann_cache] [--json bench/results/ann_vs_exact.json]

The vectors are bench_ann.py's clustered mixture (same generator and seeds), so the results belong
with its data set. --cache keeps the vectors, the ground truth and each recipe's .faiss between runs
(not in git): a structure built once is attached again instead of rebuilt.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ann import Worker, clustered, cpu_model, exact_top, recall  # noqa: E402


def cached_data(cache, rows, dims, queries_count, spread):
    """Vectors, queries and the exact top 10, generated once per shape and kept under `cache`."""
    stem = os.path.join(cache, f"data_{rows}x{dims}_q{queries_count}_s{spread}")
    paths = {"vectors": stem + ".v.f32", "queries": stem + ".q.f32", "truth": stem + ".truth.npy"}
    if not all(os.path.exists(p) for p in paths.values()):
        vectors = clustered(rows, dims, 1000, 1, spread)
        queries = clustered(queries_count, dims, 1000, 2, spread)
        start = time.perf_counter()
        truth = exact_top(vectors, queries)
        print(f"ground truth by NumPy in {time.perf_counter() - start:.1f} s")
        vectors.tofile(paths["vectors"] + ".part"), os.replace(paths["vectors"] + ".part", paths["vectors"])
        queries.tofile(paths["queries"])
        np.save(paths["truth"], truth)
    return paths, np.load(paths["truth"])


def data_arguments(parser):
    """The data set's flags, shared by the scripts that read cached_data: shape, noise, cache."""
    parser.add_argument("--rows", type=int, default=1000000)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=1.0, help="noise norm around a centre (centres are unit)")
    parser.add_argument("--cache", default="build-h/ann_cache", help="vectors, queries and ground truth, kept")


def slug(recipe):
    return "".join(c if c.isalnum() else "_" for c in recipe)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", required=True)
    data_arguments(parser)
    parser.add_argument("--recipe", action="append", help="a FAISS index_factory string (repeat the flag)")
    parser.add_argument("--nprobe", default="1,2,4,8,16,32,64")
    parser.add_argument("--ef", default="16,32,64,128,256,512", help="the sweep for HNSW recipes (their knob)")
    parser.add_argument("--rerank", default="0,100")
    parser.add_argument("--targets", default="0.95,0.99")
    parser.add_argument("--threads", default="2,1")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--train-rows", type=int, default=0, help="0: 64 per IVF list, at most rows")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default="bench/results/ann_vs_exact.json")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    recipes = args.recipe or ["IVF4096,Flat"]
    threads_list = [int(t) for t in args.threads.split(",")]
    targets = [float(t) for t in args.targets.split(",")]
    os.makedirs(args.cache, exist_ok=True)
    paths, truth = cached_data(args.cache, args.rows, args.dims, args.queries, args.spread)
    report = {"command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "cpu": cpu_model(), "cores": os.cpu_count(),
              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"), "rows": args.rows, "dims": args.dims,
              "queries": args.queries, "spread": args.spread, "rounds": args.rounds, "recipes": []}
    work = os.path.join(args.cache, f"work_{args.rows}x{args.dims}")
    os.makedirs(work, exist_ok=True)
    worker = Worker(args.worker, paths["vectors"], paths["queries"], args.rows, args.dims, args.queries, work)
    worker.ask("index")
    print(f"{report['cpu']}, {report['cores']} cores; {args.rows} x {args.dims}, {args.queries} queries, "
          f"load {os.getloadavg()[0]:.1f}")
    faiss_path = os.path.join(work, "bench_ann.faiss")
    for recipe in recipes:
        kept = os.path.join(args.cache, f"{slug(recipe)}_{args.rows}x{args.dims}_s{args.spread}.faiss")
        kept_json = kept + ".json"
        if os.path.exists(kept) and os.path.exists(kept_json):
            if os.path.exists(faiss_path):
                os.remove(faiss_path)
            os.link(kept, faiss_path)
            worker.ask("attach")
            with open(kept_json) as saved:
                build = json.load(saved)
            print(f"\n{recipe}: attached the cached structure (built in {build['seconds']:.1f} s)")
        else:
            lists = int(recipe.split("IVF")[1].split(",")[0].split("_")[0]) if "IVF" in recipe else 0
            train = min(args.rows, args.train_rows or 64 * lists) if lists else 0
            load_before = os.getloadavg()[0]
            build = worker.ask(f"build {recipe} {args.build_threads} {train}")
            build.update({"threads": args.build_threads, "load_before": load_before, "load_after": os.getloadavg()[0]})
            if os.path.exists(kept):
                os.remove(kept)
            os.link(faiss_path, kept)  # the worker's next build renames a new file over the name
            with open(kept_json, "w") as saved:
                json.dump(build, saved)
            print(f"\n{recipe}: built in {build['seconds']:.1f} s ({build['cpu_seconds']:.1f} CPU s, "
                  f"{args.build_threads} threads, {build['train_rows']} training rows, load "
                  f"{build['load_before']:.1f} -> {build['load_after']:.1f})")
        entry = {"recipe": recipe, "build": build, "bytes_per_vector": build["bytes"] / args.rows,
                 "sweep": [], "points": []}
        report["recipes"].append(entry)
        print(f"  {build['bytes'] / args.rows:.1f} bytes per vector")
        # The sweep: recall only (one search each), to find the first knob value reaching each target.
        chosen = []
        graph = recipe.startswith("HNSW")  # a graph's knob is ef; everything else here is an IVF's nprobe
        knob, values = ("ef", args.ef) if graph else ("nprobe", args.nprobe)
        entry["knob"] = knob
        for rerank in [int(r) for r in args.rerank.split(",")]:
            if rerank and (recipe.endswith(",Flat") or graph):
                continue  # full F32 vectors already score exactly: rescoring cannot raise recall
            reached = {}
            for setting in [int(v) for v in values.split(",")]:
                worker.ask(f"search {knob} {setting} {threads_list[0]} {rerank}")
                value = recall(worker.ids(), truth)
                entry["sweep"].append({knob: setting, "rerank": rerank, "recall": value})
                print(f"  sweep: {knob} {setting:4} rerank {rerank:4}: recall@10 {value:.4f}")
                for target in targets:
                    if value >= target and target not in reached:
                        reached[target] = (setting, value)
                if len(reached) == len(targets):
                    break
            for target, (setting, value) in sorted(reached.items()):
                if (setting, rerank) not in [(c[0], c[1]) for c in chosen]:
                    chosen.append((setting, rerank, value, target))
        # The timed points: exact and approximate alternating in every round.
        for setting, rerank, value, target in chosen:
            for threads in threads_list:
                exact_s, ann_s, ratios, loads = [], [], [], []
                for round_ in range(args.rounds):
                    order = ["exact", "ann"] if round_ % 2 == 0 else ["ann", "exact"]
                    seconds = {}
                    for side in order:
                        line = f"exact {threads}" if side == "exact" else f"search {knob} {setting} {threads} {rerank}"
                        seconds[side] = worker.ask(line)["seconds"]
                    exact_s.append(seconds["exact"]), ann_s.append(seconds["ann"])
                    ratios.append(seconds["exact"] / seconds["ann"])
                    loads.append(os.getloadavg()[0])
                point = {knob: setting, "rerank": rerank, "recall": value, "target": target, "threads": threads,
                         "exact_seconds": exact_s, "ann_seconds": ann_s, "ratios": ratios, "loads": loads,
                         "median_ratio": statistics.median(ratios),
                         "qps_exact_median": args.queries / statistics.median(exact_s),
                         "qps_ann_median": args.queries / statistics.median(ann_s)}
                entry["points"].append(point)
                print(f"  {knob} {setting:4} rerank {rerank:4} recall {value:.4f} threads {threads}: "
                      f"exact {point['qps_exact_median']:7.0f} q/s, approximate {point['qps_ann_median']:7.0f} q/s, "
                      f"speed-up median {point['median_ratio']:5.1f}x (rounds {min(ratios):.1f}-{max(ratios):.1f}), "
                      f"load {min(loads):.1f}-{max(loads):.1f}")
        save(args.json, report)
    worker.close()
    save(args.json, report)
    print(f"wrote {args.json}")


def save(path, report):
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as out:
        json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
