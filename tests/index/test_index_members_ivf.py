"""An IVF structure built by K members together (issue 35, part 3; uform_index_ann_build_members).

`uform index --vectors V.npy --ann=RECIPE --processes K`: member 0 trains on a sample gathered from
every member, the members add their own blocks under global ids, and member 0 merges the inverted
lists with FAISS's merge_from. Checked here:

* K = 1, 2, 3 and a build without a mesh write the same .faiss bytes, and the engine's approximate
  answers (ids and scores) through each are the same;
* independently of the engine, with Debian's python3-faiss: the file opens, every item is in
  exactly one list under its own number, in the list whose centroid NumPy finds nearest (float64),
  with its row stored bit for bit (IVF…,Flat), and faiss's own search of the same queries answers
  the engine's ids;
* a member whose FAISS add fails (a stand-in module, tests/index/faiss_failing_add.c) makes every
  member fail at once with its message, and nothing is written.

4,000 clustered rows × 32 dims, IVF64,Flat and IVF64,PQ8np, loopback only, fixed seeds. Run by CTest
with UFORM_LIBRARY, PYTHONPATH, UFORM_PYTEST_CLI and UFORM_TEST_FAILING_FAISS set. The OPQ case
is test_index_members_opq.py (too slow for `make test`: `make test-ann-members-opq`).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import uform

CLI = os.environ.get("UFORM_PYTEST_CLI", "")
FAILING_MODULE = os.environ.get("UFORM_TEST_FAILING_FAISS", "")
ROWS, DIMS, QUERIES, TOP, NPROBE, TRAIN = 4000, 32, 24, 10, 8, 1100
RECIPES = ["IVF64,Flat", "IVF64,PQ8np"]


def run(*arguments, expect=0, timeout=120, environment=None):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout,
                              env=environment)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


def clustered(seed, rows, dims, centres):
    generator = np.random.default_rng(seed)
    middle = generator.standard_normal((centres, dims))
    matrix = middle[generator.integers(0, centres, rows)] + 0.3 * generator.standard_normal((rows, dims))
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    queries = matrix[generator.integers(0, rows, QUERIES)] + 0.05 * generator.standard_normal((QUERIES, dims))
    return matrix, (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ivf_members")
    rows, queries = clustered(35, ROWS, DIMS, 40)
    np.save(folder / "rows.npy", rows)
    np.save(folder / "queries.npy", queries)
    return folder, rows, queries


def build(folder, name, members, recipe, source="rows.npy", train=0):
    out = folder / f"{name}-k{members}.index"
    mesh = ["--processes", members] if members else []
    sample = ["--ann-train", train] if train else []
    run("index", "--vectors", folder / source, "--out", out, f"--ann={recipe}", "--ann-threads", 1, "--quiet", *mesh,
        *sample)
    return out


def engine_answers(index_path, queries):
    index = uform.Index.open(str(index_path))
    description = index.open_ann()
    assert description.count == ROWS
    hits = index.search(queries, top=TOP, nprobe=NPROBE, rerank=0)  # FAISS's own scores, PQ recipes too
    return np.asarray(hits.items), np.asarray(hits.scores)


def check_lists(structure, rows, flat):
    """Every item once, under its own id, in the list NumPy's float64 argmax picks, its codes exact (Flat)."""
    import faiss

    ivf = faiss.extract_index_ivf(structure)
    centroids = ivf.quantizer.reconstruct_n(0, ivf.nlist).astype(np.float64)
    scores = rows.astype(np.float64) @ centroids.T
    best = scores.argmax(axis=1)
    ordered = np.sort(scores, axis=1)
    near_tie = ordered[:, -1] - ordered[:, -2] < 1e-5  # where float32 and float64 may pick differently
    invlists = ivf.invlists
    seen = np.zeros(ROWS, dtype=np.int64)
    for number in range(ivf.nlist):
        size = invlists.list_size(number)
        if size == 0:
            continue
        ids = faiss.rev_swig_ptr(invlists.get_ids(number), size).copy()
        assert (np.diff(ids) > 0).all(), f"list {number}: ids not in item order"
        seen[ids] += 1
        assert ((best[ids] == number) | near_tie[ids]).all(), f"list {number} holds items nearer another centroid"
        if flat:
            codes = faiss.rev_swig_ptr(invlists.get_codes(number), size * ivf.code_size).copy()
            assert np.array_equal(codes.view(np.float32).reshape(size, DIMS), rows[ids])
    assert (seen == 1).all(), f"{(seen == 0).sum()} items missing, {(seen > 1).sum()} repeated"


@pytest.mark.parametrize("recipe", RECIPES)
def test_members_build_the_same_structure(corpus, recipe):
    import faiss

    folder, rows, queries = corpus
    name = recipe.replace(",", "_")
    # A sample of TRAIN of the 4,000 rows, so the members' blocks each hold a different share of it
    # (all rows would hide a sampling that differed between K); 0: no mesh at all.
    # (The PQ recipe's build without a mesh is left out for time: PQ training is most of this test.)
    counts = (0, 1, 2, 3) if recipe.endswith("Flat") else (1, 2, 3)
    files = {k: build(folder, name, k, recipe, train=TRAIN) for k in counts}
    structures = {k: f.with_suffix(".faiss") for k, f in files.items()}
    reference = structures[1].read_bytes()
    assert len(reference) > ROWS  # a structure with lists, not an empty file
    for k in counts[1:] + counts[:1]:
        assert structures[k].read_bytes() == reference, f"K = {k} wrote other bytes than K = 1"

    answers = {k: engine_answers(files[k], queries) for k in (1, 2, 3)}
    items, scores = answers[1]
    assert items.shape == (QUERIES, TOP) and (items < ROWS).all()
    for k in (2, 3):
        assert np.array_equal(answers[k][0], items) and np.array_equal(answers[k][1], scores), k

    structure = faiss.read_index(str(structures[2]))
    assert structure.ntotal == ROWS and structure.d == DIMS
    check_lists(structure, rows, recipe.endswith("Flat"))
    faiss.extract_index_ivf(structure).nprobe = NPROBE
    distances, ids = structure.search(queries, TOP)
    # faiss leaves equal scores in heap order, the engine orders them by item: compare as sets, and
    # exactly where no two scores of a query are equal.
    for q in range(QUERIES):
        assert set(ids[q]) == set(items[q].tolist()), q
        if len(np.unique(distances[q])) == TOP:
            assert ids[q].tolist() == items[q].tolist(), q
    # The engine's approximate search is FAISS's own search of this structure at the same nprobe: the
    # scores are the same computation, so they must be the same floats (measured: equal for both recipes).
    assert np.array_equal(np.sort(distances, axis=1), np.sort(scores, axis=1))
    # The approximate answers are worth having: NumPy's exact best item is found for most queries.
    exact_best = (queries.astype(np.float64) @ rows.astype(np.float64).T).argmax(axis=1)
    assert np.mean([exact_best[q] in items[q] for q in range(QUERIES)]) >= 0.9


# With --ann-ondisk the members add in rounds and send member 0 each batch's lists (the same
# failures must stop everyone, and leave neither the lists file nor a temporary one behind).
@pytest.mark.parametrize("ondisk", [[], ["--ann-ondisk"]], ids=["memory", "ondisk"])
def test_member_whose_add_fails_fails_every_member(corpus, tmp_path, ondisk):
    folder, _, _ = corpus
    assert FAILING_MODULE and Path(FAILING_MODULE).exists(), "UFORM_TEST_FAILING_FAISS names no module"
    out = tmp_path / "failed.index"
    start = time.monotonic()
    members = []
    for rank in (0, 1, 2):
        environment = dict(os.environ)
        if rank == 1:  # member 1's FAISS module refuses every add (the others' is the real one)
            environment["UFORM_FAISS_MODULE"] = FAILING_MODULE
        members.append(subprocess.Popen(
            [CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--ann=IVF64,Flat", "--mesh",
             str(tmp_path), "--job", "add", "--index", str(rank), "--count", "3", "--mesh-timeout", "60",
             "--mesh-address", "127.0.0.1", "--quiet", *ondisk], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    finished = [m.communicate(timeout=90) for m in members]
    # Well inside the 60-second mesh timeout: the failure travels with the members' statuses.
    assert time.monotonic() - start < 30, finished
    for rank, (member, (_, err)) in enumerate(zip(members, finished)):
        assert member.returncode == 1, (rank, err)
        assert "injected add failure" in err, (rank, err)
        if rank != 1:
            assert "member 1 of 3 failed while adding its rows" in err, (rank, err)
    assert not out.with_suffix(".faiss").exists()
    assert not list(tmp_path.glob("*ivfdata*")) and not list(tmp_path.glob(".*")), list(tmp_path.iterdir())


@pytest.mark.parametrize("ondisk", [[], ["--ann-ondisk"]], ids=["memory", "ondisk"])
def test_member_that_dies_while_adding_fails_the_others(corpus, tmp_path, ondisk):
    folder, _, _ = corpus
    out = tmp_path / "died.index"
    start = time.monotonic()
    members = []
    for rank in (0, 1):
        environment = dict(os.environ)
        if rank == 1:  # member 1 ends its process inside FAISS's add, as a crash would
            environment["UFORM_FAISS_MODULE"] = FAILING_MODULE
            environment["UFORM_TEST_FAILING_FAISS_DIE"] = "1"
        members.append(subprocess.Popen(
            [CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--ann=IVF64,Flat", "--mesh",
             str(tmp_path), "--job", "die", "--index", str(rank), "--count", "2", "--mesh-timeout", "5",
             "--mesh-address", "127.0.0.1", "--quiet", *ondisk], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    finished = [m.communicate(timeout=60) for m in members]
    assert time.monotonic() - start < 30, finished
    assert members[1].returncode != 0
    assert members[0].returncode == 1, finished[0]
    assert "left" in finished[0][1] or "within 5 s" in finished[0][1], finished[0][1]
    assert not out.with_suffix(".faiss").exists()
    assert not list(tmp_path.glob("*ivfdata*")) and not list(tmp_path.glob(".*")), list(tmp_path.iterdir())


@pytest.mark.parametrize("recipe,shared", [("PCA16,IVF64,Flat", True), ("IVF64,Flat,RFlat", False)])
def test_which_recipes_share_the_adds(corpus, tmp_path, recipe, shared):
    """Mergeable recipes make member 1 add its rows (its failing module then fails the run); graphs and
    refined IVFs are built by member 0 alone, so member 1's module is never asked to add."""
    folder, _, _ = corpus
    out = tmp_path / "route.index"
    members = []
    for rank in (0, 1):
        environment = dict(os.environ)
        if rank == 1:
            environment["UFORM_FAISS_MODULE"] = FAILING_MODULE
        members.append(subprocess.Popen(
            [CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), f"--ann={recipe}", "--ann-train",
             "1100", "--mesh", str(tmp_path), "--job", "route", "--index", str(rank), "--count", "2", "--mesh-timeout",
             "60", "--mesh-address", "127.0.0.1", "--quiet"], env=environment, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    finished = [m.communicate(timeout=90) for m in members]
    if shared:
        assert [m.returncode for m in members] == [1, 1], finished
        assert "member 1 of 2 failed while adding its rows" in finished[0][1], finished[0]
    else:
        assert [m.returncode for m in members] == [0, 0], finished
        assert out.with_suffix(".faiss").exists()


def test_recipe_faiss_refuses_fails_every_member(corpus, tmp_path):
    """Member 0 makes the structure; FAISS's refusal reaches member 1 with member 0's words."""
    folder, _, _ = corpus
    out = tmp_path / "refused.index"
    finished = run("index", "--vectors", folder / "rows.npy", "--out", out, "--ann=IVF64,Blah", "--processes", 2,
                   expect=1)
    assert "[0] uform: UForm: invalid_argument" in finished.stderr, finished.stderr
    assert "[1] uform: UForm: invalid_argument" in finished.stderr, finished.stderr
    assert "member 0 of 2 failed to make the structure: FAISS refused the recipe 'IVF64,Blah'" in finished.stderr
    assert not out.with_suffix(".faiss").exists()


def test_training_longer_than_the_mesh_timeout(corpus, tmp_path):
    """Member 0 trains for 3 s against a 2-second mesh timeout: the members answer a round every
    100 ms meanwhile, so nobody times out, and the file is the one K = 1 writes."""
    folder, _, _ = corpus
    reference = build(folder, "IVF64_Flat", 1, "IVF64,Flat", train=TRAIN)  # as in the first test
    out = tmp_path / "slow.index"
    start = time.monotonic()
    members = []
    for rank in (0, 1):
        environment = dict(os.environ)
        if rank == 0:
            environment["UFORM_FAISS_MODULE"] = FAILING_MODULE
            environment["UFORM_TEST_FAILING_FAISS_SLOW_TRAIN"] = "3"
        members.append(subprocess.Popen(
            [CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--ann=IVF64,Flat", "--ann-train",
             str(TRAIN), "--ann-threads", "1", "--mesh", str(tmp_path), "--job", "slow", "--index", str(rank), "--count",
             "2", "--mesh-timeout", "2", "--mesh-address", "127.0.0.1", "--quiet"], env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    finished = [m.communicate(timeout=90) for m in members]
    assert [m.returncode for m in members] == [0, 0], finished
    assert time.monotonic() - start >= 3  # the training did sleep
    assert out.with_suffix(".faiss").read_bytes() == reference.with_suffix(".faiss").read_bytes()
