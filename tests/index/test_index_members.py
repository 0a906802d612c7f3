"""`uform index --vectors` built by K members (--processes K, --mesh) against one member and NumPy/FAISS.

Issue 35, part 3. Every member indexes its contiguous block of the rows, the blocks stream to
member 0 in member order and it writes them (uform_index_builder_write_members), so K = 1, 2, 3 must
write the same bytes, also when every member's part of every tensor takes several 1-MiB pieces, and
no member other than 0 may hold more than its own block (its peak memory is measured). What the file
holds is checked independently of the library: its tensors are read with NumPy from the
safetensors layout and compared with the generated rows, exact answers with a float64 NumPy
top-K, and the approximate structures are opened with Debian's python3-faiss (not the engine's
shim) and searched there. A member that never comes must fail every member within the mesh's
timeout and leave no output. Rows come from a fixed seed; nothing binary is kept in git.
Run by CTest (tests/index/CMakeLists.txt) with UFORM_PYTEST_CLI set; loopback only.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index_check  # noqa: E402  (tests/index/index_check.py)

CLI = os.environ.get("UFORM_PYTEST_CLI", "")
ROWS, DIMS = 1001, 48  # 1,001 rows: blocks of 500/501 and 333/334/334, never even


def run(*arguments, expect=0, timeout=60):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


def stored(path: Path, tensor: str) -> np.ndarray:
    """A tensor of the index file, read with NumPy from the safetensors layout (index_check.py)."""
    return index_check.tensor(path, tensor)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("members")
    generator = np.random.default_rng(35)
    # Clustered rows, so IVF lists are uneven and PQ has structure to learn.
    centres = generator.standard_normal((20, DIMS))
    rows = centres[generator.integers(0, 20, ROWS)] + 0.3 * generator.standard_normal((ROWS, DIMS))
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    queries = rows[generator.integers(0, ROWS, 16)] + 0.05 * generator.standard_normal((16, DIMS)).astype(np.float32)
    np.save(folder / "rows.npy", rows)
    np.save(folder / "queries.npy", queries.astype(np.float32))
    (folder / "ids.txt").write_text("".join(f"item-{i:05d}\n" for i in range(ROWS)))
    return folder, rows, queries.astype(np.float32)


def build(folder: Path, name: str, members: int, *extra):
    out = folder / f"{name}-k{members}.index"
    run("index", "--vectors", folder / "rows.npy", "--out", out, "--processes", members, "--quiet", *extra)
    return out


@pytest.mark.parametrize("with_ids", [False, True])
def test_exact_index_same_bytes_for_1_2_3_members(corpus, with_ids):
    folder, rows, queries = corpus
    extra = ["--ids", folder / "ids.txt"] if with_ids else []
    name = "ids" if with_ids else "plain"
    files = [build(folder, name, k, *extra) for k in (1, 2, 3)]
    one = files[0].read_bytes()
    for other in files[1:]:
        assert other.read_bytes() == one, f"{other} differs from {files[0]}"
    # The rows and names, read with NumPy: the input in file order.
    image = stored(files[0], "embeddings.image")
    assert image.shape == (ROWS, DIMS)
    assert np.array_equal(image, rows)
    offsets = stored(files[0], "items.path_offsets")
    paths = stored(files[0], "items.paths").tobytes()
    assert len(offsets) == ROWS + 1
    names = [paths[offsets[i]:offsets[i + 1]].decode() for i in range(ROWS)]
    assert names == ([f"item-{i:05d}" for i in range(ROWS)] if with_ids else [str(i) for i in range(ROWS)])
    # Batched exact search: the same JSON from every file, and NumPy's float64 top-10 ids.
    answers = [run("search", f, "--queries", folder / "queries.npy", "--top", 10, "--json").stdout for f in files]
    assert answers[0] and answers[1] == answers[0] and answers[2] == answers[0]
    lines = [json.loads(line) for line in answers[0].splitlines()]
    assert len(lines) == 16
    scores = queries.astype(np.float64) @ rows.astype(np.float64).T
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    for line in lines:
        items = [hit["item"] for hit in line["hits"]]
        assert len(items) == 10
        assert sorted(items) == sorted(expected[line["query"]].tolist()), line


@pytest.mark.parametrize("recipe", ["IVF16,Flat", "IVF16,PQ8np", "HNSW32"])
def test_approximate_index_same_answers(corpus, recipe):
    import faiss

    folder, rows, queries = corpus
    counts = (1, 2) if recipe.startswith("HNSW") else (1, 2, 3)
    name = recipe.replace(",", "_")
    files = [build(folder, name, k, f"--ann={recipe}", "--ann-threads", 1) for k in counts]
    structures = [f.with_suffix(".faiss") for f in files]
    assert all(s.exists() for s in structures)
    for other in files[1:]:
        assert other.read_bytes() == files[0].read_bytes()
    answers = []
    for path in structures:
        index = faiss.read_index(str(path))
        assert index.ntotal == ROWS
        if recipe.startswith("IVF"):
            faiss.extract_index_ivf(index).nprobe = 4
        else:
            index.hnsw.efSearch = 32
        distances, ids = index.search(queries, 10)
        answers.append((distances, ids))
    assert answers[0][1].shape == (16, 10) and (answers[0][1] >= 0).all()
    for distances, ids in answers[1:]:
        assert np.array_equal(ids, answers[0][1])
        assert np.array_equal(distances, answers[0][0])
    # The structure answers for these rows (not some other): NumPy's best row is among its ten for
    # most queries (PQ codes are lossy, so not always first).
    scores = queries.astype(np.float64) @ rows.astype(np.float64).T
    best = scores.argmax(axis=1)
    assert np.mean([best[q] in answers[0][1][q] for q in range(len(queries))]) >= 0.75


def test_member_that_never_comes_fails_every_member(corpus, tmp_path):
    folder, _, _ = corpus
    out = tmp_path / "never.index"
    start = time.monotonic()
    # Members 0 and 1 of 3 come; member 2 never does.
    members = [subprocess.Popen([CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--mesh",
                                 str(tmp_path), "--job", "never", "--index", str(i), "--count", "3", "--mesh-timeout", "3",
                                 "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=30) for m in members]
    assert time.monotonic() - start < 20
    for member, (_, err) in zip(members, finished):
        assert member.returncode != 0, err
        assert "3 s" in err or "timeout" in err or "within" in err, err
    assert not out.exists()
    assert not out.with_suffix(".faiss").exists()


def test_member_that_fails_stops_the_others_at_once(corpus, tmp_path):
    folder, _, _ = corpus
    out = tmp_path / "failed.index"
    start = time.monotonic()
    # Member 1 cannot read its input: it still joins the gather (with no rows), so member 0 fails
    # at once with its name rather than after the 60-second timeout.
    inputs = [folder / "rows.npy", tmp_path / "missing.npy"]
    members = [subprocess.Popen([CLI, "index", "--vectors", str(inputs[i]), "--out", str(out), "--mesh", str(tmp_path),
                                 "--job", "failed", "--index", str(i), "--count", "2", "--mesh-timeout", "60",
                                 "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=60) for m in members]
    assert time.monotonic() - start < 20
    assert members[0].returncode != 0 and "member 1 of 2 failed before the gather" in finished[0][1], finished[0]
    assert members[1].returncode != 0 and "missing.npy" in finished[1][1], finished[1]
    assert not out.exists()


@pytest.mark.parametrize("scalar", ["f32", "i8"])
def test_many_pieces_same_bytes_for_1_2_3_members(tmp_path, scalar):
    """Parts of several 1-MiB pieces in every tensor: 300,001 rows x 4 with names of 14 bytes give
    each member of 2 or 3 over 1 MiB of path offsets, names and (F32) rows; I8 changes the order of
    the file's tensors (rows of 1-byte elements sort among the items' U8 tensors)."""
    rows_count, dims = 300_001, 4
    generator = np.random.default_rng(7)
    rows = generator.standard_normal((rows_count, dims)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    np.save(tmp_path / "many.npy", rows)
    names = [f"row-{i:07d}-{'ab'[i % 2] * (i % 5)}" for i in range(rows_count)]  # 12 to 16 bytes
    (tmp_path / "names.txt").write_text("".join(name + "\n" for name in names))
    files = []
    for members in (1, 2, 3):
        out = tmp_path / f"many-{scalar}-k{members}.index"
        run("index", "--vectors", tmp_path / "many.npy", "--ids", tmp_path / "names.txt", "--scalar", scalar, "--out", out,
            "--processes", members, "--quiet", timeout=120)
        files.append(out)
    one = files[0].read_bytes()
    for other in files[1:]:
        assert other.read_bytes() == one, f"{other} differs from {files[0]}"
    offsets = stored(files[0], "items.path_offsets")
    paths = stored(files[0], "items.paths").tobytes()
    assert len(offsets) == rows_count + 1 and offsets[0] == 0 and offsets[-1] == len(paths)
    lengths = np.diff(offsets)
    assert np.array_equal(lengths, [len(name) for name in names])
    for i in (0, 1, 150_000, 150_001, 200_000, rows_count - 1):
        assert paths[offsets[i]:offsets[i + 1]].decode() == names[i]
    assert np.array_equal(stored(files[0], "items.modality"), np.full(rows_count, 1, np.uint8))
    image = stored(files[0], "embeddings.image")
    assert image.shape == (rows_count, dims)
    if scalar == "f32":
        assert np.array_equal(image, rows)
    else:  # I8 is 127 x rounded half to even (docs/indexes.md); NumPy's rint rounds the same way
        assert np.array_equal(image, np.clip(np.rint(rows.astype(np.float64) * 127), -127, 127).astype(np.int8))


def test_member_0_that_cannot_write_fails_every_member(corpus, tmp_path):
    folder, _, _ = corpus
    out = tmp_path / "missing-folder" / "x.index"
    members = [subprocess.Popen([CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--mesh",
                                 str(tmp_path), "--job", "nowrite", "--index", str(i), "--count", "2", "--mesh-timeout",
                                 "60", "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    start = time.monotonic()
    finished = [m.communicate(timeout=60) for m in members]
    assert time.monotonic() - start < 20
    assert members[0].returncode != 0 and "missing-folder" in finished[0][1], finished[0]
    assert members[1].returncode != 0 and "member 0 of 2 could not write the index" in finished[1][1], finished[1]
    assert "missing-folder" in finished[1][1], finished[1]
    assert not out.parent.exists()


# Runs argv[1:] and prints its peak resident memory (KiB). The measured process must be forked from a
# small one: Linux carries a parent's resident size at fork into the child's peak across exec, so
# measured from this test's process every member would report at least the test's own size.
PEAK = ("import os, sys\npid = os.fork()\nif pid == 0:\n    os.execv(sys.argv[1], sys.argv[1:])\n"
        "_, status, usage = os.wait4(pid, 0)\nprint(usage.ru_maxrss)\nsys.exit(os.waitstatus_to_exitcode(status))\n")


def test_members_other_than_0_hold_only_their_block(tmp_path):
    """200,001 rows x 64 F32 (49 MiB) over 3 members: member 1's peak above a one-process run on 3 rows
    stays under 1.2 times the index. Measured here: 38 MiB (its block, its mapped third of the input,
    the mesh). Gathering the index into every member, as uform_index_builder_gather does, adds the
    gathered bytes and the builder made from them: over 2 times the index."""
    rows_count, dims = 200_001, 64
    rows = np.random.default_rng(11).standard_normal((rows_count, dims)).astype(np.float32)
    np.save(tmp_path / "big.npy", rows)
    np.save(tmp_path / "tiny.npy", rows[:3])
    tiny = subprocess.run([sys.executable, "-c", PEAK, CLI, "index", "--vectors", str(tmp_path / "tiny.npy"), "--out",
                           str(tmp_path / "tiny.index"), "--quiet"], capture_output=True, text=True, timeout=60)
    assert tiny.returncode == 0, tiny.stderr
    base = int(tiny.stdout)
    out = tmp_path / "big.index"
    processes = [subprocess.Popen([sys.executable, "-c", PEAK, CLI, "index", "--vectors", str(tmp_path / "big.npy"), "--out",
                                   str(out), "--mesh", str(tmp_path), "--job", "peak", "--index", str(i), "--count", "3",
                                   "--mesh-timeout", "60", "--mesh-address", "127.0.0.1", "--quiet"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
    finished = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], finished
    peaks = [int(stdout) for stdout, _ in finished]
    index_kib = rows.nbytes / 1024
    assert peaks[1] - base < 1.2 * index_kib, (peaks, base, index_kib)
    assert np.array_equal(stored(out, "embeddings.image"), rows)


def test_refused_combinations(corpus, tmp_path):
    folder, _, _ = corpus
    finished = run("index", "--from", tmp_path / "x.index", "--ann", "--processes", 2, expect=2)
    assert "--from" in finished.stderr and "one process" in finished.stderr
    finished = run("index", "--vectors", folder / "rows.npy", "--out", tmp_path / "x.index", "--processes", 2,
                   "--index", 0, expect=2)
    assert "--processes starts its own mesh" in finished.stderr


def test_torchrun_variables_give_the_same_bytes(corpus, tmp_path):
    """Two members started as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT; --mesh auto)."""
    import socket

    folder, _, _ = corpus
    reference = build(folder, "torchrun-reference", 1)
    with socket.socket() as probe:  # a free port; the store takes MASTER_PORT + 1
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1] - 1
    out = tmp_path / "torchrun.index"
    members = []
    for rank in (0, 1):
        environment = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
                           MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCHELASTIC_RUN_ID="members")
        members.append(subprocess.Popen([CLI, "index", "--vectors", str(folder / "rows.npy"), "--out", str(out), "--mesh",
                                         "auto", "--mesh-address", "127.0.0.1", "--mesh-timeout", "20", "--quiet"],
                                        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    finished = [m.communicate(timeout=60) for m in members]
    assert [m.returncode for m in members] == [0, 0], finished
    assert out.read_bytes() == reference.read_bytes()


def test_fewer_rows_than_members(tmp_path):
    """Two rows over three members: member 0's block is empty; the file is still one member's."""
    rows = np.arange(16, dtype=np.float32).reshape(2, 8) / 16
    np.save(tmp_path / "two.npy", rows)
    files = []
    for members in (1, 3):
        out = tmp_path / f"two-k{members}.index"
        run("index", "--vectors", tmp_path / "two.npy", "--out", out, "--processes", members, "--quiet")
        files.append(out)
    assert files[0].read_bytes() == files[1].read_bytes()
    assert np.array_equal(stored(files[1], "embeddings.image"), rows)
