#!/usr/bin/python3
"""Approximate search against Python's FAISS, in one run (issue 35's bench).

Generates clustered unit vectors (a mixture of Gaussians), takes the exact top 10 of every query
with NumPy (the ground truth, independent of both sides), then for each recipe builds the same
structure twice -- uform_index_ann_build through the C worker (peer_ann_worker, bench/bench_ann.c)
and faiss.index_factory in this process (Debian's python3-faiss) -- and sweeps the recipe's knob.
Every point is timed for uform and then for FAISS, `--rounds` times alternating, best round each;
both sides use the same OpenMP thread count and get every query in one call. Prints a table and
writes JSON (bench/results/ann.json by default).

    bench_ann [--rows 1000000] [--dims 64,256] [--queries 1000] [--centres 1000] [--threads 2,1]
              [--recipes hnsw,ivfpq] [--ef 16,32,64,128,256] [--nprobe 1,2,4,8,16,32,64,128]
              [--rounds 2] [--build-threads 2] [--train-rows N] [--rerank 100] [--spread 1.0]
              [--no-faiss-build] [--no-same-structure] [--direct] [--work DIR] [--json PATH]

Beside FAISS's own structure, FAISS in Python also searches uform's structure (its .faiss file):
the "same structure" line under each point is uform's overhead on the very same graph or lists,
and whether the two answered the same ids. --no-faiss-build skips FAISS's own build (its columns
then search uform's structure), for runs whose builds would not fit the time there is.

--direct adds FAISS in the worker's own process (its `direct` command: faiss::read_index of the
same .faiss, the same knob, every query in one call), timed right after uform's search in every
round: the "in process" line under each point is then uform's overhead with everything but the
call path equal, including where the process's memory sits, which on a hypervisor such as this
project's PVM hosts moves a search by more than the call path could.

`hnsw` is HNSW32; `ivfpq` is the recipe uform's default rule picks for a corpus above 1,000,000
items, computed for --rows (IVF<n>,PQ<m>np: n the power of two nearest 4*sqrt(rows), m the largest
divisor of dims at most dims/4); any other word is passed as an index_factory string. Both sides
train on the same number of rows (--train-rows; 0: 64 per IVF list, at most rows), each on its own
sample: uform's fixed selection sample, here a fixed-seed random one.
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import faiss
except ImportError:  # install-deps.sh installs python3-faiss
    sys.exit("bench_ann: Debian's python3-faiss is missing (scripts/install-deps.sh installs it)")

TOP = 10


def clustered(rows, dims, centres, seed, spread):
    """[rows, dims] float32 unit vectors: a random unit centre plus Gaussian noise of norm ~spread."""
    generator = np.random.default_rng(seed)
    middle = np.random.default_rng(12345).standard_normal((centres, dims)).astype(np.float32)
    middle /= np.linalg.norm(middle, axis=1, keepdims=True)
    out = np.empty((rows, dims), dtype=np.float32)
    for start in range(0, rows, 65536):  # in blocks: the noise of 1 M x 256 at once would be 2 GB of doubles
        stop = min(rows, start + 65536)
        which = generator.integers(0, centres, stop - start)
        block = middle[which] + generator.standard_normal((stop - start, dims), dtype=np.float32) * (spread / math.sqrt(dims))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    return out


def exact_top(vectors, queries):
    """The exact top-10 ids per query by inner product, NumPy in blocks of rows."""
    best_scores = np.full((len(queries), TOP), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), TOP), dtype=np.int64)
    for start in range(0, len(vectors), 131072):
        scores = queries @ vectors[start:start + 131072].T  # [Q, block]
        part = np.argpartition(-scores, TOP - 1, axis=1)[:, :TOP]
        both_scores = np.concatenate([best_scores, np.take_along_axis(scores, part, axis=1)], axis=1)
        both_ids = np.concatenate([best_ids, part + start], axis=1)
        order = np.argsort(-both_scores, axis=1, kind="stable")[:, :TOP]
        best_scores = np.take_along_axis(both_scores, order, axis=1)
        best_ids = np.take_along_axis(both_ids, order, axis=1)
    return best_ids


def recall(ids, truth):
    assert ids.shape == truth.shape and len(ids) > 0
    return float(np.mean([len(set(a.tolist()) & set(b.tolist())) / TOP for a, b in zip(ids, truth)]))


def default_ivfpq(rows, dims):
    lists = 1 << max(0, round(math.log2(4 * math.sqrt(rows))))
    m = max(d for d in range(1, dims // 4 + 1) if dims % d == 0)
    return f"IVF{lists},PQ{m}np", lists


class Worker:
    def __init__(self, path, vectors_path, queries_path, rows, dims, count, work):
        self.process = subprocess.Popen(
            [path, "--vectors", vectors_path, "--queries", queries_path, "--rows", str(rows), "--dims", str(dims),
             "--count", str(count), "--work", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ids_path = os.path.join(work, "ours.ids")
        self.count = count

    def ask(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            sys.exit(f"bench_ann: the worker ended on '{line}'")
        answer = json.loads(reply)
        if "error" in answer:
            sys.exit(f"bench_ann: uform: {answer['error']}")
        return answer

    def ids(self):
        return np.fromfile(self.ids_path, dtype=np.int64).reshape(self.count, TOP)

    def close(self):
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait(timeout=60)


def cpu_model():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", required=True)
    parser.add_argument("--rows", type=int, default=1000000)
    parser.add_argument("--dims", default="64,256")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--centres", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=1.0, help="noise norm around a centre (centres are unit)")
    parser.add_argument("--threads", default="2,1")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--recipes", default="hnsw,ivfpq",
                        help="hnsw, ivfpq or index_factory strings, comma-separated; with a ';' anywhere, "
                             "';'-separated instead, so factory strings keep their commas ('IVF4096,Flat;ivfpq')")
    parser.add_argument("--ef", default="16,32,64,128,256")
    parser.add_argument("--nprobe", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--train-rows", type=int, default=0)
    parser.add_argument("--rerank", type=int, default=100,
                        help="IVF recipes: a second sweep with uform's rerank R against FAISS's IndexRefineFlat "
                             "(k_factor R/10); 0: none")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--faiss-build", action=argparse.BooleanOptionalAction, default=True,
                        help="build FAISS's own structure in Python (off: its columns search uform's structure, "
                             "halving a long run; no FAISS build time)")
    parser.add_argument("--same-structure", action=argparse.BooleanOptionalAction, default=True,
                        help="also time Python's FAISS on uform's own .faiss file (the same graph or lists), "
                             "alternating with the other two sides")
    parser.add_argument("--direct", action="store_true",
                        help="also time FAISS itself inside the worker's process on the same .faiss (its "
                             "'direct' command), alternating with uform's search")
    parser.add_argument("--work", default=None)
    parser.add_argument("--json", default="bench/results/ann.json")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress shows in a log while a 1 M-row run goes on
    threads_list = [int(t) for t in args.threads.split(",")]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    loads = [os.getloadavg()[0]]
    report = {"command": " ".join(sys.argv), "started": started, "cpu": cpu_model(), "cores": os.cpu_count(),
              "uform_cpu_class": os.environ.get("UFORM_CPU_CLASS", "(unset: the best this CPU runs)"),
              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset: libgomp spins, then sleeps)"),
              "faiss": faiss.__version__, "rows": args.rows, "queries": args.queries, "centres": args.centres,
              "spread": args.spread,
              "rounds": args.rounds, "sets": []}
    print(f"bench_ann: {report['cpu']}, {report['cores']} cores, FAISS {faiss.__version__}, load {loads[0]:.1f}")
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        for dims in [int(d) for d in args.dims.split(",")]:
            vectors = clustered(args.rows, dims, args.centres, 1, args.spread)
            queries = clustered(args.queries, dims, args.centres, 2, args.spread)
            vectors_path, queries_path = os.path.join(work, "v.f32"), os.path.join(work, "q.f32")
            vectors.tofile(vectors_path), queries.tofile(queries_path)
            start = time.perf_counter()
            truth = exact_top(vectors, queries)
            print(f"\n{args.rows} x {dims}: ground truth by NumPy in {time.perf_counter() - start:.1f} s")
            worker = Worker(args.worker, vectors_path, queries_path, args.rows, dims, args.queries, work)
            made = worker.ask("index")
            exact = {}
            for threads in threads_list:  # exact search: the speed-up's denominator, best of the rounds
                best = math.inf
                for _ in range(args.rounds):
                    best = min(best, worker.ask(f"exact {threads}")["seconds"])
                exact[threads] = {"seconds": best, "qps": args.queries / best, "recall": recall(worker.ids(), truth)}
                print(f"uform exact search, {threads} threads: {exact[threads]['qps']:.1f} queries/s, "
                      f"recall@10 {exact[threads]['recall']:.4f}")
            block = {"dims": dims, "index_bytes": made["bytes"], "exact": exact, "recipes": []}
            report["sets"].append(block)
            for name in [n for n in args.recipes.split(";" if ";" in args.recipes else ",") if n]:
                lists = 0
                if name == "hnsw":
                    recipe, knob, values = "HNSW32", "ef", [int(v) for v in args.ef.split(",")]
                elif name == "ivfpq":
                    recipe, lists = default_ivfpq(args.rows, dims)
                    knob, values = "nprobe", [int(v) for v in args.nprobe.split(",") if int(v) <= lists]
                else:
                    recipe = name
                    knob = "ef" if "HNSW" in name and "IVF" not in name else "nprobe"
                    values = [int(v) for v in (args.ef if knob == "ef" else args.nprobe).split(",")]
                train = 0
                if "IVF" in recipe:
                    lists = lists or int(recipe.split("IVF")[1].split(",")[0].split("_")[0])
                    train = min(args.rows, args.train_rows or 64 * lists)
                loads.append(os.getloadavg()[0])
                ours_build = worker.ask(f"build {recipe} {args.build_threads} {train}")
                loads.append(os.getloadavg()[0])
                faiss.omp_set_num_threads(args.build_threads)
                start, start_cpu = time.perf_counter(), time.process_time()
                if args.faiss_build:
                    index = faiss.index_factory(dims, recipe, faiss.METRIC_INNER_PRODUCT)
                    if train:
                        sample = np.sort(np.random.default_rng(3).choice(args.rows, train, replace=False))
                        index.train(vectors[sample])
                    index.add(vectors)
                else:  # --no-faiss-build: FAISS searches uform's structure only (no build time of its own)
                    index = faiss.read_index(os.path.join(work, "bench_ann.faiss"))
                faiss_build = {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - start_cpu,
                               "built": bool(args.faiss_build)}
                faiss_bytes = len(faiss.serialize_index(index))
                # FAISS on uform's own structure (its .faiss file, FAISS's format): the two graphs built
                # above differ (2-thread HNSW builds depend on timing), so this third column is the one
                # that isolates what uform's call path adds around the same search.
                same = (faiss.read_index(os.path.join(work, "bench_ann.faiss"))
                        if args.same_structure and args.faiss_build else None)
                loads.append(os.getloadavg()[0])
                theirs = f"{faiss_build['seconds']:.1f} s" if args.faiss_build else "not built (searches uform's)"
                print(f"{recipe}: build uform {ours_build['seconds']:.1f} s, FAISS {theirs} "
                      f"({args.build_threads} threads, {train} training rows); bytes/vector uform "
                      f"{ours_build['bytes'] / args.rows:.1f}, FAISS {faiss_bytes / args.rows:.1f}")
                print(f"  threads {knob:>6} | recall uform  FAISS | queries/s uform    FAISS | overhead | "
                      f"CPU s uform  FAISS overhead | vs exact")
                points = []
                # IVF: the sweep again with exact rescoring of R candidates, uform's rerank against
                # FAISS's own way to do it (IndexRefineFlat over the same F32 rows, k_factor R/10).
                reranks = [0] + ([args.rerank] if args.rerank and knob == "nprobe" else [])
                refine = None
                same_refine = None
                if len(reranks) > 1:
                    refine = faiss.IndexRefineFlat(index, faiss.swig_ptr(vectors))
                    refine.k_factor = args.rerank / TOP
                    if same is not None:
                        same_refine = faiss.IndexRefineFlat(same, faiss.swig_ptr(vectors))
                        same_refine.k_factor = args.rerank / TOP
                for rerank, threads, value in [(r, t, v) for r in reranks for t in threads_list for v in values]:
                    if True:
                        ours_best = theirs_best = ours_cpu = theirs_cpu = same_best = same_cpu = math.inf
                        direct_best = direct_cpu = math.inf
                        same_ids = None
                        direct = args.direct and not rerank
                        for _ in range(args.rounds):
                            answer = worker.ask(f"search {knob} {value} {threads} {rerank}")
                            ours_best, ours_cpu = min(ours_best, answer["seconds"]), min(ours_cpu, answer["cpu_seconds"])
                            if direct:
                                answer = worker.ask(f"direct {knob} {value} {threads}")
                                direct_best = min(direct_best, answer["seconds"])
                                direct_cpu = min(direct_cpu, answer["cpu_seconds"])
                            faiss.omp_set_num_threads(threads)
                            params = faiss.ParameterSpace()
                            params.set_index_parameter(index, "efSearch" if knob == "ef" else "nprobe", value)
                            start, start_cpu = time.perf_counter(), time.process_time()
                            _, theirs_ids = (refine if rerank else index).search(queries, TOP)
                            theirs_best = min(theirs_best, time.perf_counter() - start)
                            theirs_cpu = min(theirs_cpu, time.process_time() - start_cpu)
                            if same is not None:
                                params.set_index_parameter(same, "efSearch" if knob == "ef" else "nprobe", value)
                                start, start_cpu = time.perf_counter(), time.process_time()
                                _, same_ids = (same_refine if rerank else same).search(queries, TOP)
                                same_best = min(same_best, time.perf_counter() - start)
                                same_cpu = min(same_cpu, time.process_time() - start_cpu)
                        point = {"threads": threads, knob: value, "rerank": rerank,
                                 "recall_uform": recall(worker.ids(), truth), "recall_faiss": recall(theirs_ids, truth),
                                 "qps_uform": args.queries / ours_best, "qps_faiss": args.queries / theirs_best,
                                 "overhead": ours_best / theirs_best - 1.0,
                                 "cpu_seconds_uform": ours_cpu, "cpu_seconds_faiss": theirs_cpu,
                                 "overhead_cpu": ours_cpu / theirs_cpu - 1.0,
                                 "speedup_over_exact": exact[threads]["seconds"] / ours_best}
                        if direct:
                            direct_ids = np.fromfile(os.path.join(work, "direct.ids"), dtype=np.int64)
                            point.update({"qps_direct": args.queries / direct_best,
                                          "overhead_direct": ours_best / direct_best - 1.0,
                                          "cpu_seconds_direct": direct_cpu,
                                          "overhead_cpu_direct": ours_cpu / direct_cpu - 1.0,
                                          "ids_equal_direct": float(np.mean(worker.ids().reshape(-1) == direct_ids))})
                        if same is not None:
                            ours_ids = worker.ids()
                            point.update({"qps_faiss_same": args.queries / same_best,
                                          "overhead_same": ours_best / same_best - 1.0,
                                          "cpu_seconds_faiss_same": same_cpu,
                                          "overhead_cpu_same": ours_cpu / same_cpu - 1.0,
                                          "recall_faiss_same": recall(same_ids, truth),
                                          "ids_equal_same": float(np.mean(ours_ids == same_ids))})
                        points.append(point)
                        if not block["recipes"] or block["recipes"][-1].get("points") is not points:
                            block["recipes"].append({"recipe": recipe, "knob": knob, "train_rows": train,
                                                     "build_uform": ours_build, "build_faiss": faiss_build,
                                                     "bytes_per_vector_uform": ours_build["bytes"] / args.rows,
                                                     "bytes_per_vector_faiss": faiss_bytes / args.rows,
                                                     "points": points})
                        save(args.json, report, loads, partial=True)  # every point kept, for a run stopped early
                        loads.append(os.getloadavg()[0])
                        print(f"  {threads:7} {value:6}{'+r' + str(rerank) if rerank else ''} |      {point['recall_uform']:.4f} {point['recall_faiss']:.4f} | "
                              f"{point['qps_uform']:15.0f} {point['qps_faiss']:8.0f} | {point['overhead'] * 100:+7.1f}% | "
                              f"{point['cpu_seconds_uform']:6.3f} {point['cpu_seconds_faiss']:6.3f} "
                              f"{point['overhead_cpu'] * 100:+6.1f}% | "
                              f"{point['speedup_over_exact']:7.1f}x")
                        if direct:
                            print(f"          in process: FAISS {point['qps_direct']:8.0f} queries/s, ids equal "
                                  f"{point['ids_equal_direct']:.4f} | overhead {point['overhead_direct'] * 100:+6.1f}% wall, "
                                  f"{point['overhead_cpu_direct'] * 100:+6.1f}% CPU ({point['cpu_seconds_direct']:.3f} s)")
                        if same is not None:
                            print(f"          same structure: FAISS {point['qps_faiss_same']:8.0f} queries/s, recall "
                                  f"{point['recall_faiss_same']:.4f}, ids equal {point['ids_equal_same']:.4f} | "
                                  f"overhead {point['overhead_same'] * 100:+6.1f}% wall, "
                                  f"{point['overhead_cpu_same'] * 100:+6.1f}% CPU ({point['cpu_seconds_faiss_same']:.3f} s)")
                at95 = {}
                for threads in threads_list:
                    good = [p for p in points if p["threads"] == threads and p["recall_uform"] >= 0.95]
                    at95[threads] = max((p["speedup_over_exact"] for p in good), default=None)
                    print(f"  speed-up over exact at recall >= 0.95, {threads} threads: "
                          + (f"{at95[threads]:.1f}x" if at95[threads] else "not reached"))
                if not block["recipes"] or block["recipes"][-1].get("points") is not points:  # no points at all
                    block["recipes"].append({"recipe": recipe, "knob": knob, "train_rows": train,
                                             "build_uform": ours_build, "build_faiss": faiss_build,
                                             "bytes_per_vector_uform": ours_build["bytes"] / args.rows,
                                             "bytes_per_vector_faiss": faiss_bytes / args.rows, "points": points})
                block["recipes"][-1]["speedup_at_recall_095"] = at95
                del refine, index, same_refine, same
                save(args.json, report, loads, partial=True)  # a run stopped later keeps what it measured
            worker.close()
            del vectors
    print(f"\nload average (1 min) during the run: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores")
    save(args.json, report, loads, partial=False)
    print(f"wrote {args.json}")


def save(path, report, loads, partial):
    """Writes the report so far; `partial` marks one written before the run's end."""
    report["load_average"] = {"min": min(loads), "max": max(loads)}
    report["partial"] = partial
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as out:
        json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
