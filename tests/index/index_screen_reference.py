"""Float64 brute force for test_index_search_screen (many queries over F32 rows).

    python3 index_screen_reference.py WORK_DIR

Reads rows_<dims>.f32, queries_<dims>.f32 and the engine's answers (hits.txt: "# dims class"
headers, then "query rank item score" lines), scores every row of every query in float64, and
checks each answer of 10 hits:
  - every score within tol(item) = 8e-6 * |q| * |x_item| + 1e-35 of the float64 score (F32 sums
    of at most 64 products);
  - hits in order of the engine's score, equal scores by item;
  - nothing missing: every row whose float64 score beats the engine's 10th hit's by more than
    both tolerances is among the hits, and every hit is within both tolerances of the reference's
    10th score;
  - the rank of every reference hit whose score is apart from its neighbours' by more than their
    tolerances is the engine's rank too (the planted rows: 1e-4 or 2e-5 apart);
  - query 0 (whose best planted row is copied to items 0 and 11999) ties three ways, in item
    order; the zero query answers items 0-9.
Exit status 0 when everything holds; every failure is printed with both values.
"""

import os
import sys

import numpy as np

TOP = 10
ROWS = 12000
QUERIES = 300
PLANTED_BEST_QUERY0 = (0 * 12 + 11) * 11 + 7  # query 0's best planted row, also at items 0 and 11999
failures = 0


def fail(message):
    global failures
    failures += 1
    if failures <= 40:
        print("FAIL:", message)


def check(label, rows, queries, answers):
    norms = np.sqrt((rows.astype(np.float64) ** 2).sum(axis=1))
    scores = queries.astype(np.float64) @ rows.astype(np.float64).T  # [queries, rows]
    for j in range(QUERIES):
        hits = answers.get(j, [])
        if len(hits) != TOP:
            fail(f"{label} query {j}: {len(hits)} hits, expected {TOP}")
            continue
        s = scores[j]
        tol = 8e-6 * np.linalg.norm(queries[j].astype(np.float64)) * norms + 1e-35
        items = [item for item, _ in hits]
        for rank, (item, score) in enumerate(hits):
            if abs(score - s[item]) > tol[item]:
                fail(f"{label} query {j} rank {rank}: item {item} scored {score!r}, float64 {s[item]!r}")
            if rank and (hits[rank - 1][1] < score or (hits[rank - 1][1] == score and hits[rank - 1][0] > item)):
                fail(f"{label} query {j} rank {rank}: {hits[rank - 1]} before {(item, score)}")
        order = np.lexsort((np.arange(ROWS), -s))
        reference = order[:TOP]
        tenth = order[TOP - 1]
        worst = items[-1]
        for r in np.nonzero(s > s[worst] + tol[worst] + tol)[0]:
            if r not in items:
                fail(f"{label} query {j}: row {r} (float64 {s[r]!r}) missing; the 10th hit is item {worst} ({s[worst]!r})")
        for item in items:
            if s[item] < s[tenth] - tol[tenth] - tol[item]:
                fail(f"{label} query {j}: item {item} (float64 {s[item]!r}) below the reference's 10th ({s[tenth]!r})")
        for rank in range(TOP):
            r = reference[rank]
            apart = all(abs(s[r] - s[order[k]]) > tol[r] + tol[order[k]] for k in (rank - 1, rank + 1) if 0 <= k < ROWS)
            if apart and items[rank] != r:
                fail(f"{label} query {j} rank {rank}: item {items[rank]}, the reference's {r} (float64 {s[r]!r})")
        if j == 0:  # the three copies tie: next to each other, in item order
            copies = sorted([0, PLANTED_BEST_QUERY0, ROWS - 1])
            at = items.index(copies[0]) if copies[0] in items else -1
            if at < 0 or items[at:at + 3] != copies:
                fail(f"{label} query 0: hits {items}, expected the copies {copies} in a row")
        if j == QUERIES - 1 and items != list(range(TOP)):
            fail(f"{label} zero query: items {items}, expected 0-9")



def main():
    work = sys.argv[1]
    sections = {}
    current = None
    with open(os.path.join(work, "hits.txt")) as handle:
        for line in handle:
            if line.startswith("#"):
                _, dims, name = line.split()
                current = {}
                sections.setdefault(int(dims), []).append((name, current))
                continue
            j, rank, item, score = line.split()
            current.setdefault(int(j), []).append((int(item), float(score)))
    if not sections:
        fail("hits.txt holds no answers")
    for dims in (64, 37):
        if dims not in sections:
            fail(f"no answers for {dims} dimensions")
            continue
        rows = np.fromfile(os.path.join(work, f"rows_{dims}.f32"), dtype=np.float32).reshape(ROWS, dims)
        queries = np.fromfile(os.path.join(work, f"queries_{dims}.f32"), dtype=np.float32).reshape(QUERIES, dims)
        for name, answers in sections[dims]:
            check(f"{dims} dims, {name}", rows, queries, answers)
            print(f"{dims} dims, {name}: {len(answers)} queries checked")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
