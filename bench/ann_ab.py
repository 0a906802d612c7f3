#!/usr/bin/python3
"""Two builds of libuform searching the same approximate structure, alternating (issue 35's bench).

A change to uform's search path (src/index/ann_search.c) is measured here apart from everything a
full bench_ann run mixes in: one worker (peer_ann_worker, bench/bench_ann.c) builds the structure
with the library it was linked against ("after"); a second worker, started with LD_LIBRARY_PATH
pointing at a copy of an older build's libuform.so.4 and libuform-faiss.so.4 ("before"), opens a
copy of the same .index and .faiss ('attach'); Python's FAISS opens the same .faiss as a third side.
Every point is searched by the three in turn, the order rotating each round; the table gives the
best and the median round per side, and whether the two builds returned the same ids.

    ann_ab.py --worker build-h/bench/peer_ann_worker --before DIR [--rows 100000] [--dims 64]
              [--recipe HNSW32] [--knob ef] [--values 64,128] [--threads 2,1] [--rounds 15]
              [--queries 1000] [--rerank 0] [--json bench/results/ann_ab.json]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ann import Worker, clustered, faiss, TOP  # noqa: E402  (the same vectors and worker protocol)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", required=True)
    parser.add_argument("--before", required=True, help="folder with the older libuform.so.4 and libuform-faiss.so.4")
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--recipe", default="HNSW32")
    parser.add_argument("--train-rows", type=int, default=0)
    parser.add_argument("--knob", default="ef")
    parser.add_argument("--values", default="64,128")
    parser.add_argument("--threads", default="2,1")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--rerank", type=int, default=0,
                        help="uform's rerank R; FAISS's side then searches IndexRefineFlat over the same rows "
                             "(k_factor R/10)")
    parser.add_argument("--json", default="bench/results/ann_ab.json")
    args = parser.parse_args()
    report = {"command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"), "points": []}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as after_dir, tempfile.TemporaryDirectory() as before_dir:
        vectors = clustered(args.rows, args.dims, 1000, 1, 1.0)
        queries = clustered(args.queries, args.dims, 1000, 2, 1.0)
        paths = {}
        for name, folder in (("after", after_dir), ("before", before_dir)):
            paths[name] = (os.path.join(folder, "v.f32"), os.path.join(folder, "q.f32"))
            vectors.tofile(paths[name][0]), queries.tofile(paths[name][1])
        after = Worker(args.worker, *paths["after"], args.rows, args.dims, args.queries, after_dir)
        after.ask("index")
        built = after.ask(f"build {args.recipe} 2 {args.train_rows}")
        print(f"{args.recipe} over {args.rows} x {args.dims}: built in {built['seconds']:.1f} s")
        for name in ("bench_ann.index", "bench_ann.faiss"):
            shutil.copyfile(os.path.join(after_dir, name), os.path.join(before_dir, name))
        saved = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = os.path.abspath(args.before)  # RUNPATH yields to it
        before = Worker(args.worker, *paths["before"], args.rows, args.dims, args.queries, before_dir)
        if saved is None:
            del os.environ["LD_LIBRARY_PATH"]
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
        before.ask("attach")
        same = faiss.read_index(os.path.join(after_dir, "bench_ann.faiss"))
        searched = same
        if args.rerank:  # FAISS's own exact rescoring of R candidates, the counterpart of uform's rerank
            searched = faiss.IndexRefineFlat(same, faiss.swig_ptr(vectors))
            searched.k_factor = args.rerank / TOP
        print(f"threads {args.knob:>6} | best s: before  after  FAISS | median s: before  after  FAISS | "
              f"after/before best, median | ids equal | "
              f"CPU s median before after FAISS (after/before)")
        for threads in [int(t) for t in args.threads.split(",")]:
            for value in [int(v) for v in args.values.split(",")]:
                times = {"before": [], "after": [], "faiss": []}
                cpu = {"before": [], "after": [], "faiss": []}
                ids = {}
                for round_ in range(args.rounds):
                    sides = ["before", "after", "faiss"]
                    for side in sides[round_ % 3:] + sides[:round_ % 3]:
                        if side == "faiss":
                            faiss.omp_set_num_threads(threads)
                            faiss.ParameterSpace().set_index_parameter(
                                same, "efSearch" if args.knob == "ef" else "nprobe", value)
                            start, start_cpu = time.perf_counter(), time.process_time()
                            _, ids["faiss"] = searched.search(queries, TOP)
                            times["faiss"].append(time.perf_counter() - start)
                            cpu["faiss"].append(time.process_time() - start_cpu)
                        else:
                            worker = after if side == "after" else before
                            answer = worker.ask(f"search {args.knob} {value} {threads} {args.rerank}")
                            times[side].append(answer["seconds"]), cpu[side].append(answer["cpu_seconds"])
                            ids[side] = worker.ids()
                loads.append(os.getloadavg()[0])
                best = {side: min(seconds) for side, seconds in times.items()}
                median = {side: statistics.median(seconds) for side, seconds in times.items()}
                cpu_median = {side: statistics.median(seconds) for side, seconds in cpu.items()}
                equal = float(np.mean(ids["before"] == ids["after"]))
                point = {"threads": threads, args.knob: value, "best": best, "median": median,
                         "cpu_median": cpu_median, "cpu_after_over_before": cpu_median["after"] / cpu_median["before"],
                         "after_over_before_best": best["after"] / best["before"],
                         "after_over_before_median": median["after"] / median["before"],
                         "ids_equal_before_after": equal,
                         "ids_equal_after_faiss": float(np.mean(ids["after"] == ids["faiss"]))}
                report["points"].append(point)
                print(f"{threads:7} {value:6} | {best['before']:13.4f} {best['after']:6.4f} {best['faiss']:6.4f} | "
                      f"{median['before']:15.4f} {median['after']:6.4f} {median['faiss']:6.4f} | "
                      f"{point['after_over_before_best']:10.3f} {point['after_over_before_median']:7.3f} | {equal:.4f} | "
                      f"CPU s median {cpu_median['before']:.4f} {cpu_median['after']:.4f} {cpu_median['faiss']:.4f} "
                      f"({point['cpu_after_over_before']:.3f})")
        after.close(), before.close()
    report["load_average"] = {"min": min(loads), "max": max(loads)}
    report["timed_seconds_per_side"] = "best and median of --rounds; CPU seconds are each process's, every thread"
    print(f"load average (1 min): {min(loads):.1f} to {max(loads):.1f}")
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(report, out, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
