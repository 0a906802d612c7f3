"""PyTorch peer of the engine's training benchmark: one batched training step of the same model.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/train_torch.py [CHECKPOINT] [--size small]
        [--case image|text|all] [--mode f32|bf16|all] [--batch 32] [--threads 2]
        [--steps N] [--quick] [--image-text-bytes 32] [--json FILE]

The step is docs/training.md's, on text<->image pairs (case `image`: images of the config's S/p paired
with short texts) or on pairs of T-byte texts (case `text`: 256 bytes at `small`): both towers
through the shared trunk, `{modality}.norm`, `{modality}.projection`, the contrastive loss averaged
over the config's Matryoshka prefixes with the learned temperature of group 0 (clamped at 100), text
on side 0 and the other member on side 1 (so each anchor's candidates are the batch's other side:
the CLIP loss); then loss.backward(), global gradient-norm clipping at 1.0 and torch.optim.AdamW
(weight decay 0.1 on the rank-2 tensors except the position tables).  The model is built from
nn.Linear (bench/encode_torch.py's Block) with the checkpoint's weights, or random weights of a
named size (`--size small`, the default when no checkpoint is given).  Every item of a case has the
same length, so batches are dense tensors with no padding or mask.

Modes: F32, and BF16 autocast around the forward (backward through autocast's casts, as PyTorch's
recipe has it).  Timing: one warm-up step, then --steps timed steps (--quick: 1); the best step
is reported with its split into forward (embeddings + loss), backward, and optimizer (clipping +
AdamW + zeroing gradients).  GFLOP per step = 3 x the forward's matrix-product and attention flops
(stems, qkv, attention scores and values, out, mlp, projections, similarity logits).  Writes JSON
(stdout, or --json FILE with a table on stdout).

Set OMP_WAIT_POLICY=PASSIVE (docs/benchmarks.md): PyTorch's spinning OpenMP threads otherwise fight on
this 2-core machine.  Memory (peak RSS measured at `small`, batch 32): 4.4 GB for the image case,
9.8 GB for text-256; pass a smaller --batch on a crowded machine.
"""

import argparse
import contextlib
import json
import math
import os
import platform
import resource
import sys
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import uform_reference as R  # noqa: E402
from encode_torch import Block  # noqa: E402

TEMPERATURE_CLAMP = 100.0
OPTIMIZER = {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.98, "epsilon": 1e-6, "weight_decay": 0.1,
             "clip_norm": 1.0}


class Stem(nn.Module):
    """Text or image stem of docs/model.md (with its modality vector), batched."""

    def __init__(self, config, tensors, modality):
        super().__init__()
        self.config, self.modality = config, modality
        d = config["hidden"]
        self.modality_vector = nn.Parameter(tensors[f"modality.{modality}"].clone())
        self.positions = nn.Parameter(tensors[f"{modality}.positions"].clone())
        if modality == "text":
            self.bytes = nn.Embedding(R.TEXT_VOCABULARY, d)
            self.bytes.weight.data.copy_(tensors["text.bytes"])
        elif modality == "image":
            self.patch = nn.Linear(tensors["image.patch.weight"].shape[1], d)
            self.patch.weight.data.copy_(tensors["image.patch.weight"])
            self.patch.bias.data.copy_(tensors["image.patch.bias"])
            self.cls = nn.Parameter(tensors["image.cls"].clone())
        else:
            raise ValueError(f"the training benchmark has text and image stems, not {modality!r}")

    def forward(self, x):
        """text ids [B, n] ([CLS] first) or images [B, 3, S, S] -> [B, N, d]."""
        if self.modality == "text":
            return self.bytes(x) + self.positions[: x.shape[1]] + self.modality_vector
        batch, c, s = x.shape[0], x.shape[1], x.shape[2]
        p = self.config["image"]["patch"]
        g = s // p
        patches = x.reshape(batch, c, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(batch, g * g, c * p * p)
        rows = self.patch(patches) + self.positions[1:]
        cls = (self.cls + self.positions[0]).expand(batch, 1, -1)
        return torch.cat([cls, rows], dim=1) + self.modality_vector


class TrainModel(nn.Module):
    """Two towers over one trunk: modalities = (side 0, side 1), e.g. ("text", "image")."""

    def __init__(self, config, tensors, modalities=("text", "image")):
        super().__init__()
        self.config, self.modalities = config, tuple(modalities)
        d, e, eps = config["hidden"], config["embedding"], config.get("norm_eps", 1e-6)
        self.prefixes = [int(p) for p in config.get("matryoshka", [e])]
        self.blocks = nn.ModuleList(Block(d, config["heads"], config["mlp"]) for _ in range(config["depth"]))
        names = {"norm1": "norm1", "qkv": "attn.qkv", "out": "attn.out", "norm2": "norm2", "up": "mlp.up",
                 "down": "mlp.down"}
        for i, block in enumerate(self.blocks):
            for attribute, name in names.items():
                getattr(block, attribute).weight.data.copy_(tensors[f"trunk.{i}.{name}.weight"])
                getattr(block, attribute).bias.data.copy_(tensors[f"trunk.{i}.{name}.bias"])
        self.stems, self.norms, self.projections = nn.ModuleDict(), nn.ModuleDict(), nn.ModuleDict()
        for m in dict.fromkeys(self.modalities):
            self.stems[m] = Stem(config, tensors, m)
            self.norms[m] = nn.LayerNorm(d, eps=eps)
            self.norms[m].weight.data.copy_(tensors[f"{m}.norm.weight"])
            self.norms[m].bias.data.copy_(tensors[f"{m}.norm.bias"])
            self.projections[m] = nn.Linear(d, e, bias=False)
            self.projections[m].weight.data.copy_(tensors[f"{m}.projection"])
        self.temperature = nn.Parameter(tensors["temperatures"][0].clone())

    def embed(self, modality, x):
        """-> projected CLS states [B, E] (not normalised)."""
        h = self.stems[modality](x)
        for block in self.blocks:
            h = block(h)
        return self.projections[modality](self.norms[modality](h[:, 0]))

    def forward(self, left, right):
        """Contrastive loss of pairs (left[i], right[i]): docs/training.md's loss with sides, in F32."""
        a = self.embed(self.modalities[0], left)
        b = self.embed(self.modalities[1], right)
        dtype = torch.float64 if a.dtype == torch.float64 else torch.float32
        with torch.autocast("cpu", enabled=False):             # the loss in F32 (F64 in the self-test)
            a, b = a.to(dtype), b.to(dtype)
            scale = torch.clamp(torch.exp(self.temperature.to(dtype)), max=TEMPERATURE_CLAMP)
            target = torch.arange(a.shape[0])
            total = 0.0
            for p in self.prefixes:
                ea = nn.functional.normalize(a[:, :p], dim=-1)
                eb = nn.functional.normalize(b[:, :p], dim=-1)
                logits = scale * ea @ eb.T                                    # [B, B]: side 0 x side 1
                total = total + 0.5 * (nn.functional.cross_entropy(logits, target)
                                       + nn.functional.cross_entropy(logits.T, target))
        return total / len(self.prefixes)


def text_ids(texts):
    """bytes [B, n] -> ids [B, n + 1] with [CLS] first."""
    return torch.cat([torch.full((texts.shape[0], 1), R.CLS_ID, dtype=torch.long), texts], dim=1)


def random_tensors(config, seed=0):
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in R.tensor_shapes(config).items():
        if ".norm" in name and (name.endswith(".weight") or name.endswith(".bias")):
            tensors[name] = torch.full(shape, 1.0 if name.endswith(".weight") else 0.0)
        elif name == "temperatures":
            tensors[name] = torch.full(shape, math.log(1 / 0.07))
        else:
            std = 0.2 if name.endswith(".positions") or name in ("video.space", "video.time") else 0.02
            tensors[name] = torch.randn(shape, generator=generator) * std
    return tensors


def forward_flops(config, modality, batch, tokens, patch_inputs=0):
    """Multiply-adds x 2 of one tower's forward for `batch` items of `tokens` tokens."""
    d, mlp, e = config["hidden"], config["mlp"], config["embedding"]
    per_item = 0
    if modality == "image":
        per_item += 2 * (tokens - 1) * patch_inputs * d
    per_block = 2 * tokens * d * (3 * d + d + 2 * mlp) + 2 * 2 * tokens * tokens * d
    per_item += config["depth"] * per_block + 2 * d * e
    return batch * per_item


def optimizer_for(model):
    decayed, plain = [], []
    for name, parameter in model.named_parameters():
        (decayed if parameter.dim() == 2 and not name.endswith("positions") else plain).append(parameter)
    return torch.optim.AdamW([{"params": decayed, "weight_decay": OPTIMIZER["weight_decay"]},
                              {"params": plain, "weight_decay": 0.0}], lr=OPTIMIZER["learning_rate"],
                             betas=(OPTIMIZER["beta1"], OPTIMIZER["beta2"]), eps=OPTIMIZER["epsilon"], foreach=True)


def run_case(config, tensors, case, mode, batch, steps, image_text_bytes, generator):
    if case == "image":
        s = config["image"]["size"]
        modalities = ("text", "image")
        left = text_ids(torch.randint(0, 256, (batch, image_text_bytes), generator=generator))
        right = torch.randn(batch, 3, s, s, generator=generator)
        p = config["image"]["patch"]
        tokens = (s // p) ** 2 + 1
        flops = forward_flops(config, "text", batch, image_text_bytes + 1) + forward_flops(config, "image", batch, tokens, 3 * p * p)
    else:
        t = config["text"]["bytes"]
        modalities = ("text", "text")
        left = text_ids(torch.randint(0, 256, (batch, t), generator=generator))
        right = text_ids(torch.randint(0, 256, (batch, t), generator=generator))
        tokens = t + 1
        flops = 2 * forward_flops(config, "text", batch, tokens)
    flops += sum(2 * batch * batch * p for p in config["matryoshka"])
    model = TrainModel(config, tensors, modalities)
    optimizer = optimizer_for(model)
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if mode == "bf16" else contextlib.nullcontext
    timings = []
    for step in range(steps + 1):                 # step 0 is the warm-up
        cpu_begin = time.process_time()
        begin = time.perf_counter()
        with autocast():
            loss = model(left, right)
        forwarded = time.perf_counter()
        loss.backward()
        backwarded = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), OPTIMIZER["clip_norm"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ended = time.perf_counter()
        cpu_ended = time.process_time()
        if step:
            timings.append((ended - begin, forwarded - begin, backwarded - forwarded, ended - backwarded, float(loss),
                            cpu_ended - cpu_begin))
    timings.sort()
    best = timings[0]
    gflop = 3 * flops / 1e9
    result = {"case": case, "mode": mode, "batch": batch, "pairs": batch,
              "sequences_per_step": 2 * batch if case == "text" else batch,
              "tokens_per_item": tokens, "seconds_per_step": best[0],
              "median_seconds_per_step": timings[len(timings) // 2][0], "steps": steps,
              "forward_seconds": best[1], "backward_seconds": best[2], "optimizer_seconds": best[3],
              "gflop_per_step": gflop, "gflops": gflop / best[0], "loss": best[4],
              # CPU seconds of the process (all threads) of its least CPU-hungry step: a rate per
              # CPU-second survives other processes sharing the cores, where wall-clock does not.
              "cpu_seconds_per_step": min(t[5] for t in timings),
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if case == "image":
        result["images_per_second"] = batch / best[0]
    else:
        result["sequences_per_second"] = 2 * batch / best[0]
        result["pairs_per_second"] = batch / best[0]
    if case == "image":
        result["text_bytes"] = image_text_bytes
    return result


def main(argv):
    parser = argparse.ArgumentParser(description="PyTorch training-step throughput of the UForm model")
    parser.add_argument("checkpoint", nargs="?", help="a UForm checkpoint (default: random weights of --size)")
    parser.add_argument("--size", default="small", choices=("tiny", "small", "base"))
    parser.add_argument("--case", default="all", choices=("image", "text", "all"))
    parser.add_argument("--mode", default="all", choices=("f32", "bf16", "all"))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5, help="timed steps after one warm-up")
    parser.add_argument("--quick", action="store_true", help="1 timed step")
    parser.add_argument("--image-text-bytes", type=int, default=32, help="bytes of the texts paired with images")
    parser.add_argument("--json", help="write the JSON here (and a table to stdout)")
    args = parser.parse_args(argv)

    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        print("warning: OMP_WAIT_POLICY=PASSIVE is not set; PyTorch may run slowly here", file=sys.stderr)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    if args.checkpoint:
        config, tensors = R.load(args.checkpoint, torch.float32)
    else:
        config = R.sized_config(args.size)
        tensors = random_tensors(config)
    if args.image_text_bytes > config["text"]["bytes"]:
        parser.error(f"--image-text-bytes {args.image_text_bytes} exceeds the config's {config['text']['bytes']}")
    load_seconds = time.perf_counter() - started
    steps = 1 if args.quick else args.steps
    generator = torch.Generator().manual_seed(0)
    cases = ["image", "text"] if args.case == "all" else [args.case]
    modes = ["f32", "bf16"] if args.mode == "all" else [args.mode]
    results = []
    for case in cases:
        for mode in modes:
            results.append(run_case(config, tensors, case, mode, args.batch, steps, args.image_text_bytes, generator))
            if args.json:
                r = results[-1]
                rate = r.get("images_per_second") or r.get("sequences_per_second")
                unit = "images/s" if case == "image" else "sequences/s"
                print(f"{case:6s} {mode:5s} batch {r['batch']:3d}: {rate:8.2f} {unit:12s} {r['seconds_per_step']:.3f} s/step "
                      f"(forward {r['forward_seconds']:.3f}, backward {r['backward_seconds']:.3f}, "
                      f"optimizer {r['optimizer_seconds']:.3f}) {r['gflops']:.1f} GFLOP/s of {r['gflop_per_step']:.1f} GFLOP; "
                      f"peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    report = {"benchmark": "train_torch", "size": config.get("size"), "hidden": config["hidden"], "depth": config["depth"],
              "threads": args.threads, "checkpoint": args.checkpoint, "load_seconds": load_seconds,
              "torch": torch.__version__, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
              "machine": platform.machine(), "results": results}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
