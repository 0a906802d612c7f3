#!/usr/bin/python3
"""Paper projection of approximate search to 100 M and 1 B rows from bench_ann's 1 M-row runs (issue 35).

Reads the JSON that bench_ann wrote (bench/results/), takes each measured figure at 1 M rows and
scales it by a stated model; prints docs/indexes.md's table with, beside each number, the figure it
scales from. Nothing here is measured at 100 M or 1 B rows.

    ann_projection.py --ivf64 bench/results/ann_1m_64_ivfpq_onecall.json --ivf256 bench/results/ann_1m_256.json
                      --hnsw64 bench/results/ann_1m_64_hnsw_ef512.json [--threads 2] [--nprobe 16]

Models (N rows, d dims, 1 M = the measured size):
- memory: HNSW32 = the measured bytes per vector × N (4·d F32 rows + the graph); IVF-PQ = (m code
  bytes + FAISS's 8-byte id) × N + the centroids (L·d·4) + the PQ codebooks (256·d·4), L the rule's
  lists (the power of two nearest 4·√N); the F32 rows for rerank (4·d·N) are counted apart (on disk).
- HNSW build: the measured seconds × (N / 1 M) × log N / log 1 M (each insertion is a search).
- IVF-PQ build: the measured seconds × FLOPs(N) / FLOPs(1 M), where FLOPs are FAISS's k-means on
  64·L training rows (10 iterations, IndexIVF's setting, each L·d·2 per row), assigning every row to
  its list with the flat quantiser (N·L·d·2) and PQ-encoding it (N·256·d·2).
- queries: HNSW at the same ef: the measured rate × log 1 M / log N (optimistic: at 100 M a walk
  waits on memory and needs a higher ef for the same recall); IVF-PQ: per query the coarse
  quantiser (L·d) plus the scanned codes (nprobe · N/L · m) plus rerank (R·d), at the same nprobe
  (cost ∝ that sum; recall at 100 M not known) — the measured rate × cost(1 M) / cost(N);
  exact search: the measured rate × 1 M / N.
"""
import argparse
import json
import math

MILLION = 1_000_000


def lists_for(rows):
    return 1 << max(0, round(math.log2(4 * math.sqrt(rows))))


def ivf_flops(rows, dims):
    lists = lists_for(rows)
    train = 10 * (64 * lists) * lists * dims * 2
    return train + rows * lists * dims * 2 + rows * 256 * dims * 2


def ivf_query_cost(rows, dims, m, nprobe, rerank):
    lists = lists_for(rows)
    return lists * dims + nprobe * rows / lists * m + rerank * dims


def human_bytes(value):
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def human_seconds(value):
    if value >= 2 * 86400:
        return f"{value / 86400:.3g} days"
    if value >= 2 * 3600:
        return f"{value / 3600:.3g} h"
    if value >= 120:
        return f"{value / 60:.3g} min"
    return f"{value:.3g} s"


def best_at(recipe, threads, nprobe=0, target=0.95):
    """The fastest point at recall ≥ target for `threads` (at `nprobe` if given): (point, rate), or (None, None)."""
    good = [p for p in recipe["points"] if p["threads"] == threads and p["recall_uform"] >= target
            and (not nprobe or p.get("nprobe") == nprobe)]
    if not good:
        return None, None
    point = max(good, key=lambda p: p["qps_uform"])
    return point, point["qps_uform"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ivf64")
    parser.add_argument("--ivf256")
    parser.add_argument("--hnsw64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nprobe", type=int, default=0, help="IVF: the point at this nprobe (0: the fastest at recall 0.95)")
    args = parser.parse_args()
    sizes = [100 * MILLION, 1000 * MILLION]
    for path in (args.ivf64, args.ivf256, args.hnsw64):
        if not path:
            continue
        report = json.load(open(path))
        for block in report["sets"]:
            dims = block["dims"]
            exact = block["exact"].get(str(args.threads))
            for recipe in block["recipes"]:
                name, rows = recipe["recipe"], report["rows"]
                print(f"\n{name} at {rows} x {dims} ({path}; {args.threads} threads)")
                seconds = recipe["build_uform"]["seconds"]
                per_vector = recipe["bytes_per_vector_uform"]
                point, rate = best_at(recipe, args.threads, 0 if "HNSW" in name else args.nprobe)
                for n in sizes:
                    line = [f"{n // MILLION} M:"]
                    if "HNSW" in name:
                        line.append(f"memory {human_bytes(per_vector * n)} ({per_vector:.1f} B/vector measured)")
                        line.append(f"build {human_seconds(seconds * n / rows * math.log(n) / math.log(rows))} "
                                    f"(from {seconds:.0f} s)")
                        if rate:
                            line.append(f"queries {rate * math.log(rows) / math.log(n):.0f}/s at ef {point['ef']} "
                                        f"(from {rate:.0f}/s, recall {point['recall_uform']:.3f})")
                    else:
                        m = recipe["build_uform"]["code_bytes"]
                        lists = lists_for(n)
                        codes = (m + 8) * n + lists * dims * 4 + 256 * dims * 4
                        line.append(f"codes + lists {human_bytes(codes)} (IVF{lists}, {m}+8 B/vector; "
                                    f"{per_vector:.1f} B/vector measured at 1 M)")
                        line.append(f"F32 rows for rerank {human_bytes(4 * dims * n)}")
                        line.append(f"build {human_seconds(seconds * ivf_flops(n, dims) / ivf_flops(rows, dims))} "
                                    f"(from {seconds:.0f} s; FLOPs x{ivf_flops(n, dims) / ivf_flops(rows, dims):.0f})")
                        if rate:
                            nprobe, rerank = point["nprobe"], point["rerank"]
                            factor = ivf_query_cost(n, dims, m, nprobe, rerank) / ivf_query_cost(rows, dims, m, nprobe, rerank)
                            line.append(f"queries {rate / factor:.0f}/s at nprobe {nprobe} rerank {rerank} "
                                        f"(from {rate:.0f}/s, recall {point['recall_uform']:.3f}; cost x{factor:.1f})")
                    if exact:
                        line.append(f"exact {exact['qps'] * rows / n:.3g}/s (from {exact['qps']:.0f}/s)")
                    print("  " + line[0] + " " + "; ".join(line[1:]))


if __name__ == "__main__":
    main()
