"""`uform index --vectors` built by K members (--processes K, --mesh) against one member and NumPy/FAISS.

Issue 35, part 3. Every member indexes its contiguous block of the rows, the blocks are gathered
in member order and member 0 writes, so K = 1, 2, 3 must write the same bytes. What the file
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
