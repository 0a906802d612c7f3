"""Published model folders through the binding (docs/checkpoints.md): a sentence-transformers folder
and a CLIP folder written at test time (tests/published/bert_write.py, clip_write.py) load with
``Model.load_ram``, describe what they are, tokenize as their text tower runs, and encode exactly what
the ``uform`` command line encodes for the same folder (another client of the same ABI)."""

import json
import subprocess

import numpy as np
import pytest

import uform
from conftest import required

TEXTS = ["a photo of a cat", "Naïve café, 東京 😀 — and a longer sentence with punctuation!", ""]


@pytest.fixture(scope="module")
def minilm():
    return required("UFORM_PYTEST_PUBLISHED_MINILM")


@pytest.fixture(scope="module")
def clip():
    return required("UFORM_PYTEST_PUBLISHED_CLIP")


def test_describe(minilm, clip):
    with uform.Model.load_ram(None, minilm) as model:
        d = model.describe()
        assert (d.family, d.tokenizer, d.modalities) == ("sentence-transformers", "wordpiece", ("text",)), d
        assert d.text_tokens == 256 and d.towers["text"]["depth"] == 2, d
    with uform.Model.load_ram(None, clip) as model:
        d = model.describe()
        assert (d.family, d.tokenizer, d.modalities) == ("clip", "bpe", ("text", "image")), d
        assert d.text_tokens == 77 and d.towers["image"]["hidden"] > 0 and d.towers["text"]["hidden"] > 0, d


def test_tokenize_counts_the_rows_the_tower_runs(minilm, clip, executor):
    for folder in (minilm, clip):
        with uform.Model.load_ram(executor, folder) as model:
            encoded = model.on(executor).text_encode(TEXTS, outputs=["embeddings", "states"])
            offsets = encoded.states.offsets
            assert len(offsets) == len(TEXTS) + 1
            for i, text in enumerate(TEXTS):
                ids = model.tokenize(text)
                assert ids.dtype == np.uint32 and len(ids) >= 2, ids  # at least the two special tokens
                assert len(ids) == offsets[i + 1] - offsets[i], (folder, text, ids, offsets)
            # The special tokens frame every text; a text past the limit keeps both.
            long_ids = model.tokenize("word " * 1000)
            assert len(long_ids) == model.describe().text_tokens, len(long_ids)
            assert long_ids[0] == model.tokenize("")[0] and long_ids[-1] == model.tokenize("")[-1]


def test_tokens_are_the_towers_positions(minilm, clip, model, executor):
    """Model.tokens (uform_model_tokens) against counts made here: the architecture's, from the
    description (native) or config.json (CLIP: (image_size / patch_size)^2 patches and a class
    token), and the rows the text tower returns for each text."""
    d = model.describe()
    assert model.tokens("image") == (d.image_size // d.image_patch) ** 2 + 1
    assert model.tokens(uform.Modality.AUDIO, b"not read") == d.audio_rate * d.audio_seconds // 160 // 4 + 1
    assert model.tokens("text", "a photo") == len("a photo") + 1 and model.tokens("text") == 1
    with open(f"{clip}/config.json") as file:
        vision = json.load(file)["vision_config"]
    for folder in (minilm, clip):
        with uform.Model.load_ram(executor, folder) as published:
            encoded = published.on(executor).text_encode(TEXTS, outputs=["states"])
            offsets = encoded.states.offsets
            assert len(offsets) == len(TEXTS) + 1
            for i, text in enumerate(TEXTS):
                assert published.tokens("text", text) == offsets[i + 1] - offsets[i], (folder, text)
            if folder == clip:
                assert published.tokens("image") == (vision["image_size"] // vision["patch_size"]) ** 2 + 1
            else:
                with pytest.raises(uform.InvalidArgument, match="the model has no image tower"):
                    published.tokens("image")
    with pytest.raises(uform.InvalidArgument, match="modality"):
        model.tokens("smell")

def test_embeddings_equal_the_command_line(minilm, clip, executor, media, tmp_path):
    """Texts with no compute named on either side: one default compute (docs/abi.md) gives the same
    bytes from `uform encode` and Model.load_ram; the image with --f32 named."""
    cli = required("UFORM_PYTEST_CLI")
    for name, folder in (("minilm", minilm), ("clip", clip)):
        out = tmp_path / f"{name}.npy"
        subprocess.run([cli, "encode", folder, "--text", *TEXTS, "--threads", "2", "--out", str(out)],
                       check=True, capture_output=True)
        with uform.Model.load_ram(executor, folder) as model:
            assert model.describe().compute == "f32"
            encoded = model.on(executor).text_encode(TEXTS)
            assert encoded.embeddings.shape[0] == len(TEXTS)
            assert np.array_equal(np.load(out), encoded.embeddings), name
            norms = np.linalg.norm(encoded.embeddings, axis=1)
            assert np.all(np.abs(norms - 1) < 1e-5), norms
    picture = media / "baseline.jpg"
    out = tmp_path / "clip_image.npy"
    subprocess.run([cli, "encode", clip, "--image", str(picture), "--threads", "2", "--f32", "--out", str(out)],
                   check=True, capture_output=True)
    with uform.Model.load_ram(executor, clip) as model:
        encoded = model.on(executor).image_encode([picture.read_bytes()])
        assert encoded.embeddings.shape[0] == 1 and np.array_equal(np.load(out), encoded.embeddings)


def test_bad_folder_is_a_format_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert",')
    with pytest.raises(uform.FormatError, match="config.json is not valid JSON"):
        uform.Model.load_ram(None, str(tmp_path))
