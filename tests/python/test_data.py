"""The Data section through Python: datasets of manifests and shards, loaders, Trainer.fit with an
exact resume across shard boundaries, recall against a NumPy brute force, uform.evaluate, the index
pipeline (Index.build, open, search) and media decoded ahead (media_prepare, prepared_encode), on
the corpus tests/data/make_shards.py wrote (Python's tarfile, img2dataset's layout)."""

import filecmp
import json
from pathlib import Path

import numpy as np
import pytest

import uform
from conftest import required


@pytest.fixture(scope="module")
def corpus() -> Path:
    return Path(required("UFORM_PYTEST_CORPUS"))


SMALL = dict(image_size=32, image_patch=8, hidden=64, depth=1, heads=2, mlp=128, embedding=32, modalities=["text", "image"])


def numpy_recall(queries, candidates, query_labels, candidate_labels, k):
    """The brute force: rank by float64 dot product, ties by index; a hit is any candidate with the label."""
    scores = queries.astype(np.float64) @ candidates.astype(np.float64).T
    hits = 0
    for q in range(len(queries)):
        order = sorted(range(len(candidates)), key=lambda c: (-scores[q, c], c))
        hits += any(candidate_labels[c] == query_labels[q] for c in order[:k])
    return hits / len(queries)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recall_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n, m, e = 60, 80, 16
    queries = rng.standard_normal((n, e)).astype(np.float32)
    candidates = rng.standard_normal((m, e)).astype(np.float32)
    candidates[5] = candidates[7]  # an exact tie
    query_labels = rng.integers(0, 20, n).astype(np.uint64)
    candidate_labels = rng.integers(0, 25, m).astype(np.uint64)  # some queries have no right answer
    ks = [1, 3, 10, 80]
    got = uform.recall(queries, candidates, query_labels, candidate_labels, ks=ks)
    expected = [numpy_recall(queries, candidates, query_labels, candidate_labels, k) for k in ks]
    assert np.array_equal(got, np.array(expected)), (got, expected)
    with pytest.raises(uform.InvalidArgument):
        uform.recall(queries, candidates, query_labels, candidate_labels, ks=[0])


def test_datasets_and_items(corpus):
    manifest = uform.Dataset.open(corpus / "manifest.jsonl", sequential=True)
    shards = uform.Dataset.open(shards=str(corpus / "shards/{000..005}.tar"), sequential=True)
    described = manifest.describe()
    assert described.source == "manifest" and described.samples == 48 and described.pairs["image"] == 48
    assert shards.describe().shards == 6
    a, b = list(manifest.items()), list(shards.items())
    assert [i.text for i in a] == [i.text for i in b] and all(i.error is None for i in a + b)
    assert [i.data for i in a] == [i.data for i in b]  # the same bytes, from files and from tar members
    assert b[3].key.endswith("000.tar:000003.png") and b[3].modality == "image"
    assert len(list(shards.items(skip=40))) == 8
    bad = list(uform.Dataset.open(shards=str(corpus / "bad/003.tar"), sequential=True).items())
    assert bad[-1].error is not None and bad[-1].error.shard == 0 and "truncated" in bad[-1].error.message
    with pytest.raises(uform.InvalidArgument):
        uform.Dataset.open(shards=str(corpus / "shards/{1..}.tar"))


def test_loader_epochs(corpus):
    with uform.Executor.for_ram(threads=1) as executor:
        trainer = uform.Trainer.init_ram(executor, seed=3, **SMALL)
        dataset = uform.Dataset.open(shards=str(corpus / "gz/{000..005}.tar.gz"), seed=9, shuffle_buffer=10)
        with dataset.loader(trainer, 8) as loader:
            batches = [batch for _, batch in zip(range(12), loader)]
            stats = loader.stats()
        texts = [t for b in batches for t in b.texts]
        assert sorted(texts[:48]) == sorted(texts[48:]) and len(set(texts[:48])) == 48 and texts[:48] != texts[48:]
        assert stats.batches == 12 and stats.samples == 96 and stats.skipped == 0
        trainer.close()


def test_fit_resumes_exactly_across_shards(corpus, tmp_path):
    shards = str(corpus / "shards/{000..005}.tar")

    def fresh(executor, **resume):
        return uform.Trainer.init_ram(executor, seed=5, warmup_steps=2, total_steps=7, **(resume or SMALL))

    with uform.Executor.for_ram(threads=2) as executor:
        with fresh(executor) as trainer:
            whole = trainer.fit(uform.Dataset.open(shards=shards, seed=4, shuffle_buffer=6), steps=7, batch=8,
                                out=tmp_path / "whole.st")
        with fresh(executor) as trainer:
            trainer.fit(uform.Dataset.open(shards=shards, seed=4, shuffle_buffer=6), steps=4, batch=8, out=tmp_path / "split.st")
        with uform.Trainer.init_ram(executor, resume=str(tmp_path / "split.st")) as trainer:
            rest = trainer.fit(uform.Dataset.open(shards=shards, seed=4, shuffle_buffer=6), steps=3, batch=8,
                               out=tmp_path / "split.st", resume=True)
    assert whole.steps == 7 and rest.steps == 3 and json.loads(rest.cursor)["batches"] == 7
    assert filecmp.cmp(tmp_path / "whole.st", tmp_path / "split.st", shallow=False)


def test_fit_evaluates(corpus, tmp_path):
    logged = []
    with uform.Executor.for_ram(threads=2) as executor:
        with uform.Trainer.init_ram(executor, seed=1, **SMALL) as trainer:
            heldout = uform.Dataset.open(corpus / "manifest.jsonl", sequential=True)
            result = trainer.fit(uform.Dataset.open(corpus / "manifest.jsonl", seed=1), steps=4, batch=16, eval=heldout,
                                 eval_every=2, log=logged.append)
            model = trainer.snapshot()
            direct = uform.evaluate(model, heldout, executor, ks=[1, 5, 10])
    assert [step for step, _, _ in result.evaluations] == [2, 4] and len(logged) == 4
    last = result.evaluations[-1][2]["image"]
    assert last.pairs == 48 and 0 <= last.text_to_media[0] <= last.text_to_media[1] <= 1
    assert direct["image"].text_to_media[:2] == pytest.approx(last.text_to_media[:2], abs=0.05)


def test_fit_log_that_raises_stops_after_its_step(corpus, tmp_path):
    """An exception from ``log`` cancels the library's loop after that step: the checkpoint holds the
    steps done (saved as a cancel saves), and the exception reaches the caller unchanged."""

    class Stop(Exception):
        pass

    def log(result):
        if result.step == 2:
            raise Stop("enough")

    with uform.Executor.for_ram(threads=2) as executor:
        with uform.Trainer.init_ram(executor, seed=1, **SMALL) as trainer:
            with pytest.raises(Stop, match="enough"):
                trainer.fit(uform.Dataset.open(corpus / "manifest.jsonl", seed=1), steps=5, batch=8, out=tmp_path / "stopped.st", log=log)
            assert trainer.describe().steps == 2
        with uform.Trainer.init_ram(executor, resume=str(tmp_path / "stopped.st")) as resumed:
            assert resumed.describe().steps == 2 and json.loads(resumed.user_metadata)["batches"] == 2
    with pytest.raises(uform.Error, match="steps = 0"):
        with uform.Executor.for_ram() as executor, uform.Trainer.init_ram(executor, seed=1, **SMALL) as trainer:
            trainer.fit(uform.Dataset.open(corpus / "manifest.jsonl", seed=1), steps=0)


def test_index_build_open_search(corpus, model, executor, tmp_path):
    built = uform.Index.build(model, str(corpus / "loose"), shards=str(corpus / "gz/{000..001}.tar.gz"),
                              out=tmp_path / "corpus.index", executor=executor, checkpoint=10)
    assert built.indexed == 64 and built.failed == 0
    with uform.Index.open(tmp_path / "corpus.index", model) as index:
        described = index.describe()
        assert described.count == 64 and described.counts["image"] == 64 and len(index) == 64
        query = model.on(executor).image_encode([str(corpus / "loose/000005.png")]).embeddings
        hits = index.search(query, top=3)
        assert hits.paths[0][0].endswith("loose/000005.png") and hits.scores[0][0] > 0.9999
        assert hits.modalities[0] == ["image"] * 3 and list(hits.scores[0]) == sorted(hits.scores[0], reverse=True)
        assert index.metadata("uform.index.count") == "64"


def test_media_prepare_equals_encode(corpus, model, executor):
    files = [str(corpus / "loose/000000.jpg"), b"not an image", str(corpus / "loose/000001.png")]
    with model.on(executor).media_prepare(files, "image") as prepared:
        assert prepared.count == 3 and prepared.failed == 1 and prepared.errors[1] and prepared.errors[0] is None
        encoded = model.on(executor).prepared_encode(prepared)
    direct = model.on(executor).image_encode([files[0], files[2]])
    assert np.array_equal(encoded.embeddings, direct.embeddings)
