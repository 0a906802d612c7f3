"""IVF structures whose inverted lists are kept on disk (uform_index_ann_options_t.ondisk,
`uform index --ann=IVF... --ann-ondisk`; docs/indexes.md, "On-disk lists").

Checked here:

* the on-disk build without a mesh and with K = 2 members answers the same ids and the same score
  floats as the in-memory build (the same lists searched the same way), and K = 1 and K = 2 write
  the same bytes (.faiss and .ivfdata);
* independently of the engine, with Debian's python3-faiss: the pair opens with
  IO_FLAG_ONDISK_SAME_DIR, its lists are on disk, every item is in exactly one list under its own
  number in item order with its row stored bit for bit (IVF…,Flat), and faiss's own search finds
  the engine's ids and scores;
* the folder can be moved (the .faiss names its lists file without a folder);
* a lists file cut short, another build's lists of the same size, a damaged byte or a missing file
  is refused (FormatError / IoError) with a message naming the lists file; FAISS bytes naming a
  lists file under a record that does not (version 1) are refused, a newer record is unsupported;
  a recipe without inverted lists is refused;
* Python's Index.build_ann(ondisk=True) writes the same pair as the command line.

4,000 clustered rows × 32 dims, IVF64,Flat and IVF16,PQ8x4np (4-bit codes: quick to train), fixed seeds, loopback only. Run by
CTest with UFORM_LIBRARY, PYTHONPATH and UFORM_PYTEST_CLI set.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import uform

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_index_members_ivf import clustered  # noqa: E402  (the same mixture: 40 centres, QUERIES queries)

CLI = os.environ.get("UFORM_PYTEST_CLI", "")
ROWS, DIMS, QUERIES, TOP, NPROBE, TRAIN = 4000, 32, 24, 10, 8, 1100
RECIPES = ["IVF64,Flat", "IVF16,PQ8x4np"]
# Three batches of 65,536 adds and two rows, in few dims (cheap to build): split among three
# members, the blocks hold 65,536, 65,537 and 65,537 rows; between two, 98,305 each.
BIG_ROWS, BIG_DIMS = 3 * 65536 + 2, 8


def run(*arguments, expect=0):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=120)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ondisk")
    rows, queries = clustered(42, ROWS, DIMS, 40)
    other, _ = clustered(43, ROWS, DIMS, 40)
    np.save(folder / "rows.npy", rows)
    np.save(folder / "other.npy", other)
    return folder, rows, queries


def build(folder, recipe, members=0, ondisk=True, source="rows.npy"):
    """X.index (and X.faiss, X.ivfdata) in a folder of its own, so that files of different builds have
    the same names and can be compared byte for byte."""
    kind = ("disk" if ondisk else "mem") + f"-k{members}-" + recipe.replace(",", "_") + "-" + source[:-4]
    target = folder / kind
    target.mkdir(exist_ok=True)
    mesh = ["--processes", members] if members else []
    flag = ["--ann-ondisk"] if ondisk else []
    run("index", "--vectors", folder / source, "--out", target / "X.index", f"--ann={recipe}", "--ann-train", TRAIN,
        "--ann-threads", 1, "--quiet", *mesh, *flag)
    return target


def answers(target, queries):
    index = uform.Index.open(str(target / "X.index"))
    assert index.open_ann().count == ROWS
    hits = index.search(queries, top=TOP, nprobe=NPROBE, rerank=0)  # FAISS's own scores, PQ recipes too
    return np.asarray(hits.items), np.asarray(hits.scores)


def check_lists_with_faiss(target, rows, flat):
    """python3-faiss opens the pair; every item once, under its number, in item order; Flat codes exact."""
    import faiss

    count, dims = rows.shape
    structure = faiss.read_index(str(target / "X.faiss"), faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)
    assert structure.ntotal == count and structure.d == dims
    ivf = faiss.extract_index_ivf(structure)
    invlists = faiss.downcast_InvertedLists(ivf.invlists)
    assert isinstance(invlists, faiss.OnDiskInvertedLists), type(invlists)
    seen = np.zeros(count, dtype=np.int64)
    for number in range(ivf.nlist):
        size = invlists.list_size(number)
        if size == 0:
            continue
        ids = faiss.rev_swig_ptr(invlists.get_ids(number), size).copy()
        assert (np.diff(ids) > 0).all(), f"list {number}: ids not in item order"
        seen[ids] += 1
        if flat:
            codes = faiss.rev_swig_ptr(invlists.get_codes(number), size * ivf.code_size).copy()
            assert np.array_equal(codes.view(np.float32).reshape(size, dims), rows[ids])
    assert (seen == 1).all(), f"{(seen == 0).sum()} items missing, {(seen > 1).sum()} repeated"
    return structure


@pytest.mark.parametrize("recipe", RECIPES)
def test_ondisk_answers_as_in_memory(corpus, recipe):
    import faiss

    folder, rows, queries = corpus
    memory = build(folder, recipe, ondisk=False)
    alone, one, two = build(folder, recipe), build(folder, recipe, members=1), build(folder, recipe, members=2)
    assert (alone / "X.ivfdata").stat().st_size >= ROWS * 8  # codes and ids, not an empty file
    assert (memory / "X.faiss").stat().st_size > (alone / "X.faiss").stat().st_size + ROWS * 8
    for name in ("X.faiss", "X.ivfdata"):
        reference = (one / name).read_bytes()
        for other in (alone, two):
            assert (other / name).read_bytes() == reference, (other, name)

    items, scores = answers(memory, queries)
    assert items.shape == (QUERIES, TOP) and (items < ROWS).all()
    for target in (alone, two):
        disk_items, disk_scores = answers(target, queries)
        assert np.array_equal(disk_items, items) and np.array_equal(disk_scores, scores), target

    structure = check_lists_with_faiss(two, rows, recipe.endswith("Flat"))
    faiss.extract_index_ivf(structure).nprobe = NPROBE
    distances, ids = structure.search(queries, TOP)
    for q in range(QUERIES):  # faiss leaves equal scores in heap order, the engine orders them by item
        assert set(ids[q]) == set(items[q].tolist()), q
    assert np.array_equal(np.sort(distances, axis=1), np.sort(scores, axis=1))


def test_folder_moves_with_its_lists(corpus, tmp_path):
    folder, _, queries = corpus
    source = build(folder, "IVF64,Flat")
    moved = tmp_path / "elsewhere"
    shutil.copytree(source, moved)
    reference = answers(source, queries)
    shutil.rmtree(source)
    here = os.getcwd()
    os.chdir(folder)  # the lists file is found beside the .faiss, not in the working folder
    try:
        items, scores = answers(moved, queries)
    finally:
        os.chdir(here)
    assert np.array_equal(items, reference[0]) and np.array_equal(scores, reference[1])


def refusal(target):
    index = uform.Index.open(str(target / "X.index"))
    with pytest.raises(uform.Error) as caught:
        index.open_ann()
    return caught.value


def test_lists_that_do_not_belong_are_refused(corpus, tmp_path):
    folder, _, _ = corpus
    source, foreign = build(folder, "IVF64,Flat"), build(folder, "IVF64,Flat", source="other.npy")
    lists = source / "X.ivfdata"
    good = lists.read_bytes()
    assert len(foreign.joinpath("X.ivfdata").read_bytes()) == len(good)  # same shape: only the hash tells

    lists.write_bytes(good[: len(good) // 2])
    error = refusal(source)
    assert isinstance(error, uform.FormatError), error
    assert "X.ivfdata' has" in str(error) and "pairing record" in str(error), error

    shutil.copyfile(foreign / "X.ivfdata", lists)
    error = refusal(source)
    assert isinstance(error, uform.FormatError) and "does not hash" in str(error), error

    damaged = bytearray(good)
    damaged[len(good) // 3] ^= 1
    lists.write_bytes(bytes(damaged))
    error = refusal(source)
    assert isinstance(error, uform.FormatError) and "does not hash" in str(error), error

    lists.unlink()
    error = refusal(source)
    assert isinstance(error, uform.IoError) and "X.ivfdata" in str(error), error

    lists.write_bytes(good)  # and back: the same pair opens again
    assert uform.Index.open(str(source / "X.index")).open_ann().count == ROWS


def test_records_that_do_not_say_so_are_refused(corpus):
    """The pairing record, not FAISS's bytes, decides whether a lists file is opened: an on-disk
    structure whose lists block is cut out and whose record is made version 1 again (its hash of
    FAISS's bytes still right) is refused, and a newer record version is unsupported."""
    folder, _, _ = corpus
    source = build(folder, "IVF64,Flat")
    faiss_file = source / "X.faiss"
    whole = faiss_file.read_bytes()
    record = bytearray(whole[-256:])
    assert record[:8] == b"UFORMANN" and record[8] == 2 and whole[-512:-504] == b"UFORMIVF"
    try:
        record[8] = 1
        faiss_file.write_bytes(whole[:-512] + bytes(record))
        here = os.getcwd()
        os.chdir(source)  # where FAISS itself would look for the name in its bytes
        try:
            error = refusal(source)
        finally:
            os.chdir(here)
        assert isinstance(error, uform.FormatError), error
        assert "on-disk lists file that the pairing record does not" in str(error), error
        record[8] = 3
        faiss_file.write_bytes(whole[:-256] + bytes(record))
        error = refusal(source)
        assert isinstance(error, uform.Unsupported) and "version 3" in str(error), error
    finally:
        faiss_file.write_bytes(whole)
    assert uform.Index.open(str(source / "X.index")).open_ann().count == ROWS


def test_python_builds_ondisk(corpus, tmp_path):
    """Index.build_ann(ondisk=True) writes the pair the command line writes (the same bytes)."""
    folder, _, queries = corpus
    reference = build(folder, "IVF64,Flat")
    shutil.copyfile(reference / "X.index", tmp_path / "X.index")
    index = uform.Index.open(str(tmp_path / "X.index"))
    description = index.build_ann(recipe="IVF64,Flat", train_rows=TRAIN, threads=1, ondisk=True)
    assert description.count == ROWS and description.lists == 64
    for name in ("X.faiss", "X.ivfdata"):
        assert (tmp_path / name).read_bytes() == (reference / name).read_bytes(), name


def test_recipes_without_lists_are_refused(corpus, tmp_path):
    folder, _, _ = corpus
    finished = run("index", "--vectors", folder / "rows.npy", "--out", tmp_path / "g.index", "--ann=HNSW16",
                   "--ann-ondisk", "--quiet", expect=1)
    assert "no inverted lists to keep on disk" in finished.stderr, finished.stderr
    assert not (tmp_path / "g.faiss").exists() and not (tmp_path / "g.ivfdata").exists()
    # Over a mesh, member 0's refusal reaches every member.
    finished = run("index", "--vectors", folder / "rows.npy", "--out", tmp_path / "m.index", "--ann=HNSW16",
                   "--ann-ondisk", "--processes", 2, "--quiet", expect=1)
    assert "member 0 of 2 failed to make the structure" in finished.stderr, finished.stderr
    # Without --ann there is no structure to keep on disk: a usage error.
    finished = run("index", "--vectors", folder / "rows.npy", "--out", tmp_path / "u.index", "--ann-ondisk", "--quiet",
                   expect=2)
    assert "add --ann=IVF" in finished.stderr and not (tmp_path / "u.index").exists(), finished.stderr
    assert not list(tmp_path.glob("m.*ivfdata*")) and not list(tmp_path.glob(".m.*"))


def test_members_send_their_lists_in_batches(tmp_path):
    """More rows than one batch of adds (65,536), so the members trade their lists over two rounds:
    with K = 3 member 0's block is one batch and the others' two (member 0 sits out the second
    round, whose runs come after member 2's first in the scratch file but before it in item order);
    with K = 2 both blocks are two batches, the runs interleaved. The pair is one process's bytes
    for each K, and python3-faiss finds every item once, under its number, in item order, its row
    bit for bit."""
    rows, _ = clustered(44, BIG_ROWS, BIG_DIMS, 16)
    np.save(tmp_path / "big.npy", rows)
    built = {}
    for members in (0, 2, 3):
        target = tmp_path / f"k{members}"
        target.mkdir()
        mesh = ["--processes", members] if members else []
        run("index", "--vectors", tmp_path / "big.npy", "--out", target / "X.index", "--ann=IVF16,Flat", "--ann-train",
            4096, "--ann-threads", 1, "--ann-ondisk", "--quiet", *mesh)
        built[members] = target
    assert (built[0] / "X.ivfdata").stat().st_size == BIG_ROWS * (BIG_DIMS * 4 + 8)
    for name in ("X.faiss", "X.ivfdata"):
        reference = (built[0] / name).read_bytes()
        for members in (2, 3):
            assert (built[members] / name).read_bytes() == reference, (members, name)
    check_lists_with_faiss(built[3], rows, True)
    assert not list(tmp_path.glob("k*/.*")), "a temporary file was left behind"
