"""Every verb through the binding answers exactly what the C API answers for the same inputs on the
same kind of executor (tests/python/c_reference.c, a plain C client), byte for byte; and the CLI's
.npy outputs match too."""

import os
import subprocess

import numpy as np
import pytest

import uform
from conftest import required

SCALARS = {"f32": 0, "f16": 1, "bf16": 2, "i8": 3, "b1": 4}
FLAGS = {"embeddings": 1, "token_vectors": 2, "states": 4}
ALL_OUTPUTS = ["embeddings", "token_vectors", "states"]


def assert_same_bytes(name, python, c_bytes):
    ours = np.ascontiguousarray(python).tobytes()
    if ours != c_bytes:
        theirs = np.frombuffer(c_bytes, dtype=python.dtype)
        flat = np.ascontiguousarray(python).reshape(-1)
        first = next((i for i in range(min(len(flat), len(theirs))) if flat[i] != theirs[i]), None)
        raise AssertionError(
            f"{name}: {len(ours)} bytes from Python, {len(c_bytes)} from C; first difference at element {first}: "
            f"python {flat[first] if first is not None else '-'} vs c {theirs[first] if first is not None else '-'}"
        )


def compare(encoded, answers, outputs, scalar):
    row_width = None
    if "embeddings" in outputs:
        c = answers["embeddings"]
        assert encoded.embeddings.shape[0] == c["rows"], (encoded.embeddings.shape, c["rows"])
        assert c["scalar"] == SCALARS[scalar], (c["scalar"], scalar)
        row_width = encoded.embeddings.shape[1]
        expected_width = (c["columns"] + 7) // 8 if scalar == "b1" else c["columns"]
        assert row_width == expected_width, (row_width, expected_width)
        assert_same_bytes("embeddings", encoded.embeddings, c["bytes"])
    for name in ("token_vectors", "states"):
        if name not in outputs:
            assert getattr(encoded, name) is None
            continue
        ragged, c = getattr(encoded, name), answers[name]
        assert list(ragged.offsets) == list(c["offsets"]), (name, list(ragged.offsets), list(c["offsets"]))
        assert ragged.values.shape[0] == c["rows"], (name, ragged.values.shape, c["rows"])
        assert_same_bytes(name, ragged.values, c["bytes"])


def receiver(model, executor, threads):
    return model if threads < 0 else model.on(executor)


@pytest.mark.parametrize("threads", [-1, 2])
@pytest.mark.parametrize("scalar", list(SCALARS))
def test_text_encode(model, executor, c_reference, threads, scalar):
    texts = ["a photo of a cat", "", "ünïcödé ☃", "x" * 200]
    raw = [t.encode() for t in texts] + [b"\x00\xff raw bytes\x80"]
    dims = 32 if scalar in ("i8", "f16") else 0
    encoded = receiver(model, executor, threads).text_encode(
        texts + [raw[-1]], outputs=ALL_OUTPUTS, scalar=scalar, dims=dims or None
    )
    answers = c_reference("text", raw, threads=threads, scalar=SCALARS[scalar], dims=dims, outputs=7)
    compare(encoded, answers, ALL_OUTPUTS, scalar)


@pytest.mark.parametrize("threads", [-1, 2])
def test_image_encode(model, executor, c_reference, media, threads):
    names = ["baseline.jpg", "rgb8.png", "lossy.webp", "exif6.jpg", "progressive.jpg", "rgba.png"]
    paths = [media / name for name in names]
    # Paths as str, PathLike and bytes, all in one call.
    mixed = [str(paths[0]), paths[1], paths[2].read_bytes()] + paths[3:]
    encoded = receiver(model, executor, threads).image_encode(mixed, outputs=ALL_OUTPUTS)
    answers = c_reference("image", [p.read_bytes() for p in paths], threads=threads, outputs=7)
    compare(encoded, answers, ALL_OUTPUTS, "f32")


@pytest.mark.parametrize("threads", [-1, 2])
def test_image_encode_pixels(model, executor, c_reference, threads):
    rng = np.random.default_rng(12)
    images = [rng.integers(0, 256, size=shape, dtype=np.uint8) for shape in [(40, 50, 3), (32, 32, 3), (17, 91, 3)]]
    encoded = receiver(model, executor, threads).image_encode_pixels(images, outputs=ALL_OUTPUTS, dims=16)
    answers = c_reference("pixels", [i.tobytes() for i in images], threads=threads, outputs=7, dims=16,
                          heights=[i.shape[0] for i in images], widths=[i.shape[1] for i in images])
    compare(encoded, answers, ALL_OUTPUTS, "f32")
    # A [n, h, w, 3] batch, read in place.
    batch = rng.integers(0, 256, size=(3, 36, 48, 3), dtype=np.uint8)
    encoded = receiver(model, executor, threads).image_encode_pixels(batch, scalar="bf16")
    answers = c_reference("pixels", [b.tobytes() for b in batch], threads=threads, scalar=2, heights=[36] * 3,
                          widths=[48] * 3)
    compare(encoded, answers, ["embeddings"], "bf16")


@pytest.mark.parametrize("threads", [-1, 2])
def test_video_encode(model, executor, c_reference, media, has_ffmpeg, threads):
    if not has_ffmpeg:
        pytest.skip("this build has no FFmpeg: video_encode answers Unsupported")
    paths = [media / "counter.mp4", media / "short.mp4", media / "counter.webm"]
    encoded = receiver(model, executor, threads).video_encode(paths, outputs=ALL_OUTPUTS, scalar="i8")
    answers = c_reference("video", [p.read_bytes() for p in paths], threads=threads, outputs=7, scalar=3)
    compare(encoded, answers, ALL_OUTPUTS, "i8")


@pytest.mark.parametrize("threads", [-1, 2])
def test_audio_encode(model, executor, c_reference, media, has_ffmpeg, threads):
    names = ["pcm16.wav", "float32.wav", "stereo16.wav"] + (["stereo.flac"] if has_ffmpeg else [])
    paths = [media / name for name in names]
    encoded = receiver(model, executor, threads).audio_encode(paths, outputs=ALL_OUTPUTS, scalar="b1")
    answers = c_reference("audio", [p.read_bytes() for p in paths], threads=threads, outputs=7, scalar=4)
    compare(encoded, answers, ALL_OUTPUTS, "b1")


@pytest.mark.parametrize("threads", [-1, 2])
def test_audio_encode_samples(model, executor, c_reference, threads):
    rng = np.random.default_rng(5)
    recordings = [rng.standard_normal(n).astype(np.float32) * 0.3 for n in (22050, 5000, 30000)]
    encoded = receiver(model, executor, threads).audio_encode_samples(recordings, 22050, outputs=ALL_OUTPUTS)
    answers = c_reference("samples", [r.tobytes() for r in recordings], threads=threads, outputs=7, rate=22050)
    compare(encoded, answers, ALL_OUTPUTS, "f32")
    batch = rng.standard_normal((2, 8000)).astype(np.float32)
    encoded = receiver(model, executor, threads).audio_encode_samples(batch, 8000, scalar="f16")
    answers = c_reference("samples", [b.tobytes() for b in batch], threads=threads, scalar=1, rate=8000)
    compare(encoded, answers, ["embeddings"], "f16")


@pytest.mark.parametrize("threads", [-1, 2])
def test_text_choose(model, executor, c_reference, description, threads):
    texts = ["yes or n", "the answer is ", ""]
    choices = ["oa", b"0123456789", [0, 255, 32]]
    groups = [0, description.temperature_groups - 1, 1 % description.temperature_groups]
    chosen = receiver(model, executor, threads).text_choose(texts, choices, groups)
    raw_choices = [b"oa", b"0123456789", bytes([0, 255, 32])]
    answers = c_reference("choose", [t.encode() for t in texts], threads=threads, choices=raw_choices, groups=groups)
    c = answers["probabilities"]
    assert list(chosen.probabilities.offsets) == list(c["offsets"])
    assert_same_bytes("probabilities", chosen.probabilities.values, c["bytes"])
    for i, row in enumerate(chosen.probabilities):
        assert len(row) == len(raw_choices[i]) and abs(float(row.sum()) - 1) < 1e-5, (i, row)
    # Without groups the C side passes NULL: group 0 for every text.
    chosen = receiver(model, executor, threads).text_choose(texts, choices)
    answers = c_reference("choose", [t.encode() for t in texts], threads=threads, choices=raw_choices)
    assert_same_bytes("probabilities (no groups)", chosen.probabilities.values, answers["probabilities"]["bytes"])


def test_bf16_compute(checkpoint, c_reference):
    with uform.Model.load_ram(None, checkpoint, compute="bf16") as bf16:
        assert bf16.describe().compute == "bf16"
        encoded = bf16.text_encode(["bf16 compute", "second"], outputs=ALL_OUTPUTS)
    answers = c_reference("text", [b"bf16 compute", b"second"], compute="bf16", outputs=7)
    compare(encoded, answers, ALL_OUTPUTS, "f32")


def test_deferred_results_equal_the_c_api(model, executor, c_reference, media):
    paths = [media / "baseline.jpg", media / "rgb8.png"]
    pending = model.deferred(executor).image_encode(paths, outputs=ALL_OUTPUTS)
    answers = c_reference("image", [p.read_bytes() for p in paths], threads=2, outputs=7)
    compare(pending.wait(), answers, ALL_OUTPUTS, "f32")


def test_arena_views_equal_the_c_api(model, executor, c_reference):
    with uform.Arena(executor) as arena:
        encoded = model.on(executor).text_encode(["view", "parity"], outputs=ALL_OUTPUTS, arena=arena)
        answers = c_reference("text", [b"view", b"parity"], threads=2, outputs=7)
        compare(encoded, answers, ALL_OUTPUTS, "f32")


def test_cli_npy_outputs_match(model, executor, tmp_path):
    """The `uform` command line, another client of the same ABI, writes the same arrays."""
    texts = ["a cat", "a dog on a mat", ""]
    out = tmp_path / "e.npy"
    subprocess.run([required("UFORM_PYTEST_CLI"), "encode", os.environ.get("UFORM_TEST_CHECKPOINT") or
                    required("UFORM_PYTEST_TINY"), "--text", *texts, "--outputs", "embeddings,tokens,states",
                    "--scalar", "i8", "--threads", "2", "--f32", "--out", str(out)], check=True, capture_output=True)
    encoded = model.on(executor).text_encode(texts, outputs=ALL_OUTPUTS, scalar="i8")
    cli = np.load(out)
    assert cli.dtype == encoded.embeddings.dtype and np.array_equal(cli, encoded.embeddings), (cli, encoded.embeddings)
    assert np.array_equal(np.load(tmp_path / "e.tokens.npy"), encoded.token_vectors.values)
    assert np.array_equal(np.load(tmp_path / "e.tokens_offsets.npy"), encoded.token_vectors.offsets)
    assert np.array_equal(np.load(tmp_path / "e.states.npy"), encoded.states.values)
    assert np.array_equal(np.load(tmp_path / "e.states_offsets.npy"), encoded.states.offsets)
