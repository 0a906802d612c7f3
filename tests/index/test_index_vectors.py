"""`uform index --vectors`, `uform search --queries` and their Python forms against NumPy.

Data is generated here from fixed seeds (no binary fixtures). The stored rows are read back from
the index file with NumPy alone (the safetensors header parsed here), so the round trip is checked
independently of the library's reader; search answers are compared with a float64 NumPy top-K,
ties by item number. Run by CTest (tests/index/CMakeLists.txt) with UFORM_LIBRARY, PYTHONPATH,
UFORM_PYTEST_CLI and UFORM_PYTEST_TINY set.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index_check  # noqa: E402  (tests/index/index_check.py)

import uform

CLI = os.environ.get("UFORM_PYTEST_CLI", "")
TINY = os.environ.get("UFORM_PYTEST_TINY", "")


def run(*arguments, expect=0):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=120)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


def stored(path: Path, tensor: str) -> np.ndarray:
    """A tensor of the index file, read with NumPy from the safetensors layout (index_check.py)."""
    return index_check.tensor(path, tensor)


def unit_rows(generator, rows, dims):
    matrix = generator.standard_normal((rows, dims))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def numpy_top(rows: np.ndarray, queries: np.ndarray, top: int):
    """float64 scores; order by score descending, then item ascending (a stable sort of -score)."""
    scores = queries.astype(np.float64) @ rows.astype(np.float64).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
    return order, np.take_along_axis(scores, order, axis=1)


def separated(scores: np.ndarray, gap: float) -> np.ndarray:
    """Queries whose kept scores differ pairwise by ≥ gap or exactly tie (F32 cannot reorder them)."""
    steps = -np.diff(scores, axis=1)
    return np.all((steps >= gap) | (steps == 0), axis=1)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """2,000 × 40 unit rows with items 7, 500 and 1,999 copies of item 3 (exact ties), 64 queries
    (query 0 is item 3's row), the .npy files and an ids file."""
    folder = tmp_path_factory.mktemp("vectors")
    generator = np.random.default_rng(35)
    rows = unit_rows(generator, 2000, 40)
    rows[[7, 500, 1999]] = rows[3]
    queries = unit_rows(generator, 64, 40)
    queries[0] = rows[3]
    np.save(folder / "rows.npy", rows)
    np.save(folder / "queries.npy", queries)
    ids = [f"doc-{i:05d}" for i in range(len(rows))]
    (folder / "ids.txt").write_text("".join(i + "\n" for i in ids))
    return folder, rows, queries, ids


def test_round_trip_bit_for_bit(corpus):
    folder, rows, _, ids = corpus
    out = folder / "rt.index"
    summary = json.loads(run("index", "--vectors", folder / "rows.npy", "--ids", folder / "ids.txt", "--out", out,
                             "--json", "--quiet").stdout)
    assert summary["indexed"] == 2000 and summary["dims"] == 40 and summary["modality"] == "image"
    assert summary["fingerprint"] == "0" * 32
    assert stored(out, "embeddings.image").tobytes() == rows.tobytes()
    offsets, tape = stored(out, "items.path_offsets"), stored(out, "items.paths").tobytes()
    assert [tape[offsets[i]:offsets[i + 1]].decode() for i in range(len(ids))] == ids
    # Without --ids, the row numbers; --paths is the same flag as --ids.
    run("index", "--vectors", folder / "rows.npy", "--out", folder / "numbers.index", "--quiet")
    offsets, tape = stored(folder / "numbers.index", "items.path_offsets"), stored(folder / "numbers.index", "items.paths")
    assert [tape[offsets[i]:offsets[i + 1]].tobytes().decode() for i in (0, 9, 1999)] == ["0", "9", "1999"]
    run("index", "--vectors", folder / "rows.npy", "--paths", folder / "ids.txt", "--out", folder / "p.index", "--quiet")
    assert (folder / "p.index").read_bytes() == out.read_bytes()


def test_float16_and_normalize(corpus, tmp_path):
    _, rows, _, _ = corpus
    halves = (rows[:300] * 3).astype(np.float16)
    np.save(tmp_path / "h.npy", halves)
    run("index", "--vectors", tmp_path / "h.npy", "--out", tmp_path / "h.index", "--quiet")
    assert stored(tmp_path / "h.index", "embeddings.image").tobytes() == halves.astype(np.float32).tobytes()
    run("index", "--vectors", tmp_path / "h.npy", "--out", tmp_path / "n.index", "--normalize", "--modality", "text",
        "--quiet")
    wide = halves.astype(np.float64)
    expected = wide / np.linalg.norm(wide, axis=1, keepdims=True)
    # The engine's computation, written again in NumPy: each value in double divided by the square
    # root of the squares summed in double in column order (cumsum sums in that order), rounded to
    # F32 once. The same computation, so the same bytes.
    ordered_norm = np.sqrt(np.cumsum(wide * wide, axis=1)[:, -1:])
    normalized = stored(tmp_path / "n.index", "embeddings.text")
    assert normalized.tobytes() == (wide / ordered_norm).astype(np.float32).tobytes()
    # And against the textbook normalisation in double: a bound, which rows left unnormalised lie far outside.
    np.testing.assert_allclose(normalized, expected, rtol=0, atol=2e-7)
    assert np.max(np.abs(halves.astype(np.float64) - expected)) > 1e-3, "the bound would pass unnormalised rows"
    run("index", "--vectors", tmp_path / "h.npy", "--out", tmp_path / "f16.index", "--scalar", "f16", "--quiet")
    assert stored(tmp_path / "f16.index", "embeddings.image").tobytes() == halves.tobytes()


@pytest.mark.parametrize("name, array, message", [
    ("f64", np.zeros((4, 8)), "dtype '<f8'"),
    ("i32", np.zeros((4, 8), dtype=np.int32), "dtype '<i4'"),
    ("rank1", np.zeros(8, dtype=np.float32), "the array has 1 dimensions"),
    ("rank3", np.zeros((2, 4, 8), dtype=np.float32), "the array has 3 dimensions"),
    ("fortran", np.asfortranarray(np.zeros((4, 8), dtype=np.float32)), "Fortran (column-major) order"),
])
def test_refused_arrays(tmp_path, name, array, message):
    np.save(tmp_path / f"{name}.npy", array)
    failed = run("index", "--vectors", tmp_path / f"{name}.npy", "--out", tmp_path / "x.index", expect=1)
    assert message in failed.stderr and f"{name}.npy" in failed.stderr
    assert not (tmp_path / "x.index").exists()


def test_refused_files(corpus, tmp_path):
    folder, _, _, _ = corpus
    whole = (folder / "rows.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(whole[:len(whole) - 4])
    failed = run("index", "--vectors", tmp_path / "cut.npy", "--out", tmp_path / "x.index", expect=1)
    assert "truncated: 319996 data bytes for a [2000, 40] <f4 array, which needs 320000" in failed.stderr
    (tmp_path / "header.npy").write_bytes(whole[:60])
    assert "truncated .npy header" in run("index", "--vectors", tmp_path / "header.npy", "--out", tmp_path / "x.index",
                                          expect=1).stderr
    (tmp_path / "text.npy").write_text("rows,columns\n1,2\n")
    assert "not a .npy file" in run("index", "--vectors", tmp_path / "text.npy", "--out", tmp_path / "x.index",
                                    expect=1).stderr
    (tmp_path / "short.txt").write_text("".join(f"{i}\n" for i in range(1999)))
    failed = run("index", "--vectors", folder / "rows.npy", "--ids", tmp_path / "short.txt", "--out", tmp_path / "x.index",
                 expect=1)
    assert "short.txt has 1999 lines for the 2000 rows" in failed.stderr
    bad = np.ones((3, 4), dtype=np.float32)
    bad[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    assert "row 2 column 1 is NaN" in run("index", "--vectors", tmp_path / "nan.npy", "--out", tmp_path / "x.index",
                                          expect=1).stderr
    assert not (tmp_path / "x.index").exists()
    run("index", "--vectors", folder / "rows.npy", "--out", tmp_path / "x.index", "--ids", folder / "ids.txt", "--paths",
        folder / "ids.txt", expect=2)
    assert "--dims does not apply to --vectors" in run("index", "--vectors", folder / "rows.npy", "--out",
                                                       tmp_path / "x.index", "--dims", 8, expect=2).stderr
    assert not (tmp_path / "x.index").exists()


def test_batched_search_json_against_numpy(corpus):
    folder, rows, queries, ids = corpus
    index = folder / "rt.index"
    if not index.exists():
        run("index", "--vectors", folder / "rows.npy", "--ids", folder / "ids.txt", "--out", index, "--quiet")
    top = 12
    reply = run("search", index, "--queries", folder / "queries.npy", "--top", top, "--json").stdout
    lines = [json.loads(line) for line in reply.splitlines()]
    assert len(lines) == len(queries) > 0, "one JSON line per query"
    expected_items, expected_scores = numpy_top(rows, queries, top)
    keep = separated(expected_scores, 1e-5)
    assert keep.sum() >= 0.9 * len(queries) and keep[0], "the generated queries must be mostly well separated"
    for number, line in enumerate(lines):
        assert set(line) == {"query", "hits"} and line["query"] == number
        assert len(line["hits"]) == top
        for rank, hit in enumerate(line["hits"], 1):
            assert set(hit) == {"rank", "item", "score", "modality", "path"}
            assert hit["rank"] == rank and hit["modality"] == "image" and hit["path"] == ids[hit["item"]]
            assert isinstance(hit["score"], float)
        if keep[number]:
            assert [h["item"] for h in line["hits"]] == expected_items[number].tolist(), number
            # F32 sums against double ones: a bound, which scores shifted by one rank (at least 1e-5
            # apart in the kept queries) lie outside.
            scores = np.array([h["score"] for h in line["hits"]])
            np.testing.assert_allclose(scores, expected_scores[number], atol=1e-6)
            assert not np.allclose(scores[1:], expected_scores[number][:-1], rtol=0, atol=1e-6), number
    assert [h["item"] for h in lines[0]["hits"][:4]] == [3, 7, 500, 1999]  # exact ties, by item


def test_search_refusals(corpus, tmp_path):
    folder, rows, _, _ = corpus
    index = folder / "rt.index"
    if not index.exists():
        run("index", "--vectors", folder / "rows.npy", "--out", index, "--quiet")
    np.save(tmp_path / "narrow.npy", rows[:2, :39])
    assert "has 39 columns, the index holds 40" in run("search", index, "--queries", tmp_path / "narrow.npy",
                                                       expect=1).stderr
    np.save(tmp_path / "f64.npy", rows[:2].astype(np.float64))
    assert "dtype '<f8'" in run("search", index, "--queries", tmp_path / "f64.npy", expect=1).stderr
    run("search", index, "--text", "a query", expect=2)  # a text needs the checkpoint


@pytest.mark.skipif(not TINY, reason="UFORM_PYTEST_TINY is not set")
def test_checkpoint_and_no_checkpoint(corpus, tmp_path):
    folder, rows, queries, _ = corpus
    index = folder / "rt.index"
    if not index.exists():
        run("index", "--vectors", folder / "rows.npy", "--out", index, "--quiet")
    failed = run("search", index, TINY, "--queries", folder / "queries.npy", expect=1)
    assert "built from vectors with no checkpoint" in failed.stderr
    with uform.Model.load_ram(None, TINY) as model:
        width = model.describe().embedding
        vectors = unit_rows(np.random.default_rng(1), 50, width)
        np.save(tmp_path / "model.npy", vectors)
        run("index", "--vectors", tmp_path / "model.npy", "--model", TINY, "--out", tmp_path / "stamped.index", "--quiet")
        with uform.Index.open(tmp_path / "stamped.index", model) as opened:  # the fingerprint matches
            assert opened.describe().fingerprint != "0" * 32
        reply = run("search", tmp_path / "stamped.index", TINY, "--queries", tmp_path / "model.npy", "--top", 1,
                    "--json").stdout.splitlines()
        assert [json.loads(line)["hits"][0]["item"] for line in reply] == list(range(50))
        with pytest.raises(uform.ConfigMismatch):
            uform.Index.open(index, model)


def test_python_build_and_search(corpus, tmp_path):
    _, rows, queries, ids = corpus
    built = uform.Index.build(vectors=rows, paths=ids, out=tmp_path / "py.index")
    assert built.indexed == len(rows)
    assert stored(tmp_path / "py.index", "embeddings.image").tobytes() == rows.tobytes()
    expected_items, expected_scores = numpy_top(rows, queries, 10)
    keep = separated(expected_scores, 1e-5)
    with uform.Index.open(tmp_path / "py.index") as index:
        for count in (1, 7, 8, 32, 64):
            hits = index.search(queries[:count], top=10)
            assert hits.items.shape == (count, 10) and hits.scores.shape == (count, 10)
            assert hits.items.dtype == np.uint64 and hits.scores.dtype == np.float32
            for q in np.flatnonzero(keep[:count]):
                assert hits.items[q].tolist() == expected_items[q].tolist(), (count, q)
                assert hits.paths[q] == [ids[i] for i in expected_items[q]]
    with pytest.raises(uform.InvalidArgument):
        uform.Index.build(vectors=rows.astype(np.float64), out=tmp_path / "x.index")
    with pytest.raises(uform.InvalidArgument):
        uform.Index.build(vectors=rows, paths=ids[:-1], out=tmp_path / "x.index")
    assert not (tmp_path / "x.index").exists()
