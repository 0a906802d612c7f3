"""Approximate search through the binding (Index.build_ann / open_ann / search knobs), on an index
file this test writes (safetensors by hand, 3,000 clustered rows × 32 dims, a fixed seed): recall
against exact search, rerank scores equal to exact search's, the .faiss file opened by Debian's
python3-faiss answering the same ids, and the refusals."""

import json
import struct

import numpy as np
import pytest

import uform

DIMS, ITEMS, QUERIES, TOP = 32, 3000, 40, 10


def clustered(rng: np.random.Generator, centres: np.ndarray, rows: int) -> np.ndarray:
    picks = centres[rng.integers(0, len(centres), rows)]
    data = (picks + 0.15 * rng.standard_normal((rows, DIMS))).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def write_index(path, rows: np.ndarray) -> None:
    """An F32 index (docs/indexes.md's layout): item i is text when i is even, else image."""
    modality = (np.arange(len(rows)) % 2).astype(np.uint8)
    tensors = {
        "embeddings.text": ("F32", [int((modality == 0).sum()), DIMS], rows[modality == 0].tobytes()),
        "embeddings.image": ("F32", [int((modality == 1).sum()), DIMS], rows[modality == 1].tobytes()),
        "embeddings.video": ("F32", [0, DIMS], b""),
        "embeddings.audio": ("F32", [0, DIMS], b""),
        "items.modality": ("U8", [len(rows)], modality.tobytes()),
        "items.path_offsets": ("I64", [len(rows) + 1], np.zeros(len(rows) + 1, "<i8").tobytes()),
        "items.paths": ("U8", [0], b""),
    }
    header, data, at = {}, b"", 0
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(payload)]}
        data += payload
        at += len(payload)
    header["__metadata__"] = {"uform.index.format": "1", "uform.index.fingerprint": "0123456789abcdef" * 2,
                              "uform.index.dims": str(DIMS), "uform.index.scalar": "f32",
                              "uform.index.count": str(len(rows))}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(35)
    centres = rng.standard_normal((60, DIMS))
    folder = tmp_path_factory.mktemp("ann")
    write_index(folder / "corpus.index", clustered(rng, centres, ITEMS))
    write_index(folder / "other.index", clustered(rng, centres, ITEMS))
    return folder, clustered(rng, centres, QUERIES)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / TOP for a, b in zip(found.tolist(), truth.tolist())]))


def test_build_search_and_rerank(corpus):
    folder, queries = corpus
    with uform.Index.open(folder / "corpus.index") as index:
        exact = index.search(queries, TOP)
        with pytest.raises(uform.InvalidArgument, match="build_ann or open_ann"):
            index.search(queries, TOP, ef=32)
        description = index.build_ann(recipe="HNSW32", threads=1)
        assert (folder / "corpus.faiss").is_file()
        assert description.recipe == "HNSW32" and description.count == ITEMS and description.graph
        approximate = index.search(queries, TOP)
        assert recall(approximate.items, exact.items) >= 0.95
        for j in range(QUERIES):  # one query at a time: exact search's matrix-vector path, rerank's kernel
            reranked, alone = index.search(queries[j], TOP, rerank=50), index.search(queries[j], TOP, exact=True)
            assert reranked.items[0, 0] == alone.items[0, 0]
            assert reranked.scores[0, 0] == alone.scores[0, 0]  # the same kernel, the same bits
        images = index.search(queries, TOP, modalities=["image"])
        assert all(kind == "image" for row in images.modalities for kind in row)
        assert np.array_equal(index.search(queries, TOP, exact=True).items, exact.items)


def test_python_faiss_reads_the_same_file(corpus):
    faiss = pytest.importorskip("faiss", reason="Debian's python3-faiss is not installed for this interpreter")
    folder, queries = corpus
    with uform.Index.open(folder / "corpus.index") as index:
        index.build_ann(folder / "ivf.faiss", recipe="IVF16,PQ8np", threads=1)
        ours = index.search(queries, TOP, nprobe=4, rerank=0)  # rerank 0: FAISS's own PQ scores
        # rerank None (the default): PQ codes are rescored, so a hit's score is exact search's bits
        # (exact search one query at a time: its matrix-vector path, the rescoring's kernel)
        rescored = index.search(queries, TOP, nprobe=4)
        exact = [index.search(queries[j], TOP, exact=True) for j in range(QUERIES)]
        same = np.array([rescored.items[j] == exact[j].items[0] for j in range(QUERIES)])
        assert same.mean() >= 0.5
        assert all(np.array_equal(rescored.scores[j][same[j]], exact[j].scores[0][same[j]]) for j in range(QUERIES))
        assert not np.array_equal(ours.scores, rescored.scores)
    faiss.omp_set_num_threads(1)
    theirs = faiss.read_index(str(folder / "ivf.faiss"))
    scores, ids = theirs.search(queries, TOP, params=faiss.SearchParametersIVF(nprobe=4))
    # FAISS leaves equal scores (equal PQ codes) in heap order; UForm orders them by item.
    order = np.lexsort((ids, -scores), axis=1)
    ids, scores = np.take_along_axis(ids, order, 1), np.take_along_axis(scores, order, 1)
    assert np.array_equal(ours.items.astype(np.int64), ids)
    assert np.array_equal(ours.scores, scores)


def test_refusals(corpus):
    folder, _ = corpus
    with uform.Index.open(folder / "corpus.index") as index:
        if not (folder / "corpus.faiss").exists():
            index.build_ann(recipe="HNSW32", threads=1)
        with pytest.raises(uform.InvalidArgument, match="could not parse index string"):
            index.build_ann(folder / "bad.faiss", recipe="NotARecipe")
    with uform.Index.open(folder / "other.index") as other:
        with pytest.raises(uform.ConfigMismatch, match="does not belong to this index"):
            other.open_ann(folder / "corpus.faiss")
    cut = folder / "cut.faiss"
    cut.write_bytes((folder / "corpus.faiss").read_bytes()[:1000])
    with uform.Index.open(folder / "corpus.index") as index:
        with pytest.raises(uform.FormatError, match="pairing record"):
            index.open_ann(cut)
