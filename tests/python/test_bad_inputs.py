"""Bad inputs get InvalidArgument naming the argument, raised before anything reaches C; what only
the library can judge comes back as the library's own status and message."""

import numpy as np
import pytest

import uform
from uform import _library

VERBS = [
    "uform_text_encode",
    "uform_image_encode",
    "uform_image_encode_pixels",
    "uform_video_encode",
    "uform_audio_encode",
    "uform_audio_encode_samples",
    "uform_text_choose",
    "uform_executor_for_ram",
    "uform_model_load_ram",
    "uform_arena_for_executor",
    "uform_arena_for_host",
]


@pytest.fixture
def c_forbidden(monkeypatch):
    """Replaces the library's entry points by tripwires: a check that lets a call through fails."""
    reached = []

    def tripwire(name):
        def call(*args):
            reached.append(name)
            raise AssertionError(f"{name} was called")

        return call

    for name in VERBS:
        monkeypatch.setattr(_library.lib, name, tripwire(name))
    return reached


def pixels(shape=(8, 8, 3), dtype=np.uint8):
    return np.zeros(shape, dtype)


CASES = [
    # (description, call, words the message must contain)
    ("texts None", lambda m: m.text_encode(None), ["texts", "NoneType"]),
    ("texts item int", lambda m: m.text_encode(["ok", 3]), ["texts[1]", "int"]),
    ("texts surrogate", lambda m: m.text_encode(["\ud800"]), ["texts[0]", "UTF-8"]),
    ("dims negative", lambda m: m.text_encode("x", dims=-1), ["dims = -1", "negative"]),
    ("dims float", lambda m: m.text_encode("x", dims=1.5), ["dims", "float"]),
    ("dims bool", lambda m: m.text_encode("x", dims=True), ["dims"]),
    ("scalar unknown", lambda m: m.text_encode("x", scalar="f64"), ["scalar", "'f64'", "'bf16'"]),
    ("outputs unknown", lambda m: m.text_encode("x", outputs="tokens"), ["outputs", "'tokens'"]),
    ("outputs empty", lambda m: m.text_encode("x", outputs=[]), ["outputs", "empty"]),
    ("outputs dict", lambda m: m.text_encode("x", outputs={"a": 1}), ["outputs", "dict"]),
    ("progress not callable", lambda m: m.text_encode("x", progress=5), ["progress", "callable"]),
    ("stats not bool", lambda m: m.text_encode("x", stats="yes"), ["stats"]),
    ("arena not an Arena", lambda m: m.text_encode("x", arena="mine"), ["arena", "str"]),
    ("images None", lambda m: m.image_encode(None), ["images", "NoneType"]),
    ("images item", lambda m: m.image_encode(["a.jpg", 3.5]), ["images[1]", "float"]),
    ("pixels float", lambda m: m.image_encode_pixels(pixels(dtype=np.float32)), ["pixels", "float32", "uint8"]),
    ("pixels 2-D", lambda m: m.image_encode_pixels(pixels((8, 8))), ["pixels", "shape (8, 8)"]),
    ("pixels RGBA", lambda m: m.image_encode_pixels(pixels((8, 8, 4))), ["pixels", "shape (8, 8, 4)"]),
    ("pixels strided", lambda m: m.image_encode_pixels(pixels((8, 16, 3))[:, ::2]), ["pixels", "C-contiguous"]),
    ("pixels list item", lambda m: m.image_encode_pixels([pixels(), pixels(dtype=np.int16)]), ["pixels[1]", "int16"]),
    ("pixels list shape", lambda m: m.image_encode_pixels([pixels(), pixels((1, 8, 8, 3))]), ["pixels[1]", "shape"]),
    ("pixels None", lambda m: m.image_encode_pixels(None), ["pixels", "NoneType"]),
    ("pixels bytes", lambda m: m.image_encode_pixels(b"\x00" * 12), ["pixels", "bytes"]),
    ("samples float64", lambda m: m.audio_encode_samples(np.zeros(100), 16000), ["samples", "float64", "float32"]),
    ("samples 3-D", lambda m: m.audio_encode_samples(np.zeros((1, 2, 3), np.float32), 16000), ["samples", "shape"]),
    ("samples strided", lambda m: m.audio_encode_samples(np.zeros((2, 10), np.float32).T, 16000), ["C-contiguous"]),
    ("samples list", lambda m: m.audio_encode_samples([np.zeros((2, 2), np.float32)], 16000), ["samples[0]", "shape"]),
    ("rate zero", lambda m: m.audio_encode_samples(np.zeros(10, np.float32), 0), ["rate = 0"]),
    ("rate negative", lambda m: m.audio_encode_samples(np.zeros(10, np.float32), -8000), ["rate = -8000"]),
    ("rate None", lambda m: m.audio_encode_samples(np.zeros(10, np.float32), None), ["rate", "NoneType"]),
    ("recordings None", lambda m: m.audio_encode(None), ["recordings"]),
    ("videos dict", lambda m: m.video_encode({}), ["videos", "dict"]),
    ("choices count", lambda m: m.text_choose(["a"], ["bc", "d"]), ["choices", "2 entries for 1 texts"]),
    ("choices None", lambda m: m.text_choose(["a"], None), ["choices", "NoneType"]),
    ("choices byte 300", lambda m: m.text_choose(["a"], [[97, 300]]), ["choices[0][1] = 300"]),
    ("choices entry", lambda m: m.text_choose(["a"], [None]), ["choices[0]", "NoneType"]),
    ("groups negative", lambda m: m.text_choose(["a"], ["b"], [-1]), ["groups[0] = -1", "negative"]),
    ("groups count", lambda m: m.text_choose(["a"], ["b"], [0, 1]), ["groups", "2 entries for 1 texts"]),
    ("groups str", lambda m: m.text_choose(["a"], ["b"], "0"), ["groups", "str"]),
    ("groups float array", lambda m: m.text_choose(["a"], ["b"], np.zeros(1)), ["groups", "float64"]),
    ("threads negative", lambda m: uform.Executor.for_ram(threads=-2), ["threads = -2"]),
    ("cpu class unknown", lambda m: uform.Executor.for_ram(cpu_class="pentium"), ["cpu_class = 'pentium'"]),
    ("numa nodes str", lambda m: uform.Executor.for_ram(numa_nodes="0"), ["numa_nodes", "str"]),
    ("numa node negative", lambda m: uform.Executor.for_ram(numa_nodes=[0, -1]), ["numa_nodes[1] = -1"]),
    ("deferred limit", lambda m: uform.Executor.for_ram(deferred_limit=-1), ["deferred_limit = -1"]),
    ("load path None", lambda m: uform.Model.load_ram(None, None), ["path", "NoneType"]),
    ("load path NUL", lambda m: uform.Model.load_ram(None, "a\0b"), ["path", "NUL"]),
    ("load executor", lambda m: uform.Model.load_ram("cpu", "x"), ["executor", "str"]),
    ("load compute", lambda m: uform.Model.load_ram(None, "x", compute="f64"), ["compute = 'f64'"]),
    ("arena executor", lambda m: uform.Arena("cpu"), ["executor", "str"]),
    ("on executor", lambda m: m.on(None), ["executor", "NoneType"]),
    ("deferred executor", lambda m: m.deferred(2), ["executor", "int"]),
]


@pytest.mark.parametrize("name,call,words", CASES, ids=[case[0] for case in CASES])
def test_refused_before_c(model, c_forbidden, name, call, words):
    with pytest.raises(uform.InvalidArgument) as caught:
        call(model)
    error = caught.value
    assert not c_forbidden, f"{name}: reached {c_forbidden}"
    assert error.status == uform.Status.INVALID_ARGUMENT
    assert error.function, name
    for word in words:
        assert word in error.message, f"{name}: {word!r} not in {error.message!r}"
    assert str(error) == f"UForm: invalid_argument [{error.function}]: {error.message}", str(error)
    assert isinstance(error, ValueError)  # Python's convention for bad values holds too


def test_library_judgements(model, description, media, tmp_path):
    with pytest.raises(uform.FormatError) as caught:
        model.image_encode([media / "rgb8.png", b"not an image"])
    assert caught.value.function == "uform_image_encode" and "images[1]" in caught.value.message, caught.value
    with pytest.raises(uform.InvalidArgument, match="lists byte 97 twice"):
        model.text_choose(["abc"], ["aa"])
    with pytest.raises(uform.InvalidArgument) as caught:
        model.text_encode("x", dims=description.embedding + 1)
    assert caught.value.function == "uform_text_encode", caught.value.function
    with pytest.raises(uform.InvalidArgument):
        model.text_choose(["a"], ["b"], [description.temperature_groups])
    with pytest.raises(uform.InvalidArgument):
        model.image_encode_pixels(np.zeros((0, 8, 3), np.uint8))
    with pytest.raises(uform.IoError) as caught:
        model.image_encode([media / "rgb8.png", tmp_path / "missing.jpg"])
    assert "images[1]" in caught.value.message and "missing.jpg" in caught.value.message, caught.value.message
    with pytest.raises(uform.IoError) as caught:
        uform.Model.load_ram(None, tmp_path / "missing.safetensors")
    assert str(caught.value).startswith("UForm: io [uform_model_load_ram]: cannot open"), str(caught.value)
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(uform.FormatError):
        uform.Model.load_ram(None, broken)
    with pytest.raises(uform.Unsupported):
        uform.Executor.for_ram(cpu_class="apple_m4")
