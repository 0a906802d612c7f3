#!/usr/bin/python3
"""uform's approximate search against Python's FAISS in instructions, not seconds (issue 35's bench).

Wall and CPU times on a shared 2-vCPU machine move by tens of percent with the neighbours' load,
and the machine has no hardware counters (`perf stat` answers "not supported"), so the overhead of
uform's call path over FAISS's is counted here with valgrind's callgrind, whose instruction counts
are the same whatever else runs. Both sides search the same structure (uform's .faiss file, which
FAISS's reader opens as it is), with the same queries, the same knob, top 10, one thread
(OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1 and the worker's threads 1):

  uform   peer_ann_worker (bench/bench_ann.c) under callgrind: 'attach', one 'search', 'quit'
  FAISS   /usr/bin/python3 running this file's --faiss-side under callgrind: read_index, one search

Each side runs twice, with --queries N and with 1 query; (instructions for N) - (instructions for 1)
is the cost of N - 1 queries with every start-up, file read and load subtracted. The callgrind.out
files stay in --work for callgrind_annotate (the report names them).

    ann_callgrind.py --worker build-h/bench/peer_ann_worker [--rows 100000] [--dims 64] [--queries 300]
                     [--work build-h/ann_callgrind] [--json bench/results/ann_callgrind.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TOP = 10
# (name, recipe, knob, value, rerank, training rows; 0: the library's default): the two structures
# issue 35 names and the default rule's flat lists, at knobs where each reaches the recall the
# tables in bench/README.md use.
CASES = [
    ("hnsw32_ef64", "HNSW32", "ef", 64, 0, 0),
    ("ivfpq_np16", "IVF1024,PQ16np", "nprobe", 16, 0, 40000),
    ("ivfpq_np16_rerank100", "IVF1024,PQ16np", "nprobe", 16, 100, 40000),
    ("ivfflat_np4", "IVF1024,Flat", "nprobe", 4, 0, 0),  # the default rule's kind from 100,000 items
]


def faiss_side(argv):
    """Runs inside callgrind: FAISS's search of the first `count` queries, as Python calls it."""
    path, queries_path, vectors_path, dims, count, knob, value, rerank, ids_path = argv
    import faiss
    dims, count, value, rerank = int(dims), int(count), int(value), int(rerank)
    faiss.omp_set_num_threads(1)
    queries = np.fromfile(queries_path, dtype=np.float32).reshape(-1, dims)[:count].copy()
    index = faiss.read_index(path)
    faiss.ParameterSpace().set_index_parameter(index, "efSearch" if knob == "ef" else "nprobe", value)
    searched = index
    if rerank:  # FAISS's own exact rescoring over the same F32 rows, the counterpart of uform's rerank
        vectors = np.fromfile(vectors_path, dtype=np.float32).reshape(-1, dims)
        searched = faiss.IndexRefineFlat(index, faiss.swig_ptr(vectors))
        searched.k_factor = rerank / TOP
    _, ids = searched.search(queries, TOP)
    np.asarray(ids, dtype=np.int64).tofile(ids_path)


def instructions(out_path):
    """The total Ir of a callgrind.out file (its 'summary:' or 'totals:' line)."""
    with open(out_path) as out:
        for line in out:
            match = re.match(r"(summary|totals):\s+(\d+)", line)
            if match:
                return int(match.group(2))
    raise SystemExit(f"ann_callgrind: no totals in {out_path}")


# Functions whose inclusive cost callgrind_annotate reports: uform's entry point and its call into
# FAISS's shim in the worker; FAISS's search entry points in Python (IndexRefine's for rerank).
FUNCTIONS = {
    "uform_index_ann_search": r":uform_index_ann_search \[",
    "uform__faiss_search": r":uform__faiss_search \[",
    "faiss_search": r":faiss::Index(HNSW|IVF|Refine)::search\(long, float const\*, long, float\*, long\*, "
                    r"faiss::SearchParameters const\*\) const \[",
}


def inclusive(out_path):
    """The largest inclusive Ir of each FUNCTIONS entry in a callgrind.out file (0 if absent)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_path],
                          capture_output=True, text=True, check=True, timeout=600).stdout
    found = {name: 0 for name in FUNCTIONS}
    for line in text.splitlines():
        match = re.match(r"\s*([\d,]+) \(", line)
        if not match:
            continue
        for name, pattern in FUNCTIONS.items():
            if re.search(pattern, line):
                found[name] = max(found[name], int(match.group(1).replace(",", "")))
    return found


def callgrind(command, out_path, stdin_text=None, library_path=None):
    # PYTHONHASHSEED: a random hash seed changes how many instructions Python's dictionaries take,
    # run to run; a fixed one makes the Python side's count repeatable.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE",
               PYTHONHASHSEED="0")
    if library_path:  # another build's libuform.so.4 and libuform-faiss.so.4 (the worker's RUNPATH yields)
        env["LD_LIBRARY_PATH"] = os.path.abspath(library_path)
    start = time.perf_counter()
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_path}"] + command,
                   input=stdin_text, text=True, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=1800)
    return instructions(out_path), time.perf_counter() - start


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--faiss-side":
        return faiss_side(sys.argv[2:])
    from bench_ann import Worker, clustered, exact_top, recall
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", required=True)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES))
    parser.add_argument("--work", default="build-h/ann_callgrind")
    parser.add_argument("--library-path", default=None,
                        help="a folder with another build's libuform.so.4 and libuform-faiss.so.4 for the uform side")
    parser.add_argument("--skip-faiss", action="store_true",
                        help="reuse the Python side's callgrind.out files from an earlier run in --work")
    parser.add_argument("--label", default="", help="a suffix of the callgrind.out files (runs of two builds)")
    parser.add_argument("--json", default="bench/results/ann_callgrind.json")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    os.makedirs(args.work, exist_ok=True)
    vectors_path, queries_path = os.path.join(args.work, "v.f32"), os.path.join(args.work, "q.f32")
    vectors = clustered(args.rows, args.dims, 1000, 1, 1.0)
    queries = clustered(args.queries, args.dims, 1000, 2, 1.0)
    vectors.tofile(vectors_path), queries.tofile(queries_path)
    truth = exact_top(vectors, queries)
    report = {"command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "rows": args.rows, "dims": args.dims, "queries": args.queries, "cases": []}
    wanted = args.cases.split(",")
    for name, recipe, knob, value, rerank, train in [c for c in CASES if c[0] in wanted]:
        folder = os.path.join(args.work, "".join(ch if ch.isalnum() else "_" for ch in recipe))
        os.makedirs(folder, exist_ok=True)
        faiss_path = os.path.join(folder, "bench_ann.faiss")
        if not os.path.exists(faiss_path):  # built natively once; both sides then read this file
            worker = Worker(args.worker, vectors_path, queries_path, args.rows, args.dims, args.queries, folder)
            worker.ask("index")
            built = worker.ask(f"build {recipe} 2 {train}")
            worker.close()
            print(f"{recipe}: built in {built['seconds']:.1f} s")
        counts = {}
        for count in (args.queries, 1):
            ours_out = os.path.join(args.work, f"callgrind.out.uform{args.label}.{name}.{count}")
            command = [args.worker, "--vectors", vectors_path, "--queries", queries_path, "--rows", str(args.rows),
                       "--dims", str(args.dims), "--count", str(count), "--work", folder]
            ours, ours_s = callgrind(command, ours_out, f"attach\nsearch {knob} {value} 1 {rerank}\nquit\n",
                                     args.library_path)
            ours_ids = np.fromfile(os.path.join(folder, "ours.ids"), dtype=np.int64).reshape(count, TOP)
            theirs_out = os.path.join(args.work, f"callgrind.out.faiss.{name}.{count}")
            theirs_ids_path = theirs_out + ".ids"  # per case: two cases may search one structure
            if args.skip_faiss and os.path.exists(theirs_out):  # Python's side does not change with uform's build
                theirs, theirs_s = instructions(theirs_out), 0.0
            else:
                theirs, theirs_s = callgrind(["/usr/bin/python3", os.path.abspath(__file__), "--faiss-side", faiss_path,
                                              queries_path, vectors_path, str(args.dims), str(count), knob, str(value),
                                              str(rerank), theirs_ids_path], theirs_out)
            theirs_ids = np.fromfile(theirs_ids_path, dtype=np.int64).reshape(count, TOP)
            counts[count] = {"uform": ours, "faiss": theirs, "uform_out": ours_out, "faiss_out": theirs_out,
                             "uform_functions": inclusive(ours_out), "faiss_functions": inclusive(theirs_out),
                             "ids_equal": float(np.mean(ours_ids == theirs_ids)),
                             "valgrind_seconds": {"uform": ours_s, "faiss": theirs_s}}
            if count == args.queries:
                counts[count]["recall_uform"] = recall(ours_ids, truth)
                counts[count]["recall_faiss"] = recall(theirs_ids, truth)
        many, one = counts[args.queries], counts[1]
        ours, theirs = many["uform"] - one["uform"], many["faiss"] - one["faiss"]
        case = {"name": name, "recipe": recipe, knob: value, "rerank": rerank, "counts": counts,
                "uform_per_query": ours / (args.queries - 1), "faiss_per_query": theirs / (args.queries - 1),
                "overhead": ours / theirs - 1.0}
        # The same cost read inside the N-query runs: uform's whole search call, the part of it that is
        # FAISS's own search (through the shim), and Python FAISS's search call.
        entry_ours = many["uform_functions"]["uform_index_ann_search"]
        inside = many["uform_functions"]["uform__faiss_search"]
        entry_theirs = many["faiss_functions"]["faiss_search"]
        case.update({"uform_call": entry_ours, "uform_call_in_faiss": inside, "uform_call_outside_faiss": entry_ours - inside,
                     "faiss_call": entry_theirs, "overhead_calls": entry_ours / entry_theirs - 1.0 if entry_theirs else None})
        report["cases"].append(case)
        print(f"  in the {args.queries}-query runs: uform_index_ann_search {entry_ours:,} (FAISS's search inside it "
              f"{inside:,}, uform's own {entry_ours - inside:,}); Python FAISS's search {entry_theirs:,}"
              + (f": {case['overhead_calls'] * 100:+.2f}%" if entry_theirs else ""))
        print(f"{name}: {recipe} {knob} {value} rerank {rerank}: per query uform {case['uform_per_query']:,.0f}, "
              f"FAISS {case['faiss_per_query']:,.0f} instructions: overhead {case['overhead'] * 100:+.2f}%; "
              f"recall@10 {many['recall_uform']:.4f} / {many['recall_faiss']:.4f}, ids equal {many['ids_equal']:.4f}; "
              f"start-up (1 query) uform {one['uform']:,}, FAISS {one['faiss']:,}")
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
