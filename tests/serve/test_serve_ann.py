"""`uform serve --index X.index` over an approximate structure (X.faiss beside it), against
`uform search --json` on the same index with the same knobs.

Argument: the uform CLI, the tiny checkpoint, a work folder. Indexes are built here from vectors
drawn with NumPy from a fixed seed (`uform index --vectors --model CKPT`, then `--ann` for HNSW32,
the default, and IVF16,PQ8np on 2,000 rows, enough to train 16 lists and 8 codebooks): no binary fixtures. Each
search's hits must be the CLI's: the same items in the same order, and the same float32 scores bit for
bit (both print 9 significant digits, which give a float32 back exactly); the hit count is checked
first, so an empty answer fails. Refusals: a knob the structure cannot take, a knob without a structure, bad values, and a
.faiss of another index at start-up (the server exits non-zero before listening).
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally  # noqa: E402

QUERIES = ["a photo of a cat", "red square", "\u65e5\u672c"]
ROWS, DIMS, TOP = 2000, 64, 10


def build(uform, checkpoint, work, name, seed, dims, recipe):
    """X.index from seeded vectors (fingerprinted with the checkpoint), and X.faiss when `recipe`."""
    vectors = np.random.default_rng(seed).standard_normal((ROWS, dims)).astype(np.float32)
    np.save(os.path.join(work, f"{name}.npy"), vectors)
    with open(os.path.join(work, f"{name}.ids"), "w") as ids:
        ids.writelines(f"{name}/row{i}.txt\n" for i in range(ROWS))
    index = os.path.join(work, f"{name}.index")
    subprocess.run([uform, "index", "--vectors", os.path.join(work, f"{name}.npy"), "--ids", os.path.join(work, f"{name}.ids"),
                    "--normalize", "--model", checkpoint, "--out", index, "--quiet"], check=True)
    if recipe is not None:
        flag = "--ann" if recipe == "" else f"--ann={recipe}"
        subprocess.run([uform, "index", flag, "--from", index, "--ann-threads", "1", "--quiet"], check=True)
    return index


def cli_hits(uform, checkpoint, index, query, flags):
    done = subprocess.run([uform, "search", index, checkpoint, "--text", query, "--top", str(TOP), "--json", *flags],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"uform search {flags}: {done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines()]


def as_float32(score):
    """A score as the float32 it stands for (both sides print 9 significant digits, which round-trip)."""
    return np.float32(score).tobytes().hex()


def same_as_cli(t, server, uform, checkpoint, index, knobs, flags, what):
    for query in QUERIES:
        expected = cli_hits(uform, checkpoint, index, query, flags)
        status, answer, _ = server.post("/v1/search", {"query": query, "top_k": TOP, **knobs})
        hits = answer.get("data", []) if status == 200 and answer else []
        if not t.check(status == 200 and len(hits) == TOP and len(expected) == TOP,
                       f"{what} '{query}': {status}, {len(hits)} hits, the CLI {len(expected)}: {answer}"):
            continue
        t.check([h["item"] for h in hits] == [e["item"] for e in expected],
                f"{what} '{query}': items {[h['item'] for h in hits]}, uform search {[e['item'] for e in expected]}")
        theirs = [as_float32(e["score"]) for e in expected]
        t.check([as_float32(h["score"]) for h in hits] == theirs,
                f"{what} '{query}': scores {[h['score'] for h in hits]}, uform search {theirs}")
        t.check([h["path"] for h in hits] == [e["path"] for e in expected], f"{what} '{query}': paths")


def refused(t, server, body, param, words, what):
    status, answer, _ = server.post("/v1/search", body)
    error = (answer or {}).get("error", {})
    t.check(status == 400 and (param is None or error.get("param") == param) and all(w in error.get("message", "") for w in words),
            f"{what}: {status} {answer}")


def main():
    uform, checkpoint, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    hnsw = build(uform, checkpoint, work, "hnsw", 1, DIMS, "")
    ivf = build(uform, checkpoint, work, "ivf", 2, DIMS, "IVF16,PQ8np")
    exact = build(uform, checkpoint, work, "exact", 3, DIMS, None)
    prefix = build(uform, checkpoint, work, "prefix", 4, DIMS // 2, "")  # a Matryoshka prefix: 32 of 64

    server = Server(uform, checkpoint, "--index", hnsw, "--threads", "1")
    try:
        t.check(any("approximate: HNSW32" in line for line in server.lines), f"start-up line: {server.lines}")
        _, _, body = server.get("/v1/models")
        index = json.loads(body)["data"][0]["index"]
        t.check(index["kind"] == "approximate" and index["recipe"] == "HNSW32" and index["graph"] is True
                and index["lists"] == 0 and index["items"] == ROWS and index["dimensions"] == DIMS, f"/v1/models {index}")
        same_as_cli(t, server, uform, checkpoint, hnsw, {}, [], "HNSW")
        same_as_cli(t, server, uform, checkpoint, hnsw, {"ef": 16}, ["--ef", "16"], "HNSW ef 16")
        same_as_cli(t, server, uform, checkpoint, hnsw, {"ef": 12, "rerank": 40}, ["--ef", "12", "--rerank", "40"], "HNSW rerank 40")
        same_as_cli(t, server, uform, checkpoint, hnsw, {"exact": True}, ["--exact"], "HNSW exact")
        refused(t, server, {"query": "x", "nprobe": 4}, "nprobe", ["nprobe", "HNSW32"], "nprobe on HNSW")
        refused(t, server, {"query": "x", "exact": True, "ef": 5}, "ef", ["not exact"], "ef with exact")
        refused(t, server, {"query": "x", "ef": -3}, "ef", ["ef"], "a negative ef")
        refused(t, server, {"query": "x", "ef": 2.5}, "ef", ["ef"], "a fractional ef")
        refused(t, server, {"query": "x", "rerank": "9"}, "rerank", ["rerank"], "a rerank string")
        refused(t, server, {"query": "x", "exact": "yes"}, "exact", ["exact"], "exact not a boolean")
    finally:
        t.check(server.stop() == 0, "the HNSW server stops cleanly")

    server = Server(uform, checkpoint, "--index", ivf, "--threads", "1")
    try:
        _, _, body = server.get("/v1/models")
        index = json.loads(body)["data"][0]["index"]
        t.check(index["kind"] == "approximate" and index["recipe"] == "IVF16,PQ8np" and index["lists"] == 16
                and index["graph"] is False and index["dimensions"] == DIMS, f"/v1/models {index}")
        same_as_cli(t, server, uform, checkpoint, ivf, {}, [], "IVF")
        same_as_cli(t, server, uform, checkpoint, ivf, {"nprobe": 3}, ["--nprobe", "3"], "IVF nprobe 3")
        same_as_cli(t, server, uform, checkpoint, ivf, {"nprobe": 16, "rerank": 25}, ["--nprobe", "16", "--rerank", "25"],
                    "IVF nprobe 16 rerank 25")
        # PQ codes: rescored by default (max(10·top, min(1000, codes scanned / 4))), FAISS's own scores with 0 on both sides.
        same_as_cli(t, server, uform, checkpoint, ivf, {"rerank": 0}, ["--rerank", "0"], "IVF rerank 0")
        for query in QUERIES:
            rescored = server.post("/v1/search", {"query": query, "top_k": TOP})[1]["data"]
            exact_hits = server.post("/v1/search", {"query": query, "top_k": TOP, "exact": True})[1]["data"]
            faiss_hits = server.post("/v1/search", {"query": query, "top_k": TOP, "rerank": 0})[1]["data"]
            t.check(len(rescored) == TOP and rescored[0]["item"] == exact_hits[0]["item"]
                    and as_float32(rescored[0]["score"]) == as_float32(exact_hits[0]["score"]),
                    f"'{query}': the default's best {rescored[:1]}, exact search's {exact_hits[:1]}")
            t.check(len(faiss_hits) == TOP and all(as_float32(f["score"]) != as_float32(e["score"])
                                                   for f in faiss_hits for e in exact_hits if f["item"] == e["item"]),
                    f"'{query}': rerank 0 should answer PQ scores, not exact ones: {faiss_hits[:2]} {exact_hits[:2]}")
        refused(t, server, {"query": "x", "ef": 8}, "ef", ["ef", "IVF16,PQ8np"], "ef on an IVF without a graph")
        refused(t, server, {"query": "x", "nprobe": 0}, "nprobe", ["nprobe"], "nprobe 0")
    finally:
        t.check(server.stop() == 0, "the IVF server stops cleanly")

    server = Server(uform, checkpoint, "--index", exact, "--threads", "1")
    try:
        _, _, body = server.get("/v1/models")
        index = json.loads(body)["data"][0]["index"]
        t.check(index["kind"] == "exact" and index["recipe"] is None, f"/v1/models {index}")
        same_as_cli(t, server, uform, checkpoint, exact, {}, [], "exact")
        refused(t, server, {"query": "x", "rerank": 5}, "rerank", ["exact.faiss", "uform index --ann"], "rerank without a .faiss")
    finally:
        t.check(server.stop() == 0, "the exact server stops cleanly")

    # A Matryoshka index (32 of 64 columns): the CLI encodes the prefix and normalises it, the server
    # cuts the normalised embedding and renormalises it, so the queries agree to float32 rounding
    # only: the same items, the scores within 1e-6.
    server = Server(uform, checkpoint, "--index", prefix, "--threads", "1")
    try:
        for query in QUERIES:
            expected = cli_hits(uform, checkpoint, prefix, query, ["--ef", "20"])
            status, answer, _ = server.post("/v1/search", {"query": query, "top_k": TOP, "ef": 20})
            hits = answer.get("data", []) if status == 200 and answer else []
            if t.check(len(hits) == TOP and len(expected) == TOP, f"prefix '{query}': {status} {answer}"):
                t.check([h["item"] for h in hits] == [e["item"] for e in expected], f"prefix '{query}': items")
                t.check(max(abs(h["score"] - e["score"]) for h, e in zip(hits, expected)) < 1e-6, f"prefix '{query}': scores")
    finally:
        t.check(server.stop() == 0, "the prefix server stops cleanly")

    # A .faiss of another index of the same shape beside this one: the library's refusal at start-up,
    # before the server is ready (it exits 1 and never answers a search).
    shutil.copy(os.path.join(work, "hnsw.faiss"), os.path.join(work, "exact.faiss"))
    started = subprocess.run([uform, "serve", checkpoint, "--port", "0", "--index", exact], capture_output=True, text=True,
                             timeout=60)
    t.check(started.returncode == 1 and "exact.faiss" in started.stderr and "does not belong" in started.stderr
            and "ready in" not in started.stderr, f"a foreign .faiss: exit {started.returncode}, {started.stderr}")
    # --exact ignores it, as `uform search --exact` does.
    server = Server(uform, checkpoint, "--index", exact, "--exact", "--threads", "1")
    try:
        _, _, body = server.get("/v1/models")
        t.check(json.loads(body)["data"][0]["index"]["kind"] == "exact", "--exact serves exactly")
        refused(t, server, {"query": "x", "ef": 5}, "ef", ["not exact"], "ef with --exact")
    finally:
        t.check(server.stop() == 0, "the --exact server stops cleanly")
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
