"""Indexes built by the members of a mesh from Python (``uform.Index.build(..., mesh=m)``; issue 35,
part 3): two member processes on loopback against one process with no mesh.

* From vectors: each member maps the whole .npy matrix and stores its block; member 0 writes the
  index and, with ann="IVF32,Flat", the members build the structure together (member 0 trains on a
  sample drawn from both blocks, each adds its own rows, member 0 merges the lists). The .index and
  .faiss must be one process's bytes, the approximate answers the same ids and scores, and the exact
  answers NumPy's (float64 products of the stored rows, computed here, not by the engine).
* Vectors with ann_ondisk=True: the members send their lists to member 0 a batch at a time, which
  lays them out in X.ivfdata; .index, .faiss and .ivfdata are one process's bytes, and python3-faiss
  opens the pair and, probing every list, answers NumPy's exact top ids.
* Encoded: a manifest of texts encoded with the tiny checkpoint in batches of 3, so each member
  encodes a different share; the index, errors file and .faiss are one process's bytes (and the
  .ivfdata, with ann_ondisk=True).
* A member whose own part fails (a float64 matrix, or an argument refused before any exchange, from
  vectors or encoding) still takes part with nothing, so the other member fails at once naming it
  instead of at the mesh's 60-second timeout.

Fixed seeds, loopback only, bounded waits.
"""

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

import uform

import members

MEMBER = Path(__file__).with_name("index_member.py")
ROWS, DIMS, QUERIES, TOP, NPROBE, TRAIN, RECIPE = 3000, 32, 16, 10, 8, 900, "IVF32,Flat"


def run_members(folder: Path, job: str, specs, timeout=60):
    """Starts one process per spec (member i of len(specs)) and answers what each printed."""
    environment = members.clean_environment()
    specs = [dict(spec, index=index, count=len(specs), directory=str(folder), job=job, timeout=timeout)
             for index, spec in enumerate(specs)]
    answers = members.run(MEMBER, folder, job, [(spec, environment) for spec in specs], timeout + 30, "a member")
    assert len(answers) == len(specs)
    return answers


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("index_mesh")
    generator = np.random.default_rng(35)
    centres = generator.standard_normal((30, DIMS))
    rows = centres[generator.integers(0, 30, ROWS)] + 0.3 * generator.standard_normal((ROWS, DIMS))
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    queries = rows[generator.integers(0, ROWS, QUERIES)] + 0.05 * generator.standard_normal((QUERIES, DIMS))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    np.save(folder / "rows.npy", rows)
    return folder, rows, queries


def answers(path: Path, queries, exact: bool):
    with uform.Index.open(path) as index:
        if not exact:
            assert index.open_ann().count == ROWS
        hits = index.search(queries, top=TOP, nprobe=0 if exact else NPROBE, exact=exact)
        return np.asarray(hits.items), np.asarray(hits.scores)


def test_vectors_two_members_equal_one_process(corpus):
    folder, rows, queries = corpus
    alone = folder / "alone.index"
    result = uform.Index.build(vectors=rows, out=alone, ann=RECIPE, ann_train=TRAIN, ann_threads=1)
    assert result.indexed == ROWS
    spec = {"kind": "vectors", "vectors": str(folder / "rows.npy"), "out": str(folder / "members.index"),
            "ann": RECIPE, "ann_train": TRAIN}
    members = run_members(folder, "vectors", [spec, spec])
    for answer in members:
        assert answer == {"indexed": ROWS, "failed": 0}, answer
    shared = folder / "members.index"
    assert shared.read_bytes() == alone.read_bytes()
    structure = alone.with_suffix(".faiss").read_bytes()
    assert len(structure) > ROWS * DIMS * 4  # the lists hold every row
    assert shared.with_suffix(".faiss").read_bytes() == structure

    items, scores = answers(shared, queries, exact=False)
    reference_items, reference_scores = answers(alone, queries, exact=False)
    assert items.shape == (QUERIES, TOP)
    assert np.array_equal(items, reference_items) and np.array_equal(scores, reference_scores)

    exact_items, exact_scores = answers(shared, queries, exact=True)
    products = check_with_numpy(exact_items, exact_scores, rows, queries)
    # The approximate answers found most of the exact best items.
    assert np.mean([order_best in items[q] for q, order_best in enumerate(products.argmax(axis=1))]) >= 0.9


def check_with_numpy(items, scores, rows, queries):
    """Exact answers against NumPy's, in float64 from the matrix itself: the same items (where two
    candidates are not within rounding of each other) and scores within F32 rounding: F32 sums of
    32 products of unit rows, measured at most 2.4e-7 from float64 here; 1e-6 leaves four times that,
    and one score moved by 2e-6 fails. Answers NumPy's products [queries, rows]."""
    assert items.shape == (QUERIES, TOP) and scores.shape == (QUERIES, TOP)
    products = queries.astype(np.float64) @ rows.astype(np.float64).T
    for q in range(QUERIES):
        order = np.argsort(-products[q], kind="stable")[:TOP + 1]
        expected = products[q][order]
        assert np.allclose(scores[q], expected[:TOP], rtol=0, atol=1e-6), q
        distinct = np.diff(expected) < -2e-6  # a gap after position k: the first k + 1 are settled
        for k in range(TOP):
            if distinct[k] and (k == 0 or distinct[k - 1]):
                assert items[q][k] == order[k], (q, k)
    return products


def test_vectors_two_members_ondisk_equal_one_process(corpus):
    """ann_ondisk=True over a mesh (each member sends its lists to member 0 a batch at a time): the
    .index, .faiss and .ivfdata are one process's bytes; python3-faiss opens the pair (its lists on
    disk) and, probing every list, finds NumPy's exact answers."""
    import faiss

    folder, rows, queries = corpus
    alone, shared = folder / "ondisk-alone", folder / "ondisk-members"
    alone.mkdir(), shared.mkdir()  # folders of their own: the files have the same names
    result = uform.Index.build(vectors=rows, out=alone / "X.index", ann=RECIPE, ann_train=TRAIN, ann_threads=1,
                               ann_ondisk=True)
    assert result.indexed == ROWS
    spec = {"kind": "vectors", "vectors": str(folder / "rows.npy"), "out": str(shared / "X.index"), "ann": RECIPE,
            "ann_train": TRAIN, "ann_ondisk": True}
    for answer in run_members(folder, "vectors-ondisk", [spec, spec]):
        assert answer == {"indexed": ROWS, "failed": 0}, answer
    assert (alone / "X.ivfdata").stat().st_size == ROWS * (DIMS * 4 + 8)  # every row's codes and id
    for name in ("X.index", "X.faiss", "X.ivfdata"):
        assert (shared / name).read_bytes() == (alone / name).read_bytes(), name
    assert sorted(path.name for path in shared.iterdir()) == ["X.faiss", "X.index", "X.ivfdata"]

    structure = faiss.read_index(str(shared / "X.faiss"), faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)
    ivf = faiss.extract_index_ivf(structure)
    assert structure.ntotal == ROWS and isinstance(faiss.downcast_InvertedLists(ivf.invlists), faiss.OnDiskInvertedLists)
    ivf.nprobe = ivf.nlist  # every list: the scan is exhaustive, so recall allows NumPy's exact ids
    distances, ids = structure.search(queries, TOP)
    check_with_numpy(ids, distances, rows, queries)
    # The engine opens the pair and its approximate search answers what FAISS's does.
    items, scores = answers(shared / "X.index", queries, exact=False)
    ivf.nprobe = NPROBE
    distances, ids = structure.search(queries, TOP)
    assert all(set(ids[q]) == set(items[q].tolist()) for q in range(QUERIES))


@pytest.mark.parametrize("ondisk", [False, True])
def test_encoded_two_members_equal_one_process(tmp_path, ondisk):
    checkpoint = os.environ.get("UFORM_TEST_CHECKPOINT") or os.environ["UFORM_PYTEST_TINY"]
    words = ["a", "red", "cat", "on", "the", "mat", "blue", "sky", "over", "sea"]
    generator = np.random.default_rng(36)
    lines = [{"text": " ".join(generator.choice(words, size=2 + i % 4)), "id": f"t{i}"} for i in range(20)]
    manifest = tmp_path / "texts.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "alone").mkdir(), (tmp_path / "members").mkdir()  # the same names: a .faiss names its .ivfdata
    alone = tmp_path / "alone" / "X.index"
    with uform.Model.load_ram(None, checkpoint) as model:
        result = uform.Index.build(model, manifests=[manifest], out=alone, batch=3, ann="IVF2,Flat", ann_train=12,
                                   ann_threads=1, ann_ondisk=ondisk)
    assert (result.indexed, result.failed) == (20, 0)
    spec = {"kind": "encode", "checkpoint": checkpoint, "manifest": str(manifest), "batch": 3,
            "out": str(tmp_path / "members" / "X.index"), "ann": "IVF2,Flat", "ann_train": 12, "ann_ondisk": ondisk}
    members = run_members(tmp_path, "encode", [spec, spec])
    assert members == [{"indexed": 20, "failed": 0}] * 2, members
    shared = tmp_path / "members" / "X.index"
    assert shared.read_bytes() == alone.read_bytes()
    assert shared.with_suffix(".faiss").read_bytes() == alone.with_suffix(".faiss").read_bytes()
    # With ann_ondisk the lists are in the .ivfdata beside it (20 rows' codes and ids), one process's too.
    assert shared.with_suffix(".ivfdata").exists() == ondisk
    if ondisk:
        lists = shared.with_suffix(".ivfdata").read_bytes()
        assert len(lists) % 20 == 0 and len(lists) > 20 * 8
        assert lists == alone.with_suffix(".ivfdata").read_bytes()
    with uform.Index.open(shared) as index:
        assert index.open_ann().count == 20


@pytest.mark.parametrize("kind, change, named", [
    ("vectors", {"vectors": "wide.npy"}, "float64"),  # refused while making its block
    ("vectors", {"ann_train": -1}, "ann_train"),       # refused before any exchange
    ("encode", {"ann_train": -1}, "ann_train"),
])
def test_a_member_that_fails_stops_the_other(corpus, kind, change, named):
    folder, rows, _ = corpus
    np.save(folder / "wide.npy", rows.astype(np.float64))  # not float32 or float16
    manifest = folder / "few.jsonl"
    manifest.write_text("".join(json.dumps({"text": f"text {i}", "id": f"t{i}"}) + "\n" for i in range(6)))
    job = f"failed-{kind}-{named}"
    good = {"kind": kind, "vectors": str(folder / "rows.npy"), "out": str(folder / f"{job}.index"), "ann": RECIPE,
            "ann_train": TRAIN, "checkpoint": os.environ.get("UFORM_TEST_CHECKPOINT") or os.environ["UFORM_PYTEST_TINY"],
            "manifest": str(manifest), "batch": 2}
    bad = dict(good, **{key: str(folder / value) if key == "vectors" else value for key, value in change.items()})
    start = time.monotonic()
    first, second = run_members(folder, job, [good, bad])
    assert time.monotonic() - start < 30  # well inside the 60-second mesh timeout
    assert second["error"]["class"] == "InvalidArgument" and named in second["error"]["message"], second
    assert first["error"]["class"] == "PeerLost" and "member 1" in first["error"]["message"], first
    assert not (folder / f"{job}.index").exists() and not (folder / f"{job}.faiss").exists()
