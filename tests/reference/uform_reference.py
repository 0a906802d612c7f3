"""Independent PyTorch reference of the UForm 4 perception model.

Written from the design now in docs/model.md (never from the engine's C sources), so the parity tests
compare two implementations of one specification.  Importing this module has no side effects;
`python3 uform_reference.py random-checkpoint PATH [--size tiny|small|base] [--seed N]` writes a
checkpoint with random weights (used by the benchmarks and the self-tests).

Run it with Debian's interpreter /usr/bin/python3 (torch 1.13, torchvision 0.14, torchaudio 0.13,
numpy 1.24); no other packages are used: the safetensors reader and writer are below.

Tensor names.  The design (docs/model.md) stated most names; the ones it left implicit are ASSUMED
here (docs/model.md now states them all, as below), and the engine must use the same spelling:

    text.bytes [260, d], text.positions [T+2, d], modality.{m} [d]            (stated)
    image.patch.weight [d, 3*p*p], image.patch.bias [d], image.cls [d],
    image.positions [(S/p)^2+1, d]                                           (stated)
    video.patch.weight [d, 3*t*p*p], video.patch.bias [d], video.cls [d],
    video.space [(S/p)^2+1, d], video.time [F/t, d]                          (stated)
    audio.patch.weight [d, 4*M], audio.patch.bias [d], audio.cls [d],
    audio.positions [A+1, d]                                                 (stated)
    trunk.{i}.norm1.weight, trunk.{i}.norm1.bias [d]                         (ASSUMED .weight/.bias)
    trunk.{i}.attn.qkv.weight [3d, d], trunk.{i}.attn.qkv.bias [3d]          (stated)
    trunk.{i}.attn.out.weight [d, d], trunk.{i}.attn.out.bias [d]            (stated)
    trunk.{i}.norm2.weight, trunk.{i}.norm2.bias [d]                         (ASSUMED .weight/.bias)
    trunk.{i}.mlp.up.weight [mlp, d], trunk.{i}.mlp.up.bias [mlp]            (stated)
    trunk.{i}.mlp.down.weight [d, mlp], trunk.{i}.mlp.down.bias [d]          (stated)
    {m}.norm.weight, {m}.norm.bias [d], {m}.projection [E, d]                (stated)
    choose.norm.weight, choose.norm.bias [d]                                 (ASSUMED .weight/.bias)
    choose.head.weight [256, d], choose.head.bias [256]                      (stated)
    temperatures [G]                                                         (ASSUMED always present:
                                                                              docs/training.md uses it for
                                                                              every relation)

LayerNorm epsilon.  docs/model.md gives the trunk's norm1/norm2 eps 1e-6 literally and the heads
(`{m}.norm`, and `choose.norm`, ASSUMED) config "norm_eps".  Every named size has norm_eps = 1e-6,
so the two agree; TRUNK_NORM_EPS keeps the literal value should a checkpoint differ.

Attention.  qkv = x W^T + b has 3d columns laid out [3, heads, d/heads]: columns [0, d) are the
queries (head h owns columns h*d/heads ...), then keys, then values — the layout of
torch.nn.MultiheadAttention's in_proj, which the self-test checks.
"""

import base64
import json
import math
import struct
import sys

import numpy as np
import torch

TRUNK_NORM_EPS = 1e-6
CLS_ID = 256
NEXT_ID = 257
TEXT_VOCABULARY = 260
AUDIO_RATE = 16000
AUDIO_N_FFT = 400
AUDIO_HOP = 160
AUDIO_FRAMES_PER_TOKEN = 4
MODALITIES = ("text", "image", "video", "audio")

# ---------------------------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length, JSON header, then the raw little-endian data.

_NUMPY_OF = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("u1"), "BF16": np.dtype("<u2"),
}


def read_safetensors(path):
    """Returns (metadata dict, {name: numpy array}) with BF16 widened to float32 exactly."""
    with open(path, "rb") as handle:
        blob = handle.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, shorter than the 8-byte header length")
    (header_length,) = struct.unpack("<Q", blob[:8])
    if header_length > len(blob) - 8:
        raise ValueError(f"{path}: header length {header_length} runs past the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + header_length].decode("utf-8"))
    data = memoryview(blob)[8 + header_length:]
    metadata = header.pop("__metadata__", {}) or {}
    arrays, ranges = {}, []
    for name, entry in header.items():
        kind, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if kind not in _NUMPY_OF:
            raise ValueError(f"tensor '{name}': dtype {kind} is not supported")
        expected = int(np.prod(shape, dtype=np.int64)) * _NUMPY_OF[kind].itemsize
        if not (0 <= begin <= end <= len(data)) or end - begin != expected:
            raise ValueError(f"tensor '{name}': byte range [{begin}, {end}) does not hold {kind} {shape} "
                             f"({expected} bytes) inside {len(data)} data bytes")
        ranges.append((begin, end, name))
        raw = np.frombuffer(data[begin:end], dtype=_NUMPY_OF[kind]).reshape(shape)
        if kind == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        elif kind == "BOOL":
            raw = raw.astype(bool)
        arrays[name] = raw.copy()
    ranges.sort()
    for (_, end, first), (begin, _, second) in zip(ranges, ranges[1:]):
        if begin < end:
            raise ValueError(f"tensor '{second}': byte range overlaps tensor '{first}'")
    return metadata, arrays


def load(path, dtype=torch.float32):
    """Reads a UForm checkpoint: (config dict, {name: tensor}); floating tensors become `dtype`."""
    metadata, arrays = read_safetensors(path)
    if metadata.get("uform.format") != "4":
        raise ValueError(f"{path}: __metadata__ 'uform.format' is {metadata.get('uform.format')!r}, expected '4'")
    if "uform.config" not in metadata:
        raise ValueError(f"{path}: __metadata__ has no 'uform.config'")
    config = json.loads(metadata["uform.config"])
    tensors = {}
    for name, array in arrays.items():
        tensor = torch.from_numpy(np.ascontiguousarray(array))
        tensors[name] = tensor.to(dtype) if tensor.is_floating_point() else tensor
    return config, tensors


def float32_to_bf16_bits(values):
    """Round-to-nearest-even float32 -> bfloat16, as uint16 bit patterns (no NaNs expected)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def bf16_bits_to_float32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, metadata):
    """tensors: {name: (kind, array)} with kind one of _NUMPY_OF; BF16 rounds float32 to nearest even."""
    header, chunks, offset = {}, [], 0
    for name, (kind, array) in tensors.items():
        array = np.asarray(array)
        if kind == "BF16":
            raw = float32_to_bf16_bits(array.astype(np.float32)).tobytes()
        else:
            raw = np.ascontiguousarray(array, dtype=_NUMPY_OF[kind]).tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)))
        handle.write(text)
        for raw in chunks:
            handle.write(raw)


# ---------------------------------------------------------------------------------------------
# Configs and random checkpoints.

_SIZES = {  # hidden, depth, heads, mlp, embedding, image S, patch, text bytes, audio s, frames, tubelet
    "tiny": (128, 2, 2, 512, 64, 32, 8, 64, 1, 4, 2),
    "small": (384, 12, 6, 1536, 256, 224, 16, 256, 10, 8, 2),
    "base": (768, 12, 12, 3072, 512, 224, 16, 256, 10, 8, 2),
}


def sized_config(size="tiny"):
    d, depth, heads, mlp, e, s, p, t, seconds, frames, tubelet = _SIZES[size]
    return {
        "format": 4, "size": size, "hidden": d, "depth": depth, "heads": heads, "mlp": mlp,
        "embedding": e, "matryoshka": [e // 4, e // 2, e], "temperature_groups": 4, "norm_eps": 1e-6,
        "modalities": list(MODALITIES),
        "text": {"bytes": t},
        "image": {"size": s, "patch": p, "mean": [0.48145466, 0.4578275, 0.40821073],
                  "std": [0.26862954, 0.26130258, 0.27577711]},
        "video": {"size": s, "patch": p, "frames": frames, "tubelet": tubelet},
        "audio": {"rate": AUDIO_RATE, "seconds": seconds, "mels": 80},
    }


def audio_frames(config):
    """Log-mel frames per item: centred STFT gives samples/hop + 1 frames, the last is dropped."""
    return config["audio"]["seconds"] * AUDIO_RATE // AUDIO_HOP


def tensor_shapes(config):
    """{name: shape} of every tensor a checkpoint of this config holds (inference tensors only)."""
    d, mlp, e = config["hidden"], config["mlp"], config["embedding"]
    shapes = {"temperatures": [config["temperature_groups"]]}
    for i in range(config["depth"]):
        block = f"trunk.{i}."
        shapes.update({
            block + "norm1.weight": [d], block + "norm1.bias": [d],
            block + "attn.qkv.weight": [3 * d, d], block + "attn.qkv.bias": [3 * d],
            block + "attn.out.weight": [d, d], block + "attn.out.bias": [d],
            block + "norm2.weight": [d], block + "norm2.bias": [d],
            block + "mlp.up.weight": [mlp, d], block + "mlp.up.bias": [mlp],
            block + "mlp.down.weight": [d, mlp], block + "mlp.down.bias": [d],
        })
    for m in config["modalities"]:
        shapes.update({f"modality.{m}": [d], f"{m}.norm.weight": [d], f"{m}.norm.bias": [d],
                       f"{m}.projection": [e, d]})
        if m == "text":
            shapes.update({"text.bytes": [TEXT_VOCABULARY, d], "text.positions": [config["text"]["bytes"] + 2, d],
                           "choose.norm.weight": [d], "choose.norm.bias": [d],
                           "choose.head.weight": [256, d], "choose.head.bias": [256]})
        elif m == "image":
            s, p = config["image"]["size"], config["image"]["patch"]
            shapes.update({"image.patch.weight": [d, 3 * p * p], "image.patch.bias": [d], "image.cls": [d],
                           "image.positions": [(s // p) ** 2 + 1, d]})
        elif m == "video":
            v = config["video"]
            s, p, t, f = v["size"], v["patch"], v["tubelet"], v["frames"]
            shapes.update({"video.patch.weight": [d, 3 * t * p * p], "video.patch.bias": [d], "video.cls": [d],
                           "video.space": [(s // p) ** 2 + 1, d], "video.time": [f // t, d]})
        elif m == "audio":
            mels = config["audio"]["mels"]
            shapes.update({"audio.patch.weight": [d, AUDIO_FRAMES_PER_TOKEN * mels], "audio.patch.bias": [d],
                           "audio.cls": [d],
                           "audio.positions": [audio_frames(config) // AUDIO_FRAMES_PER_TOKEN + 1, d]})
    return shapes


def _is_norm(name):
    return ".norm" in name and (name.endswith(".weight") or name.endswith(".bias"))


def random_checkpoint(path, config, seed=0, random_norms=False):
    """Weights normal(0, 0.02) in BF16; norms (F32) at 1 and 0 unless random_norms; temperatures F32.

    random_norms draws norm weights around 1 and biases around 0 so tests see a swapped
    weight/bias or a missing norm; temperatures are drawn in [-0.5, 0.5] for the same reason."""
    generator = np.random.default_rng(seed)
    tensors = {}
    for name, shape in tensor_shapes(config).items():
        if _is_norm(name):
            if random_norms:
                base = 1.0 if name.endswith(".weight") else 0.0
                tensors[name] = ("F32", base + 0.1 * generator.standard_normal(shape).astype(np.float32))
            else:
                tensors[name] = ("F32", np.full(shape, 1.0 if name.endswith(".weight") else 0.0, np.float32))
        elif name == "temperatures":
            values = generator.uniform(-0.5, 0.5, shape) if random_norms else np.zeros(shape)
            tensors[name] = ("F32", values.astype(np.float32))
        else:
            tensors[name] = ("BF16", 0.02 * generator.standard_normal(shape).astype(np.float32))
    metadata = {"uform.format": "4", "uform.config": json.dumps(config)}
    write_safetensors(path, tensors, metadata)


# ---------------------------------------------------------------------------------------------
# Preprocessing, from raw inputs to the tensors the stems take.

def preprocess_image(pixels, config, dtype=torch.float64):
    """uint8 [H, W, 3] -> [3, S, S]: torchvision resize of the shorter side to S (antialiased
    bilinear on the float tensor, no rounding to uint8), centre crop S x S, /255, CLIP normalise."""
    import torchvision.transforms.functional as TF
    image = config["image"] if "image" in config else config
    size = image["size"]
    x = torch.as_tensor(np.asarray(pixels)).permute(2, 0, 1).to(dtype)      # [3, H, W], 0..255
    x = TF.resize(x, size, interpolation=TF.InterpolationMode.BILINEAR, antialias=True)
    x = TF.center_crop(x, [size, size])                                      # [3, S, S]
    mean = torch.tensor(image.get("mean", [0.48145466, 0.4578275, 0.40821073]), dtype=dtype)
    std = torch.tensor(image.get("std", [0.26862954, 0.26130258, 0.27577711]), dtype=dtype)
    return (x / 255.0 - mean[:, None, None]) / std[:, None, None]


def preprocess_video(frames, config, dtype=torch.float64):
    """uint8 [F', H, W, 3] decoded frames -> [F, 3, S, S]; fewer than F frames repeat the last."""
    video = config["video"]
    image = dict(config.get("image", {}))
    image["size"] = video["size"]
    frames = np.asarray(frames)
    count = video["frames"]
    if frames.shape[0] < count:
        frames = np.concatenate([frames, np.repeat(frames[-1:], count - frames.shape[0], axis=0)])
    return torch.stack([preprocess_image(frame, image, dtype) for frame in frames[:count]])


def resample(samples, rate, dtype=torch.float64):
    """float mono samples at `rate` -> 16 kHz with torchaudio's default windowed sinc."""
    import torchaudio.functional as AF
    x = torch.as_tensor(np.asarray(samples)).to(dtype)
    if rate == AUDIO_RATE:
        return x
    return AF.resample(x, int(rate), AUDIO_RATE)


def fit_audio(samples, seconds):
    """Crops or zero-pads 16 kHz samples to `seconds`."""
    length = int(seconds) * AUDIO_RATE
    if samples.shape[0] >= length:
        return samples[:length]
    return torch.nn.functional.pad(samples, (0, length - samples.shape[0]))


def hz_to_mel_slaney(hz):
    """librosa's Slaney mel scale: linear 200/3 Hz per mel below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3.0, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    linear = hz / f_sp
    logarithmic = min_log_mel + np.log(np.maximum(hz, min_log_hz) / min_log_hz) / logstep
    return np.where(hz >= min_log_hz, logarithmic, linear)


def mel_to_hz_slaney(mel):
    mel = np.asarray(mel, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3.0, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)), f_sp * mel)


def mel_filters(mels=80, rate=AUDIO_RATE, n_fft=AUDIO_N_FFT, f_min=0.0, f_max=8000.0):
    """[mels, n_fft/2+1] triangular Slaney-normalised filters (librosa.filters.mel, htk=False,
    norm='slaney'), as Whisper's mel_filters.npz holds them, computed in float64."""
    bins = np.linspace(0.0, rate / 2.0, n_fft // 2 + 1)
    edges = mel_to_hz_slaney(np.linspace(hz_to_mel_slaney(f_min), hz_to_mel_slaney(f_max), mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    weights = np.zeros((mels, bins.size))
    for m in range(mels):
        rising = -ramps[m] / widths[m]
        falling = ramps[m + 2] / widths[m + 1]
        weights[m] = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2:mels + 2] - edges[:mels]))[:, None]
    return weights


def log_mel(samples, mels=80):
    """Whisper's log-mel of 16 kHz samples [n] -> [n/160, mels] (frames x mels)."""
    x = torch.as_tensor(samples)
    window = torch.hann_window(AUDIO_N_FFT, periodic=True, dtype=x.dtype)
    spectrum = torch.stft(x, AUDIO_N_FFT, AUDIO_HOP, window=window, center=True, pad_mode="reflect",
                          return_complex=True)                                  # [201, n/160 + 1]
    power = spectrum[:, :-1].abs() ** 2                                        # drop the last frame
    filters = torch.from_numpy(mel_filters(mels)).to(x.dtype)                  # [mels, 201]
    logs = torch.clamp(filters @ power, min=1e-10).log10()                     # [mels, frames]
    logs = torch.maximum(logs, logs.max() - 8.0)
    return ((logs + 4.0) / 4.0).T.contiguous()                                 # [frames, mels]


def preprocess_audio(samples, rate, config, dtype=torch.float64):
    """Raw float samples at `rate` -> (resampled and fitted [seconds*16000], log-mel [frames, M])."""
    fitted = fit_audio(resample(samples, rate, dtype), config["audio"]["seconds"])
    return fitted, log_mel(fitted, config["audio"]["mels"])


def truncate_text(data, config, keep_end=False):
    """Encoding keeps a text's first T bytes; text_choose keeps its last T (the bytes next to the
    byte being chosen), as the engine's header documents."""
    limit = config["text"]["bytes"]
    data = bytes(data)
    return data[-limit:] if keep_end and len(data) > limit else data[:limit]


# ---------------------------------------------------------------------------------------------
# Output scalar conversions (docs/abi.md): the storage the engine's dumps use.

def convert_scalar(values, kind):
    """float [rows, cols] -> numpy in the dump's storage: f32; f16/bf16 as uint16 bits (round to
    nearest even); i8 = round(x*127) clamped to +-127; b1 = sign bits (set where x > 0) packed
    eight columns a byte, most significant bit first, rows padded to whole bytes."""
    x = np.asarray(values, dtype=np.float64)
    if kind == "f32":
        return x.astype(np.float32)
    if kind == "f16":
        return x.astype(np.float32).astype(np.float16).view(np.uint16)
    if kind == "bf16":
        return float32_to_bf16_bits(x.astype(np.float32))
    if kind == "i8":
        return np.clip(np.rint(x * 127.0), -127, 127).astype(np.int8)
    if kind == "b1":
        return np.packbits(x > 0, axis=-1, bitorder="big")
    raise ValueError(f"scalar kind {kind!r} is not one of f32, f16, bf16, i8, b1")


def decode_scalar(stored, kind, columns):
    """Dump storage -> float64 values (b1 -> 0/1 bits) [rows, columns]."""
    stored = np.asarray(stored)
    if kind == "f32":
        return stored.astype(np.float64)
    if kind == "f16":
        return stored.astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "bf16":
        return bf16_bits_to_float32(stored).astype(np.float64)
    if kind == "i8":
        return stored.astype(np.float64)
    if kind == "b1":
        return np.unpackbits(stored.astype(np.uint8), axis=-1, bitorder="big")[..., :columns].astype(np.float64)
    raise ValueError(f"scalar kind {kind!r} is not one of f32, f16, bf16, i8, b1")


# ---------------------------------------------------------------------------------------------
# The model.

def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def gelu(x):
    """The exact erf form: x/2 (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def linear(x, weight, bias=None):
    y = x @ weight.T
    return y if bias is None else y + bias


class Model:
    """Functional reference: every op spelled out so it runs in float64 (parity) or float32."""

    def __init__(self, config, tensors):
        self.config, self.w = config, tensors
        self.d, self.heads, self.depth = config["hidden"], config["heads"], config["depth"]
        self.eps = config.get("norm_eps", 1e-6)
        self.dtype = tensors["trunk.0.attn.qkv.weight"].dtype

    @classmethod
    def from_file(cls, path, dtype=torch.float64):
        config, tensors = load(path, dtype)
        return cls(config, tensors)

    # --- stems: one item -> [tokens, d] --------------------------------------------------------

    def text_tokens(self, data, next_token=False):
        """[CLS] bytes (truncated to T) [NEXT]? -> [1 + n (+1), d]."""
        ids = [CLS_ID] + list(truncate_text(data, self.config, keep_end=next_token)) + ([NEXT_ID] if next_token else [])
        ids = torch.tensor(ids, dtype=torch.long)
        rows = self.w["text.bytes"][ids] + self.w["text.positions"][: len(ids)]
        return rows + self.w["modality.text"]

    def image_tokens(self, image):
        """[3, S, S] preprocessed -> [(S/p)^2 + 1, d]; patches row-major, flattened (c, y, x)."""
        p = self.config["image"]["patch"]
        c, s, _ = image.shape
        g = s // p
        patches = image.to(self.dtype).reshape(c, g, p, g, p).permute(1, 3, 0, 2, 4).reshape(g * g, c * p * p)
        rows = linear(patches, self.w["image.patch.weight"], self.w["image.patch.bias"])
        cls = self.w["image.cls"][None, :]
        rows = torch.cat([cls, rows]) + self.w["image.positions"]
        return rows + self.w["modality.image"]

    def video_tokens(self, frames):
        """[F, 3, S, S] preprocessed -> [(F/t)(S/p)^2 + 1, d]; tubelets (c, frame, y, x), time-major."""
        v = self.config["video"]
        p, t = v["patch"], v["tubelet"]
        f, c, s, _ = frames.shape
        g, tau = s // p, f // t
        x = frames.to(self.dtype).reshape(tau, t, c, g, p, g, p)          # [tau, t, c, gy, py, gx, px]
        x = x.permute(0, 3, 5, 2, 1, 4, 6).reshape(tau * g * g, c * t * p * p)
        rows = linear(x, self.w["video.patch.weight"], self.w["video.patch.bias"])
        space, time = self.w["video.space"], self.w["video.time"]
        rows = rows + (space[1:][None, :, :] + time[:tau, None, :]).reshape(tau * g * g, -1)
        cls = (self.w["video.cls"] + space[0])[None, :]
        return torch.cat([cls, rows]) + self.w["modality.video"]

    def audio_tokens(self, mel):
        """[frames, M] log-mel -> [frames/4 + 1, d]; 4 consecutive frames per token, frame-major."""
        frames, mels = mel.shape
        a = frames // AUDIO_FRAMES_PER_TOKEN
        x = mel[: a * AUDIO_FRAMES_PER_TOKEN].to(self.dtype).reshape(a, AUDIO_FRAMES_PER_TOKEN * mels)
        rows = linear(x, self.w["audio.patch.weight"], self.w["audio.patch.bias"])
        rows = torch.cat([self.w["audio.cls"][None, :], rows]) + self.w["audio.positions"][: a + 1]
        return rows + self.w["modality.audio"]

    # --- trunk ---------------------------------------------------------------------------------

    def attention(self, x, i, mask=None):
        """x [B, N, d]; mask [B, N] True for real tokens -> [B, N, d]."""
        w, b = self.w[f"trunk.{i}.attn.qkv.weight"], self.w[f"trunk.{i}.attn.qkv.bias"]
        batch, n, d = x.shape
        h, hd = self.heads, d // self.heads
        qkv = linear(x, w, b).reshape(batch, n, 3, h, hd).permute(2, 0, 3, 1, 4)   # [3, B, h, N, hd]
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)                          # [B, h, N, N]
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v                                   # [B, h, N, hd]
        out = out.permute(0, 2, 1, 3).reshape(batch, n, d)
        return linear(out, self.w[f"trunk.{i}.attn.out.weight"], self.w[f"trunk.{i}.attn.out.bias"])

    def block(self, x, i, mask=None):
        p = f"trunk.{i}."
        h = x + self.attention(layer_norm(x, self.w[p + "norm1.weight"], self.w[p + "norm1.bias"],
                                          TRUNK_NORM_EPS), i, mask)
        up = linear(layer_norm(h, self.w[p + "norm2.weight"], self.w[p + "norm2.bias"], TRUNK_NORM_EPS),
                    self.w[p + "mlp.up.weight"], self.w[p + "mlp.up.bias"])
        return h + linear(gelu(up), self.w[p + "mlp.down.weight"], self.w[p + "mlp.down.bias"])

    def trunk(self, items, padded=False):
        """list of [n_i, d] -> list of [n_i, d]; each item attends over its own tokens only.

        By default items of equal length run together and no padding exists; padded=True runs one
        batch padded to the longest item with the padded keys masked (the self-test checks that
        the two agree)."""
        if not items:
            return []
        if padded:
            return self._trunk_padded(items)
        results = [None] * len(items)
        by_length = {}
        for index, item in enumerate(items):
            by_length.setdefault(item.shape[0], []).append(index)
        for indices in by_length.values():
            x = torch.stack([items[i].to(self.dtype) for i in indices])       # [B, n, d]
            for i in range(self.depth):
                x = self.block(x, i)
            for row, index in enumerate(indices):
                results[index] = x[row]
        return results

    def _trunk_padded(self, items):
        lengths = [item.shape[0] for item in items]
        longest = max(lengths)
        x = torch.zeros(len(items), longest, self.d, dtype=self.dtype)
        mask = torch.zeros(len(items), longest, dtype=torch.bool)
        for row, item in enumerate(items):
            x[row, : item.shape[0]] = item
            mask[row, : item.shape[0]] = True
        for i in range(self.depth):
            x = self.block(x, i, mask)
        return [x[row, :n] for row, n in enumerate(lengths)]

    # --- heads ---------------------------------------------------------------------------------

    def project(self, modality, states, dimensions=0):
        """states [n, d] -> unit vectors [n, E or dimensions]; the prefix is cut before normalising."""
        vectors = states @ self.w[f"{modality}.projection"].T
        if dimensions:
            vectors = vectors[:, :dimensions]
        return vectors / vectors.norm(dim=-1, keepdim=True)

    def heads_of(self, modality, finals, dimensions=0):
        """Final trunk states per item -> dict of float tensors: states [tokens, d], state offsets,
        embeddings [items, E'], token_vectors [tokens, E'], token offsets [items+1] (int64)."""
        w, b = self.w[f"{modality}.norm.weight"], self.w[f"{modality}.norm.bias"]
        states = [layer_norm(item, w, b, self.eps) for item in finals]
        if not states:
            columns = dimensions or self.config["embedding"]
            empty = torch.zeros(0, columns, dtype=self.dtype)
            return {"states": torch.zeros(0, self.d, dtype=self.dtype), "state_offsets": np.zeros(1, np.int64),
                    "embeddings": empty, "token_vectors": empty, "token_offsets": np.zeros(1, np.int64)}
        offsets = np.cumsum([0] + [s.shape[0] for s in states]).astype(np.int64)
        tokens = self.project(modality, torch.cat(states), dimensions)
        embeddings = self.project(modality, torch.stack([s[0] for s in states]), dimensions)
        return {"states": torch.cat(states), "state_offsets": offsets, "embeddings": embeddings,
                "token_vectors": tokens, "token_offsets": offsets}

    def stem(self, modality, item):
        return {"text": self.text_tokens, "image": self.image_tokens, "video": self.video_tokens,
                "audio": self.audio_tokens}[modality](item)

    def encode(self, modality, items, dimensions=0):
        """items: text bytes, [3,S,S] images, [F,3,S,S] videos or [frames, M] log-mels."""
        return self.heads_of(modality, self.trunk([self.stem(modality, item) for item in items]), dimensions)

    def choose(self, texts, choices, groups=None):
        """-> list of float tensors, one per text: probabilities of its legal bytes in listed order."""
        groups = groups or [0] * len(texts)
        finals = self.trunk([self.text_tokens(text, next_token=True) for text in texts])
        results = []
        for final, legal, group in zip(finals, choices, groups):
            legal = list(bytes(legal))
            if not legal or len(set(legal)) != len(legal):
                raise ValueError(f"choices {legal!r}: must be non-empty and distinct")
            hidden = layer_norm(final[-1], self.w["choose.norm.weight"], self.w["choose.norm.bias"], self.eps)
            logits = linear(hidden, self.w["choose.head.weight"], self.w["choose.head.bias"])   # [256]
            scaled = logits[torch.tensor(legal)] * torch.exp(self.w["temperatures"][group])
            results.append(torch.softmax(scaled, dim=0))
        return results


def decode_text(entry):
    return base64.b64decode(entry)


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    writer = sub.add_parser("random-checkpoint", help="write a checkpoint with random weights")
    writer.add_argument("path")
    writer.add_argument("--size", default="tiny", choices=sorted(_SIZES))
    writer.add_argument("--seed", type=int, default=0)
    writer.add_argument("--random-norms", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "random-checkpoint":
        random_checkpoint(args.path, sized_config(args.size), args.seed, args.random_norms)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
