"""Brute-force NumPy reference for `uform_index_search` (run by test_index_search).

    python3 index_search_reference.py WORK_DIR

Reads every search_<scalar>.index (safetensors, parsed here with json + numpy), the queries
(queries.f32) and the engine's answers (hits.txt: "# scalar filter queries hits_per_query" headers,
then "query rank item modality score" lines), scores every item of every query exactly as
uform.h defines each scalar kind, and checks the engine's top 10:

  f32, f16, bf16  scores within 2e-6 of float64 sums; every hit at least as good as the reference's
                  10th score (within 2e-6); ranks equal wherever the reference has a margin of 1e-5
                  to its neighbours; equal engine scores ordered by item.
  i8              exact: (sum q8*x8) / 127^2 with q8 = clip(rint(127 q)), identical items in
                  identical order (ties by item).
  b1              the candidates are the 40 nearest by Hamming distance (ties by item), rescored as
                  sum(q*s)/sqrt(dims); identical items (scores within 1e-6); whenever those
                  candidates hold the exact top 10 by that score, the answer equals it.
Query 0 is item 42's vector and items 100, 700, 1500 copy it: the first four hits must be
42, 100, 700, 1500 in that order. Exit status 0 when everything holds; every failure is printed
with both values.
"""

import json
import sys

import numpy as np

TOP = 10
B1_CANDIDATES = 4 * TOP
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I8": np.int8, "U8": np.uint8, "I64": np.int64}
failures = 0


def fail(message):
    global failures
    failures += 1
    if failures <= 40:
        print("FAIL:", message)


def load(path):
    raw = open(path, "rb").read()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return header["__metadata__"], tensors


def bf16_round(values):
    """float32 -> bfloat16 bits, round to nearest even (the engine's rule)."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def bf16_widen(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def rows_in_item_order(metadata, tensors, scalar):
    """[count, dims] in the stored scalar's numeric form, and each item's modality."""
    modality = tensors["items.modality"]
    names = ["embeddings.text", "embeddings.image", "embeddings.video", "embeddings.audio"]
    rows = [None] * len(modality)
    seen = [0, 0, 0, 0]
    for item, m in enumerate(modality):
        rows[item] = tensors[names[m]][seen[m]]
        seen[m] += 1
    return np.stack(rows), modality


def ranked(scores, items):
    """Items ordered by (score descending, item ascending)."""
    return sorted(items, key=lambda i: (-scores[i], i))


def check_float(label, j, hits, scores):
    reference = ranked(scores, range(len(scores)))
    kth = scores[reference[len(hits) - 1]]
    seen = set()
    for rank, (item, score) in enumerate(hits):
        if item in seen:
            fail(f"{label} q{j}: item {item} answered twice")
        seen.add(item)
        if abs(score - scores[item]) > 2e-6:
            fail(f"{label} q{j} rank {rank}: item {item} scored {score:.9g}, reference {scores[item]:.9g}")
        if scores[item] < kth - 2e-6:
            fail(f"{label} q{j} rank {rank}: item {item} ({scores[item]:.9g}) is not in the top {TOP} (10th {kth:.9g})")
        if rank and (score > hits[rank - 1][1] or (score == hits[rank - 1][1] and item < hits[rank - 1][0])):
            fail(f"{label} q{j} rank {rank}: ({item}, {score:.9g}) out of order after {hits[rank - 1]}")
        clear = all(abs(scores[reference[rank]] - scores[reference[other]]) > 1e-5
                    for other in (rank - 1, rank + 1) if 0 <= other < len(reference))
        if clear and item != reference[rank]:
            fail(f"{label} q{j} rank {rank}: item {item}, reference {reference[rank]} ({scores[reference[rank]]:.9g})")


def main(work):
    queries_all = np.fromfile(f"{work}/queries.f32", dtype=np.float32).reshape(70, -1)
    lines = open(f"{work}/hits.txt").read().splitlines()
    cursor = 0
    checked = 0
    cache = {}
    while cursor < len(lines):
        _, scalar, scope, count, per_query = lines[cursor].split()
        count, per_query = int(count), int(per_query)
        cursor += 1
        answers = [[] for _ in range(count)]
        for _ in range(count * per_query):
            j, rank, item, modality, score = lines[cursor].split()
            answers[int(j)].append((int(item), float(score)))
            cursor += 1
        if scalar not in cache:
            metadata, tensors = load(f"{work}/search_{scalar}.index")
            assert metadata["uform.index.scalar"] == scalar, metadata
            cache[scalar] = rows_in_item_order(metadata, tensors, scalar)
        rows, modality = cache[scalar]
        dims = int(metadata["uform.index.dims"])
        eligible = np.arange(len(modality)) if scope == "all" else np.nonzero(modality == 1)[0]
        label = f"{scalar}/{scope}/{count}"
        if per_query != min(TOP, len(eligible)):
            fail(f"{label}: {per_query} hits per query, expected {min(TOP, len(eligible))}")
        for j in range(count):
            q = queries_all[j].astype(np.float64)
            hits = answers[j]
            scores = np.full(len(modality), -np.inf)
            if scalar == "f32":
                scores[eligible] = rows[eligible].astype(np.float64) @ q
            elif scalar == "f16":
                scores[eligible] = rows[eligible].astype(np.float64) @ q
            elif scalar == "bf16":
                scores[eligible] = bf16_widen(rows[eligible]).astype(np.float64) @ bf16_widen(bf16_round(queries_all[j])).astype(np.float64)
            elif scalar == "i8":
                q8 = np.clip(np.rint(q * 127.0), -127, 127).astype(np.int64)
                dots = rows[eligible].astype(np.int64) @ q8
                scores[eligible] = (dots / 16129.0).astype(np.float32)
            else:
                bits = np.unpackbits(rows[eligible], axis=1)[:, :dims]
                query_bits = (queries_all[j] > 0).astype(np.uint8)
                distance = np.full(len(modality), 1 << 30)
                distance[eligible] = (bits != query_bits).sum(axis=1)
                signs = np.where(np.unpackbits(rows, axis=1)[:, :dims] == 1, 1.0, -1.0)
                exact = np.full(len(modality), -np.inf)
                exact[eligible] = signs[eligible] @ q / np.sqrt(dims)
                pool = sorted(eligible, key=lambda i: (distance[i], i))[:B1_CANDIDATES]
                expected = ranked(exact, pool)[:TOP]
                got = [item for item, _ in hits]
                if got != expected:
                    fail(f"{label} q{j}: answered {got}, reference {expected}")
                for item, score in hits:
                    if abs(score - exact[item]) > 1e-6:
                        fail(f"{label} q{j}: item {item} scored {score:.9g}, reference {exact[item]:.9g}")
                true_top = ranked(exact, eligible)[:TOP]
                if set(true_top) <= set(pool) and got != true_top:
                    fail(f"{label} q{j}: the candidates hold the exact top {TOP} {true_top}, answered {got}")
                if j == 0 and scope == "all" and got[:4] != [42, 100, 700, 1500]:
                    fail(f"{label} q0: ties answered {got[:4]}, expected [42, 100, 700, 1500]")
                continue
            if scalar == "i8":
                expected = ranked(scores, eligible)[:TOP]
                got = [item for item, _ in hits]
                if got != expected:
                    fail(f"{label} q{j}: answered {got}, reference {expected}")
                for item, score in hits:
                    if np.float32(score) != np.float32(scores[item]):
                        fail(f"{label} q{j}: item {item} scored {score!r}, reference {scores[item]!r}")
            else:
                check_float(label, j, hits, scores)
            if j == 0 and scope == "all" and [item for item, _ in hits[:4]] != [42, 100, 700, 1500]:
                fail(f"{label} q0: ties answered {[item for item, _ in hits[:4]]}, expected [42, 100, 700, 1500]")
            checked += 1
    print(f"{checked} float/i8 queries checked; {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
