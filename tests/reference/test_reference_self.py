"""Self-tests of the PyTorch reference (no engine needed): /usr/bin/python3 test_reference_self.py

Checks the safetensors reader and writer, every stem's token count and layout against explicit
loops, batching against items alone, attention against torch's multi_head_attention_forward, the
nn.Linear benchmark model against the functional reference, the Slaney mel filters against values
derived by hand and against torchaudio, Whisper's log-mel against a numpy DFT, image resizing
against PIL, the output conversions, text_choose, and compare.py end to end on a dump written by
the reference itself in float32 (which must pass) and on corrupted copies (which must fail).
Prints "N passed, N failed" and exits 1 on any failure.  Seeds are fixed and printed.
"""

import base64
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import uform_reference as R  # noqa: E402

SEED = 20261129
PASSED = FAILED = 0


def check(ok, label, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL {label}: {detail}", flush=True)


def check_close(label, got, expected, tolerance):
    got = torch.as_tensor(np.asarray(got) if not torch.is_tensor(got) else got).double()
    expected = torch.as_tensor(np.asarray(expected) if not torch.is_tensor(expected) else expected).double()
    if got.shape != expected.shape:
        check(False, label, f"shape {list(got.shape)} vs {list(expected.shape)}")
        return
    error = float((got - expected).abs().max()) if got.numel() else 0.0
    check(error <= tolerance, label, f"max abs error {error:.3e} > {tolerance:.1e}")


# ---------------------------------------------------------------------------------------------

def test_safetensors(directory):
    rng = np.random.default_rng(SEED)
    arrays = {
        "f64": ("F64", rng.standard_normal((2, 3))), "f32": ("F32", rng.standard_normal((4,)).astype(np.float32)),
        "f16": ("F16", rng.standard_normal((3, 2)).astype(np.float16)),
        "i8": ("I8", rng.integers(-128, 128, (5,)).astype(np.int8)), "u8": ("U8", np.arange(7, dtype=np.uint8)),
        "i32": ("I32", rng.integers(-2**31, 2**31, (2, 2)).astype(np.int32)),
        "i64": ("I64", np.array([-2**62, 5], dtype=np.int64)), "bool": ("BOOL", np.array([True, False, True])),
        "scalar": ("F32", np.array(2.5, dtype=np.float32)), "empty": ("F32", np.zeros((0, 3), np.float32)),
    }
    # BF16: values exactly representable survive; others round to nearest even.
    bf16_values = np.array([1.0, -2.5, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -(1.0 + 2.0**-8) * 2.0**100, 1.0 + 2.0**-8 + 2.0**-20], np.float32)
    arrays["bf16"] = ("BF16", bf16_values)
    path = os.path.join(directory, "all.safetensors")
    R.write_safetensors(path, arrays, {"uform.format": "4", "uform.config": json.dumps({"x": 1})})
    metadata, loaded = R.read_safetensors(path)
    check(metadata == {"uform.format": "4", "uform.config": json.dumps({"x": 1})}, "safetensors metadata", str(metadata))
    for name, (kind, array) in arrays.items():
        if kind == "BF16":
            continue
        ok = loaded[name].shape == np.asarray(array).shape and np.array_equal(loaded[name], array)
        check(ok, f"safetensors round trip {name}", f"{loaded[name]!r} vs {array!r}")
    expected_bf16 = np.array([1.0, -2.5, 1.0, 1.0 + 2.0**-6, -(2.0**100), 1.0 + 2.0**-7], np.float32)
    check(np.array_equal(loaded["bf16"], expected_bf16), "BF16 round to nearest even",
          f"{loaded['bf16'].tolist()} vs {expected_bf16.tolist()}")
    config, tensors = R.load(path, torch.float64)
    check(config == {"x": 1} and tensors["f32"].dtype == torch.float64 and tensors["i64"].dtype == torch.int64,
          "load converts floats only", str({k: v.dtype for k, v in tensors.items()}))
    check(int(tensors["i64"][0]) == -2**62, "load keeps int64 exact")

    # Bad files raise ValueError naming the problem.
    wrong = os.path.join(directory, "wrong.safetensors")
    R.write_safetensors(wrong, {"a": ("F32", np.zeros(2, np.float32))}, {"uform.format": "3", "uform.config": "{}"})
    try:
        R.load(wrong)
        check(False, "format 3 is refused")
    except ValueError as error:
        check("uform.format" in str(error), "format 3 is refused", str(error))
    with open(path, "rb") as handle:
        blob = bytearray(handle.read())
    truncated = os.path.join(directory, "truncated.safetensors")
    with open(truncated, "wb") as handle:
        handle.write(blob[:-4])
    try:
        R.read_safetensors(truncated)
        check(False, "truncated data is refused")
    except ValueError as error:
        check("tensor 'bf16'" in str(error), "truncated data names the tensor", str(error))


def test_checkpoint_and_tokens(model, config):
    names = set(R.tensor_shapes(config))
    check(names == set(model.w), "checkpoint holds exactly the expected names",
          f"missing {sorted(names - set(model.w))}, extra {sorted(set(model.w) - names)}")
    for name, shape in R.tensor_shapes(config).items():
        if list(model.w[name].shape) != shape:
            check(False, f"shape of {name}", f"{list(model.w[name].shape)} vs {shape}")
    d, t = config["hidden"], config["text"]["bytes"]
    check(model.text_tokens(b"hello").shape == (6, d), "text tokens: CLS + bytes")
    check(model.text_tokens(b"x" * 100).shape == (t + 1, d), "text truncated to T bytes")
    check(model.text_tokens(b"x" * 100, True).shape == (t + 2, d), "choose tokens: CLS + T + NEXT")
    s, p = config["image"]["size"], config["image"]["patch"]
    image = torch.randn(3, s, s, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
    check(model.image_tokens(image).shape == ((s // p) ** 2 + 1, d), "image tokens")
    v = config["video"]
    video = torch.randn(v["frames"], 3, v["size"], v["size"], dtype=torch.float64)
    check(model.video_tokens(video).shape == ((v["frames"] // v["tubelet"]) * (v["size"] // v["patch"]) ** 2 + 1, d),
          "video tokens")
    mel = torch.randn(R.audio_frames(config), config["audio"]["mels"], dtype=torch.float64)
    check(model.audio_tokens(mel).shape == (R.audio_frames(config) // 4 + 1, d), "audio tokens")

    # Contents against explicit loops written straight from docs/model.md's wording.
    w = model.w
    rows = model.text_tokens(b"\x00\xff", True)
    for k, token in enumerate([256, 0, 255, 257]):
        expected = w["text.bytes"][token] + w["text.positions"][k] + w["modality.text"]
        check_close(f"text row {k}", rows[k], expected, 1e-12)
    rows = model.image_tokens(image)
    g = s // p
    for k in (0, 1, g, g * g - 1):
        y0, x0 = (k // g) * p, (k % g) * p
        flat = torch.tensor([float(image[c, y0 + y, x0 + x]) for c in range(3) for y in range(p) for x in range(p)],
                            dtype=torch.float64)
        expected = w["image.patch.weight"] @ flat + w["image.patch.bias"] + w["image.positions"][k + 1] + w["modality.image"]
        check_close(f"image patch {k}", rows[k + 1], expected, 1e-12)
    check_close("image CLS", rows[0], w["image.cls"] + w["image.positions"][0] + w["modality.image"], 1e-12)
    rows = model.video_tokens(video)
    vp, tub, vg = v["patch"], v["tubelet"], v["size"] // v["patch"]
    for tau in range(v["frames"] // tub):
        for k in (0, vg * vg - 1, vg + 1):
            y0, x0 = (k // vg) * vp, (k % vg) * vp
            flat = torch.tensor([float(video[tau * tub + f, c, y0 + y, x0 + x]) for c in range(3) for f in range(tub)
                                 for y in range(vp) for x in range(vp)], dtype=torch.float64)
            expected = (w["video.patch.weight"] @ flat + w["video.patch.bias"] + w["video.space"][k + 1]
                        + w["video.time"][tau] + w["modality.video"])
            check_close(f"video tubelet ({tau}, {k})", rows[1 + tau * vg * vg + k], expected, 1e-12)
    check_close("video CLS", rows[0], w["video.cls"] + w["video.space"][0] + w["modality.video"], 1e-12)
    rows = model.audio_tokens(mel)
    for k in (0, 7):
        flat = torch.cat([mel[4 * k + f] for f in range(4)])
        expected = w["audio.patch.weight"] @ flat + w["audio.patch.bias"] + w["audio.positions"][k + 1] + w["modality.audio"]
        check_close(f"audio token {k}", rows[k + 1], expected, 1e-12)


def test_batching(model, config):
    texts = [b"a", b"hello world", bytes(range(40)), b"x" * 200]
    together = model.encode("text", texts)
    for index, text in enumerate(texts):
        alone = model.encode("text", [text])
        begin, end = together["state_offsets"][index], together["state_offsets"][index + 1]
        check_close(f"text item {index} alone vs batch (states)", alone["states"], together["states"][begin:end], 1e-12)
        check_close(f"text item {index} alone vs batch (embedding)", alone["embeddings"][0], together["embeddings"][index], 1e-12)
    # Mixed modalities of differing lengths through the trunk together.
    s = config["image"]["size"]
    image = torch.rand(3, s, s, dtype=torch.float64)
    items = [model.text_tokens(b"short"), model.image_tokens(image), model.text_tokens(b"y" * 60)]
    joint = model.trunk(items)
    padded = model.trunk(items, padded=True)
    for index, item in enumerate(items):
        alone = model.trunk([item], padded=True)[0]
        check_close(f"mixed batch item {index}", joint[index], alone, 1e-12)
        check_close(f"padded, masked batch item {index}", padded[index], alone, 1e-12)


def test_attention(model, config):
    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(1, 9, config["hidden"], dtype=torch.float64, generator=generator)
    ours = model.attention(x, 1)
    t = x.transpose(0, 1)                                                  # [N, B, d]
    theirs, _ = torch.nn.functional.multi_head_attention_forward(
        t, t, t, config["hidden"], config["heads"], model.w["trunk.1.attn.qkv.weight"], model.w["trunk.1.attn.qkv.bias"],
        None, None, False, 0.0, model.w["trunk.1.attn.out.weight"], model.w["trunk.1.attn.out.bias"], training=False,
        need_weights=False)
    check_close("attention vs multi_head_attention_forward", ours[0], theirs[:, 0], 1e-12)
    values = torch.randn(50, dtype=torch.float64, generator=generator) * 4
    check_close("gelu is the erf form", R.gelu(values), torch.nn.functional.gelu(values), 1e-15)
    weight, bias = torch.rand(7, dtype=torch.float64) + 0.5, torch.randn(7, dtype=torch.float64)
    rows = torch.randn(3, 7, dtype=torch.float64, generator=generator)
    check_close("layer_norm vs torch", R.layer_norm(rows, weight, bias, 1e-6),
                torch.nn.functional.layer_norm(rows, (7,), weight, bias, 1e-6), 1e-13)


def test_bench_model(path, model, config):
    import encode_torch as B
    _, tensors = R.load(path, torch.float64)
    generator = torch.Generator().manual_seed(SEED)
    for modality in R.MODALITIES:
        encoder = B.Encoder(config, tensors, modality).double().eval()
        inputs = B.random_inputs(config, modality, 2, 20, config["audio"]["seconds"], generator)
        if inputs.is_floating_point():
            inputs = inputs.double()
        with torch.no_grad():
            states, embeddings = encoder(inputs)
            if modality == "text":
                items = [bytes(row[1:].tolist()) for row in inputs]
            else:
                items = list(inputs)
            reference = model.encode(modality, items)
        check_close(f"benchmark model {modality} states", states.reshape(-1, config["hidden"]), reference["states"], 1e-10)
        check_close(f"benchmark model {modality} embeddings", embeddings, reference["embeddings"], 1e-12)


def test_heads(model, config):
    out = model.encode("text", [b"abc", b"defgh"], 0)
    check_close("embeddings are unit vectors", out["embeddings"].norm(dim=-1), torch.ones(2), 1e-12)
    check_close("token vector of CLS is the embedding", out["token_vectors"][out["token_offsets"][1]],
                out["embeddings"][1], 1e-12)
    for prefix in config["matryoshka"]:
        cut = model.encode("text", [b"abc"], prefix)["embeddings"][0]
        states = model.encode("text", [b"abc"])["states"]
        raw = (model.w["text.projection"] @ states[0])[:prefix]
        check_close(f"matryoshka {prefix}: prefix before normalising", cut, raw / raw.norm(), 1e-12)


def test_choose(model):
    texts, choices, groups = [b"abc", b"", b"q" * 80], [b"xyz", b"\x00", bytes(range(256))], [1, 0, 3]
    probabilities = model.choose(texts, choices, groups)
    for index, p in enumerate(probabilities):
        check(len(p) == len(choices[index]), f"choose {index}: one probability per legal byte")
        check(abs(float(p.sum()) - 1.0) < 1e-12, f"choose {index}: sums to 1", f"{float(p.sum())}")
    swapped = model.choose([b"abc"], [b"zxy"], [1])[0]
    check_close("choose follows the listed order", swapped, probabilities[0][[2, 0, 1]], 1e-12)
    # All 256 bytes legal in group g equals softmax of all logits scaled by exp(temperatures[g]).
    final = model.trunk([model.text_tokens(b"q" * 80, True)])[0][-1]
    hidden = R.layer_norm(final, model.w["choose.norm.weight"], model.w["choose.norm.bias"], model.eps)
    logits = model.w["choose.head.weight"] @ hidden + model.w["choose.head.bias"]
    check_close("choose over every byte = temperature-scaled softmax", probabilities[2],
                torch.softmax(logits * math.exp(float(model.w["temperatures"][3])), 0), 1e-12)
    for bad in (b"", b"aa"):
        try:
            model.choose([b"x"], [bad])
            check(False, f"choices {bad!r} refused")
        except ValueError:
            check(True, f"choices {bad!r} refused")


def test_mel_filters():
    filters = R.mel_filters(80)
    check(filters.shape == (80, 201), "mel filters shape", str(filters.shape))
    # Derived by hand: Slaney mels are f/(200/3) below 1 kHz (so 1000 Hz = 15 mel) and
    # 15 + 27 ln(f/1000)/ln 6.4 above (6400 Hz = 42 mel).
    check_close("hz_to_mel(1000) = 15", R.hz_to_mel_slaney(1000.0), 15.0, 1e-12)
    check_close("hz_to_mel(6400) = 42", R.hz_to_mel_slaney(6400.0), 42.0, 1e-12)
    check_close("hz_to_mel(500) = 7.5", R.hz_to_mel_slaney(500.0), 7.5, 1e-12)
    check_close("mel_to_hz(42) = 6400", R.mel_to_hz_slaney(42.0), 6400.0, 1e-9)
    # 8 kHz is 15 + 27 ln 8 / ln 6.4 mel; 82 edges split it in 81 steps.  The first edges lie below
    # 1 kHz, so filter 0 rises from 0 Hz to c = step*200/3 Hz and falls to 2c.  Bin 1 (40 Hz) sits on
    # its falling side: weight (2c - 40)/c, times the Slaney norm 2/(2c - 0).
    top = 15.0 + 27.0 * math.log(8.0) / math.log(6.4)
    c = top / 81.0 * 200.0 / 3.0
    check_close("filter 0 at bin 1", filters[0, 1], (2 * c - 40.0) / c * 2.0 / (2 * c), 1e-12)
    check_close("filter 0 at bin 0", filters[0, 0], 0.0, 0.0)
    check_close("filter 1 at bin 1", filters[1, 1], (40.0 - c) / c * 2.0 / (2 * c), 1e-12)
    import torchaudio.functional as AF
    theirs = AF.melscale_fbanks(201, 0.0, 8000.0, 80, 16000, norm="slaney", mel_scale="slaney").double().T
    check_close("mel filters vs torchaudio.melscale_fbanks (float32)", filters, theirs, 1e-7)


def test_log_mel():
    rng = np.random.default_rng(SEED)
    n = 16000
    t = np.arange(n) / 16000.0
    samples = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(n)
    ours = R.log_mel(torch.from_numpy(samples), 80).numpy()
    check(ours.shape == (100, 80), "log-mel: 1 s -> 100 frames x 80", str(ours.shape))
    # numpy: reflect pad 200, frames every 160, periodic Hann, explicit DFT of 201 bins.
    padded = np.pad(samples, 200, mode="reflect")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    frames = np.stack([padded[160 * i:160 * i + 400] * window for i in range(n // 160)])
    k = np.arange(201)[:, None] * np.arange(400)[None, :]
    dft = np.exp(-2j * np.pi * k / 400)
    power = np.abs(frames @ dft.T) ** 2                                    # [100, 201]
    mel = power @ R.mel_filters(80).T
    logs = np.log10(np.maximum(mel, 1e-10))
    logs = np.maximum(logs, logs.max() - 8)
    check_close("log-mel vs numpy DFT", ours, (logs + 4) / 4, 1e-9)
    silent = R.log_mel(torch.zeros(16000, dtype=torch.float64), 80)
    check_close("log-mel of silence", silent, torch.full((100, 80), (-10 + 4) / 4, dtype=torch.float64), 0.0)


def test_audio_preprocessing(config):
    rate = 44100
    t = np.arange(int(rate * 0.75)) / rate
    samples = np.sin(2 * np.pi * 440 * t).astype(np.float32)
    fitted, mel = R.preprocess_audio(samples, rate, config)
    check(fitted.shape == (16000,), "audio padded to 1 s", str(fitted.shape))
    check(float(fitted[12000:].abs().max()) == 0.0, "padding is zeros")
    expected = np.sin(2 * np.pi * 440 * np.arange(12000) / 16000.0)
    check_close("resampled 440 Hz sine (interior)", fitted[200:11800], expected[200:11800], 2e-3)
    long_input = np.random.default_rng(SEED).standard_normal(3 * 16000)
    fitted, _ = R.preprocess_audio(long_input, 16000, config)
    check_close("16 kHz input cropped, unchanged", fitted, long_input[:16000], 0.0)


def test_image_preprocessing(config):
    s = config["image"]["size"]
    mean, std = np.array(config["image"]["mean"]), np.array(config["image"]["std"])
    flat = np.full((50, 70, 3), [10, 128, 250], np.uint8)
    out = R.preprocess_image(flat, config)
    check(out.shape == (3, s, s), "image preprocessed shape", str(out.shape))
    check_close("constant image normalised", out[:, 5, 7], (np.array([10, 128, 250]) / 255.0 - mean) / std, 1e-12)
    # Centre crop: a 32x48 picture (shorter side already S) keeps columns 8..39.
    picture = np.zeros((s, s + 16, 3), np.uint8)
    picture[:, 8] = 255
    picture[:, 7] = 100
    cropped = R.preprocess_image(picture, config)
    check_close("centre crop keeps column 8 first", cropped[0, :, 0], np.full(s, (1.0 - mean[0]) / std[0]), 1e-9)
    # The antialiased bilinear filter against PIL's (torchvision ported it), per channel in float mode.
    from PIL import Image
    rng = np.random.default_rng(SEED)
    for height, width in ((75, 101), (20, 27), (300, 200)):          # down, up, portrait
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        ours = R.preprocess_image(pixels, {"size": s, "mean": [0, 0, 0], "std": [1, 1, 1]}) * 255.0  # [3, S, S]
        # torchvision: the shorter side becomes S, the longer int(S * long / short); crop offsets round().
        new_w, new_h = (int(s * width / height), s) if height <= width else (s, int(s * height / width))
        top, left = int(round((new_h - s) / 2.0)), int(round((new_w - s) / 2.0))
        for channel in range(3):
            resized = np.asarray(Image.fromarray(pixels[:, :, channel].astype(np.float32), mode="F")
                                 .resize((new_w, new_h), Image.BILINEAR), dtype=np.float64)
            check_close(f"resize {height}x{width} vs PIL bilinear (channel {channel})", ours[channel],
                        resized[top:top + s, left:left + s], 1e-4)
    frames = rng.integers(0, 256, (3, 40, 40, 3), dtype=np.uint8)
    video = R.preprocess_video(frames, config)
    check(video.shape == (config["video"]["frames"], 3, s, s), "video frames padded to F", str(video.shape))
    check_close("short video repeats its last frame", video[3], video[2], 0.0)


def test_scalars():
    x = np.array([[0.5, -0.25, 1.0 / 127 * 3.5, -1.0, 2.0, 0.0, 1e-30, -1e-30, 0.3]])
    check(R.convert_scalar(x, "i8").tolist() == [[64, -32, 4, -127, 127, 0, 0, 0, 38]], "i8 conversion",
          str(R.convert_scalar(x, "i8").tolist()))
    check(R.convert_scalar(x, "b1").tolist() == [[0b10101010, 0b10000000]], "b1 sign bits MSB first",
          str(R.convert_scalar(x, "b1").tolist()))
    check(R.convert_scalar(np.array([[1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.0]]), "bf16").tolist() == [[0x3F80, 0x3F82, 0xC000]],
          "bf16 round to nearest even", str([hex(v) for v in R.convert_scalar(np.array([[1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.0]]), "bf16")[0]]))
    check(R.convert_scalar(np.array([[1.0, -2.0, 0.5]]), "f16").tolist() == [[0x3C00, 0xC000, 0x3800]], "f16 bits")
    for kind in ("f32", "f16", "bf16", "i8", "b1"):
        y = np.random.default_rng(SEED).uniform(-1, 1, (3, 13))
        decoded = R.decode_scalar(R.convert_scalar(y, kind), kind, 13)
        expected = {"f32": y, "f16": y, "bf16": y, "i8": y * 127, "b1": (y > 0)}[kind]
        tolerance = {"f32": 1e-7, "f16": 1e-3, "bf16": 4e-3, "i8": 0.5, "b1": 0}[kind]
        check_close(f"{kind} decode(convert(x))", decoded, np.asarray(expected, np.float64), tolerance)


# ---------------------------------------------------------------------------------------------
# compare.py end to end on a dump the reference writes in float32, standing in for the engine.

def write_dump(directory, checkpoint, config):
    engine = R.Model.from_file(checkpoint, torch.float32)
    rng = np.random.default_rng(SEED)
    cases = []

    def save(name, array):
        np.save(os.path.join(directory, name), array)
        return name

    texts = [b"hello", b"a longer text, " * 3, bytes(range(200, 256))]
    images = [rng.integers(0, 256, (40 + 7 * i, 50 - 5 * i, 3), dtype=np.uint8) for i in range(2)]
    videos = [rng.integers(0, 256, (4, 36, 48, 3), dtype=np.uint8)]
    audios = [(rng.standard_normal(30000).astype(np.float32) * 0.1, 44100), (rng.standard_normal(9000).astype(np.float32), 16000)]
    for scalar in ("f32", "f16", "bf16", "i8", "b1"):
        for modality in R.MODALITIES:
            name = f"{modality}_{scalar}"
            dims = 32 if scalar in ("i8", "b1") else 0
            preprocessed = {}
            if modality == "text":
                items, inputs = texts, {"texts": [base64.b64encode(t).decode() for t in texts]}
            elif modality == "image":
                items = [R.preprocess_image(p, config, torch.float32) for p in images]
                inputs = {"pixels": [{"npy": save(f"{name}_pixels{i}.npy", p)} for i, p in enumerate(images)]}
                preprocessed["images"] = [save(f"{name}_pre{i}.npy", x.numpy()) for i, x in enumerate(items)]
            elif modality == "video":
                items = [R.preprocess_video(f, config, torch.float32) for f in videos]
                inputs = {"frames": [{"npy": save(f"{name}_frames{i}.npy", f)} for i, f in enumerate(videos)]}
                if scalar == "f32":      # one [F, 3, S, S] file per item
                    preprocessed["images"] = [save(f"{name}_pre{i}.npy", x.numpy()) for i, x in enumerate(items)]
                elif scalar == "f16":    # one [3, S, S] file per frame
                    preprocessed["images"] = [save(f"{name}_pre{i}_{f}.npy", frame.numpy())
                                              for i, x in enumerate(items) for f, frame in enumerate(x)]
            else:
                pairs = [R.preprocess_audio(a, r, config, torch.float32) for a, r in audios]
                items = [mel for _, mel in pairs]
                inputs = {"samples": [{"npy": save(f"{name}_samples{i}.npy", a), "rate": r} for i, (a, r) in enumerate(audios)]}
                preprocessed["resampled"] = [save(f"{name}_res{i}.npy", f.numpy()) for i, (f, _) in enumerate(pairs)]
                preprocessed["log_mels"] = [save(f"{name}_mel{i}.npy", m.numpy()) for i, (_, m) in enumerate(pairs)]
            with torch.no_grad():
                out = engine.encode(modality, items, dims)
            outputs = {
                "embeddings": save(f"{name}_emb.npy", R.convert_scalar(out["embeddings"].numpy(), scalar)),
                "token_vectors": save(f"{name}_tok.npy", R.convert_scalar(out["token_vectors"].numpy(), scalar)),
                "token_offsets": save(f"{name}_toff.npy", out["token_offsets"]),
                "states": save(f"{name}_st.npy", out["states"].numpy().astype(np.float32)),
                "state_offsets": save(f"{name}_soff.npy", out["state_offsets"]),
            }
            cases.append({"name": name, "modality": modality, "compute": "f32", "dimensions": dims, "scalar": scalar,
                          "inputs": inputs, "outputs": outputs, "preprocessed": preprocessed})
    choices = [b"xyz", b"\x00\x01", bytes(range(256))]
    with torch.no_grad():
        probabilities = engine.choose(texts, choices, [0, 2, 1])
    cases.append({"name": "choose", "modality": "choose", "compute": "f32",
                  "inputs": {"texts": [base64.b64encode(t).decode() for t in texts],
                             "choices": [base64.b64encode(c).decode() for c in choices], "groups": [0, 2, 1]},
                  "outputs": {"probabilities": save("choose_p.npy", torch.cat(probabilities).numpy().astype(np.float32)),
                              "choice_offsets": save("choose_off.npy", np.cumsum([0, 3, 2, 256]).astype(np.int64))}})
    with open(os.path.join(directory, "manifest.json"), "w") as handle:
        json.dump({"checkpoint": checkpoint, "cases": cases}, handle, indent=1)
    return cases


def run_compare(directory, *extra):
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), directory, *extra],
                            capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


def test_compare(directory, checkpoint, config):
    dump = os.path.join(directory, "dump")
    os.makedirs(dump)
    write_dump(dump, checkpoint, config)
    code, output = run_compare(dump)
    last = output.strip().splitlines()[-1] if output.strip() else ""
    check(code == 0 and last.endswith(" 0 failed"), "compare.py passes the float32 reference's dump",
          "\n".join(line for line in output.splitlines() if not line.startswith("PASS")) or output[-2000:])
    passed = int(last.split()[0]) if last and last.split()[0].isdigit() else 0
    # 5 outputs x 4 modalities x 5 scalars, choose 2, images 2 x 2 x 5, audio (2 x 2 + 2) x 5, video 2 + 4 x 2.
    expected = 5 * 4 * 5 + 2 + 20 + 30 + 10
    check(passed == expected, "compare.py compared every output", f"{last}; expected {expected} passed")

    def corrupt(file_name, change, case, label):
        path = os.path.join(dump, file_name)
        original = np.load(path)
        np.save(path, change(original.copy()))
        code, output = run_compare(dump, "--case", case)
        np.save(path, original)
        last = output.strip().splitlines()[-1] if output.strip() else ""
        check(code == 1 and "FAIL" in output and last.endswith(" failed") and not last.endswith(" 0 failed"),
              f"compare.py catches {label}", output[-1500:])

    def nudge_f32(a):
        a[0, 3] += 2e-3
        return a

    def flip_largest_bit(a):
        reference = np.load(os.path.join(dump, "text_f32_emb.npy"))[:, :32]
        column = int(np.argmax(np.abs(reference[0])))
        a[0, column // 8] ^= np.uint8(0x80 >> (column % 8))
        return a

    def off_by_two(a):
        a[1, 0] = np.int8(a[1, 0] + 2 if a[1, 0] < 100 else a[1, 0] - 2)
        return a

    def bf16_step(a):
        a[0, 0] = np.uint16(a[0, 0] + 3)
        return a

    corrupt("text_f32_emb.npy", nudge_f32, "text_f32", "an f32 embedding off by 2e-3")
    corrupt("image_f32_st.npy", lambda a: a * (1 + 1e-3), "image_f32", "states scaled by 1.001")
    corrupt("audio_b1_emb.npy", flip_largest_bit, "audio_b1", "a flipped B1 bit at a large value")
    corrupt("video_i8_tok.npy", off_by_two, "video_i8", "an I8 value off by 2")
    corrupt("text_bf16_emb.npy", bf16_step, "text_bf16", "a BF16 value 3 ulps away")
    corrupt("text_f32_toff.npy", lambda a: a + np.array([0, 0, 1, 0]), "text_f32", "wrong token offsets")
    corrupt("choose_p.npy", lambda a: np.roll(a, 1), "choose", "shuffled probabilities")
    corrupt("image_f16_pre0.npy", lambda a: a + 1e-3, "image_f16", "a resized image off by 1e-3")
    corrupt("audio_f32_mel1.npy", lambda a: a + 2e-4, "audio_f32", "a log-mel off by 2e-4")
    corrupt("video_f16_pre0_3.npy", lambda a: a[:, ::-1].copy(), "video_f16", "a flipped video frame")

    # Nothing compared is a failure: a case whose outputs are gone, a --case that names no case.
    manifest_path = os.path.join(dump, "manifest.json")
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    emptied = json.loads(json.dumps(manifest))
    for case in emptied["cases"]:
        if case["name"] == "text_f32":
            case["outputs"] = {}
            case.pop("preprocessed", None)
    with open(manifest_path, "w") as handle:
        json.dump(emptied, handle)
    code, output = run_compare(dump, "--case", "text_f32")
    check(code == 1 and "names no outputs to compare" in output, "compare.py fails a case with no outputs", output[-1500:])
    with open(manifest_path, "w") as handle:
        json.dump(manifest, handle)
    code, output = run_compare(dump, "--case", "no_such_case")
    check(code == 1 and "no such case" in output, "compare.py fails a --case that names no case", output[-1500:])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--write-dump":
        # An example dump in the manifest format, for whoever writes the engine's dumper.
        os.makedirs(sys.argv[2], exist_ok=True)
        config = R.sized_config("tiny")
        checkpoint = os.path.abspath(os.path.join(sys.argv[2], "tiny.safetensors"))
        R.random_checkpoint(checkpoint, config, seed=SEED, random_norms=True)
        write_dump(sys.argv[2], checkpoint, config)
        print(f"wrote {sys.argv[2]}/manifest.json")
        return 0
    print(f"seed {SEED}")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="uform-reference-") as directory:
        config = R.sized_config("tiny")
        checkpoint = os.path.join(directory, "tiny.safetensors")
        R.random_checkpoint(checkpoint, config, seed=SEED, random_norms=True)
        model = R.Model.from_file(checkpoint, torch.float64)
        tests = [
            ("safetensors", lambda: test_safetensors(directory)),
            ("checkpoint and tokens", lambda: test_checkpoint_and_tokens(model, config)),
            ("batching", lambda: test_batching(model, config)),
            ("attention", lambda: test_attention(model, config)),
            ("benchmark model", lambda: test_bench_model(checkpoint, model, config)),
            ("heads", lambda: test_heads(model, config)),
            ("choose", lambda: test_choose(model)),
            ("mel filters", test_mel_filters),
            ("log-mel", test_log_mel),
            ("audio preprocessing", lambda: test_audio_preprocessing(config)),
            ("image preprocessing", lambda: test_image_preprocessing(config)),
            ("scalars", test_scalars),
            ("compare.py", lambda: test_compare(directory, checkpoint, config)),
        ]
        for name, test in tests:
            try:
                test()
            except Exception as error:  # an exception is a failure of that group, not the end of the run
                import traceback
                traceback.print_exc()
                check(False, name, f"{type(error).__name__}: {error}")
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
