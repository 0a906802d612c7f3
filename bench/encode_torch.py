"""PyTorch peer of the engine's encode benchmark: items per second of the same model on the same weights.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/encode_torch.py CHECKPOINT MODALITY BATCH THREADS
        [--bf16 | --qdynamic] [--seconds S] [--text-bytes N] [--min-time T] [--repeats R]

MODALITY is text, image, video or audio.  The model is built from nn.Linear layers (so PyTorch's
fast GEMM paths are used; nn.TransformerEncoderLayer fails under BF16 autocast in torch 1.13) and
loaded from the checkpoint with the reader of tests/reference/uform_reference.py.  Inputs are
random tensors of the modality's preprocessed shape: text bytes (--text-bytes, default the
config's T), images [3, S, S], video [F, 3, S, S], audio log-mel [seconds * 100, M].  Every item
of a batch has the same length, so the batch is a dense tensor and no mask is needed.  The timed
work is stems + trunk + head (embeddings: CLS state normalised, projected, L2-normalised);
preprocessing is not timed.  Prints one JSON line.

--qdynamic times PyTorch's dynamic INT8 quantization of the same model
(torch.ao.quantization.quantize_dynamic on every nn.Linear, qint8 weights per tensor, activations
quantized per tensor on the fly: fbgemm on x86), the peer of the engine's I8 compute, and also
reports the cosine of its embeddings to the F32 model's on the same inputs (mean and worst).

Set OMP_WAIT_POLICY=PASSIVE in the environment (docs/benchmarks.md): without it PyTorch's OpenMP threads
spin against other work on this 2-core machine and F32 runs 2-4x slower.
"""

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import uform_reference as R  # noqa: E402

TRUNK_NORM_EPS = 1e-6


class Block(nn.Module):
    """Pre-norm block of docs/model.md: h = x + out(attn(norm1 x)); y = h + down(gelu(up(norm2 h)))."""

    def __init__(self, d, heads, mlp, eps=TRUNK_NORM_EPS):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.up = nn.Linear(d, mlp)
        self.down = nn.Linear(mlp, d)

    def forward(self, x):                                             # x [B, N, d]
        batch, n, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(self.norm1(x)).reshape(batch, n, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                              # [B, h, N, hd]
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        attended = torch.matmul(torch.softmax(scores, dim=-1), v)     # [B, h, N, hd]
        h = x + self.out(attended.permute(0, 2, 1, 3).reshape(batch, n, d))
        return h + self.down(nn.functional.gelu(self.up(self.norm2(h))))


class Encoder(nn.Module):
    """Stem of one modality + trunk + its head, with weights copied from a checkpoint."""

    def __init__(self, config, tensors, modality):
        super().__init__()
        self.config, self.modality = config, modality
        d, eps = config["hidden"], config.get("norm_eps", 1e-6)
        self.blocks = nn.ModuleList(Block(d, config["heads"], config["mlp"]) for _ in range(config["depth"]))
        for i, block in enumerate(self.blocks):
            names = {"norm1": "norm1", "qkv": "attn.qkv", "out": "attn.out", "norm2": "norm2",
                     "up": "mlp.up", "down": "mlp.down"}
            for attribute, name in names.items():
                module = getattr(block, attribute)
                module.weight.data.copy_(tensors[f"trunk.{i}.{name}.weight"])
                module.bias.data.copy_(tensors[f"trunk.{i}.{name}.bias"])
        self.norm = nn.LayerNorm(d, eps=eps)
        self.norm.weight.data.copy_(tensors[f"{modality}.norm.weight"])
        self.norm.bias.data.copy_(tensors[f"{modality}.norm.bias"])
        self.projection = nn.Linear(d, config["embedding"], bias=False)
        self.projection.weight.data.copy_(tensors[f"{modality}.projection"])
        self.modality_vector = nn.Parameter(tensors[f"modality.{modality}"].clone())
        if modality == "text":
            self.bytes = nn.Embedding(R.TEXT_VOCABULARY, d)
            self.bytes.weight.data.copy_(tensors["text.bytes"])
            self.positions = nn.Parameter(tensors["text.positions"].clone())
        else:
            self.patch = nn.Linear(tensors[f"{modality}.patch.weight"].shape[1], d)
            self.patch.weight.data.copy_(tensors[f"{modality}.patch.weight"])
            self.patch.bias.data.copy_(tensors[f"{modality}.patch.bias"])
            self.cls = nn.Parameter(tensors[f"{modality}.cls"].clone())
            if modality == "video":
                self.space = nn.Parameter(tensors["video.space"].clone())
                self.time = nn.Parameter(tensors["video.time"].clone())
            else:
                self.positions = nn.Parameter(tensors[f"{modality}.positions"].clone())

    def tokens(self, x):
        """Batched stem: text ids [B, n] (CLS first), images [B, 3, S, S], videos [B, F, 3, S, S],
        log-mels [B, frames, M] -> [B, N, d]."""
        if self.modality == "text":
            return self.bytes(x) + self.positions[: x.shape[1]] + self.modality_vector
        batch = x.shape[0]
        if self.modality == "image":
            p = self.config["image"]["patch"]
            c, s = x.shape[1], x.shape[2]
            g = s // p
            patches = x.reshape(batch, c, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(batch, g * g, c * p * p)
            rows = self.patch(patches) + self.positions[1:]
            cls = (self.cls + self.positions[0]).expand(batch, 1, -1)
        elif self.modality == "video":
            p, t = self.config["video"]["patch"], self.config["video"]["tubelet"]
            f, c, s = x.shape[1], x.shape[2], x.shape[3]
            g, tau = s // p, f // t
            tubes = x.reshape(batch, tau, t, c, g, p, g, p).permute(0, 1, 4, 6, 3, 2, 5, 7)
            rows = self.patch(tubes.reshape(batch, tau * g * g, c * t * p * p))
            rows = rows + (self.space[1:][None] + self.time[:tau, None]).reshape(tau * g * g, -1)
            cls = (self.cls + self.space[0]).expand(batch, 1, -1)
        else:
            frames, mels = x.shape[1], x.shape[2]
            a = frames // R.AUDIO_FRAMES_PER_TOKEN
            rows = self.patch(x[:, : a * R.AUDIO_FRAMES_PER_TOKEN].reshape(batch, a, R.AUDIO_FRAMES_PER_TOKEN * mels))
            rows = rows + self.positions[1: a + 1]
            cls = (self.cls + self.positions[0]).expand(batch, 1, -1)
        return torch.cat([cls, rows], dim=1) + self.modality_vector

    def forward(self, x):
        """-> (states [B, N, d], embeddings [B, E])."""
        h = self.tokens(x)
        for block in self.blocks:
            h = block(h)
        states = self.norm(h)
        embeddings = self.projection(states[:, 0])
        return states, embeddings / embeddings.norm(dim=-1, keepdim=True)


def random_inputs(config, modality, batch, text_bytes, seconds, generator):
    if modality == "text":
        ids = torch.randint(0, 256, (batch, text_bytes + 1), generator=generator)
        ids[:, 0] = R.CLS_ID
        return ids
    if modality == "image":
        s = config["image"]["size"]
        return torch.randn(batch, 3, s, s, generator=generator)
    if modality == "video":
        v = config["video"]
        return torch.randn(batch, v["frames"], 3, v["size"], v["size"], generator=generator)
    frames = int(seconds) * R.AUDIO_RATE // R.AUDIO_HOP
    return torch.randn(batch, frames, config["audio"]["mels"], generator=generator)


def main(argv):
    parser = argparse.ArgumentParser(description="PyTorch encode throughput on a UForm checkpoint")
    parser.add_argument("checkpoint")
    parser.add_argument("modality", choices=R.MODALITIES)
    parser.add_argument("batch", type=int)
    parser.add_argument("threads", type=int)
    parser.add_argument("--bf16", action="store_true", help="BF16 autocast (CPU)")
    parser.add_argument("--qdynamic", action="store_true", help="torch.ao.quantization.quantize_dynamic (qint8 Linear)")
    parser.add_argument("--seconds", type=int, help="audio length (default: the config's)")
    parser.add_argument("--text-bytes", type=int, help="text bytes per item (default: the config's T)")
    parser.add_argument("--min-time", type=float, default=3.0, help="seconds of timed work per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        print("warning: OMP_WAIT_POLICY=PASSIVE is not set; PyTorch may run slowly here", file=sys.stderr)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    config, tensors = R.load(args.checkpoint, torch.float32)
    text_bytes = args.text_bytes or config["text"]["bytes"]
    seconds = args.seconds or config["audio"]["seconds"]
    if args.modality == "text" and text_bytes > config["text"]["bytes"]:
        parser.error(f"--text-bytes {text_bytes} exceeds the config's {config['text']['bytes']}")
    if args.modality == "audio" and seconds != config["audio"]["seconds"]:
        parser.error(f"--seconds {seconds}: the checkpoint's audio positions fit {config['audio']['seconds']} s")
    model = Encoder(config, tensors, args.modality).eval()
    load_seconds = time.perf_counter() - started
    generator = torch.Generator().manual_seed(0)
    inputs = random_inputs(config, args.modality, args.batch, text_bytes, seconds, generator)
    cosine = None
    if args.qdynamic:
        with torch.inference_mode():
            reference = model(inputs)[1]
        model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        with torch.inference_mode():
            quantized = model(inputs)[1]
        similarity = (reference * quantized).sum(dim=-1) / (reference.norm(dim=-1) * quantized.norm(dim=-1))
        cosine = {"mean": float(similarity.mean()), "min": float(similarity.min())}

    # One autocast context around warm-up and timing, so its cache converts each weight to BF16
    # once (a fresh context per call would convert every weight on every call).
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16 else contextlib.nullcontext()
    rates = []
    with torch.inference_mode(), autocast:
        model(inputs)                                             # warm-up: allocations, packing, casts
        for _ in range(args.repeats):
            calls, begin = 0, time.perf_counter()
            while True:
                model(inputs)
                calls += 1
                elapsed = time.perf_counter() - begin
                if elapsed >= args.min_time:
                    break
            rates.append(calls * args.batch / elapsed)
    with torch.inference_mode():
        tokens = model.tokens(inputs[:1]).shape[1]
    rates.sort()
    result = {"modality": args.modality, "batch": args.batch, "threads": args.threads,
              "mode": "bf16" if args.bf16 else "qdynamic" if args.qdynamic else "f32", "items_per_second": rates[-1],
              "cosine_to_f32": cosine,
              "median_items_per_second": rates[len(rates) // 2], "repeats": args.repeats,
              "size": config.get("size"), "hidden": config["hidden"], "depth": config["depth"],
              "tokens_per_item": tokens, "text_bytes": text_bytes if args.modality == "text" else None,
              "seconds": seconds if args.modality == "audio" else None,
              "load_seconds": load_seconds, "torch": torch.__version__,
              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "machine": platform.machine()}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
