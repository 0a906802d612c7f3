"""Self-tests of the training reference's BF16 compute (no engine needed):
/usr/bin/python3 test_train_bf16_self.py

- bf16() against the bit-level definition (float32 bit pattern, round to nearest, ties to even) on
  hand-picked values with known answers and on random float32 bit patterns; float64 input goes
  through float32 first.
- Bf16Linear: without rounding, its backward is autograd's (and gradcheck's); with BF16 rounding,
  its forward and backward are the stated formulas (written here in numpy), equal to autograd of the
  plain product when every operand is already a BF16 value, and the bias is never rounded.
- BlockedAttention: without rounding, forward and backward equal plain softmax attention under
  autograd (one block, exactly one block, three blocks); with rounding, forward, log-sum-exp and
  backward equal a per-row loop of the stated formulas, for one block and across blocks (the
  backward's own roundings show: with them taken out it is not the stated one).
- The whole BF16 forward: with rounding turned off it is the F32 forward (losses and gradients);
  exactly the documented weights are rounded (a recorder sees which leaves reach the rounding).
- compare_train.py: an example dump written with --compute bf16 passes in BF16 mode with every
  comparison within float32 storage (and --spread reports its jittered twins); a changed master
  weights (every 7th element) and a changed starting weight fail; the same dump judged as F32 compute fails (BF16
  compute is not F32).

Prints "N passed, N failed" and exits 1 on any failure.  Seeds are fixed and printed.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import uform_reference as R  # noqa: E402
import train_reference as T  # noqa: E402

SEED = 20261201
PASSED = FAILED = 0


def check(ok, label, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL {label}: {detail}", flush=True)


def check_close(label, got, expected, tolerance):
    """max |got - expected| <= tolerance * max(1, max |expected|); prints both at the worst element."""
    got = np.asarray(got.detach().numpy() if torch.is_tensor(got) else got, dtype=np.float64)
    expected = np.asarray(expected.detach().numpy() if torch.is_tensor(expected) else expected, dtype=np.float64)
    if got.shape != expected.shape:
        check(False, label, f"shape {list(got.shape)} vs {list(expected.shape)}")
        return
    if got.size == 0:
        check(True, label)
        return
    difference = np.abs(got - expected)
    scale = max(1.0, float(np.abs(expected).max()))
    index = np.unravel_index(int(np.argmax(difference)), got.shape)
    check(float(difference.max()) <= tolerance * scale, label,
          f"max |diff| {difference.max():.3e} > {tolerance:.0e} x {scale:.3g} at {list(map(int, index))}: "
          f"got {got[index]!r}, expected {expected[index]!r}")


# ---------------------------------------------------------------------------------------------
# The rounding, written at the bit level here (independently of torch's conversion).

def bits_round(values):
    """float64 array -> float64 array of BF16 values: float64 -> float32 (numpy, nearest), then on
    the float32 bit pattern add 0x7FFF plus the lowest kept bit and clear the low 16 bits."""
    bits = np.asarray(values, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def r64(array):
    return bits_round(array)


def test_rounding():
    e = 2.0 ** -7                                  # BF16's spacing at [1, 2)
    cases = [
        (1.0, 1.0), (-2.5, -2.5), (0.0, 0.0),
        (1 + e / 2, 1.0),                          # a tie: to the even mantissa (down)
        (1 + 3 * e / 2, 1 + 2 * e),                # a tie: to the even mantissa (up)
        (-(1 + e / 2), -1.0), (-(1 + 3 * e / 2), -(1 + 2 * e)),
        (1 + e / 2 + 2.0 ** -20, 1 + e),           # just above a tie: up
        (1 + e / 2 - 2.0 ** -20, 1.0),             # just below a tie: down
        (1 + e / 2 + 2.0 ** -40, 1.0),             # float64 above the tie lands on it in float32: even
        (2.0 ** 100 * (1 + e / 2), 2.0 ** 100), (2.0 ** 100 * (1 + 3 * e / 2), 2.0 ** 100 * (1 + 2 * e)),
        (2.0 ** -130 + 2.0 ** -134, 2.0 ** -130),  # float32 subnormals: a tie to even (down) ...
        (2.0 ** -130 + 2.0 ** -133 + 2.0 ** -134, 2.0 ** -130 + 2.0 ** -132),   # ... and one up
        (0.1, 0.10009765625), (1.0 / 3.0, 0.333984375),
    ]
    values = np.array([v for v, _ in cases])
    expected = np.array([x for _, x in cases])
    ours = T.bf16(torch.from_numpy(values)).numpy()
    for value, got, want, bit in zip(values, ours, expected, bits_round(values)):
        check(got == want and bit == want, f"bf16({value!r})", f"torch path {got!r}, bit level {bit!r}, expected {want!r}")
    generator = np.random.default_rng(SEED)
    patterns = generator.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
    floats = patterns.view(np.float32)
    floats = floats[np.isfinite(floats) & (np.abs(floats) < 3.3e38)]         # below BF16's overflow
    got = T.bf16(torch.from_numpy(floats.copy())).numpy().astype(np.float64)
    want = bits_round(floats.astype(np.float64))
    mismatches = np.flatnonzero(got != want)
    check(mismatches.size == 0, f"bf16 of {floats.size} random float32 bit patterns equals the bit-level rounding",
          f"{mismatches.size} differ, first {floats[mismatches[:1]]!r}: {got[mismatches[:1]]!r} vs {want[mismatches[:1]]!r}")
    check(T.bf16(torch.tensor([1.5], dtype=torch.float32)).dtype == torch.float32 and
          T.bf16(torch.tensor([1.5], dtype=torch.float64)).dtype == torch.float64, "bf16 keeps the dtype")


# ---------------------------------------------------------------------------------------------
# The product.

def test_linear():
    generator = torch.Generator().manual_seed(SEED)

    def randn(*shape):
        return torch.randn(*shape, dtype=torch.float64, generator=generator)

    for x_shape in ((5,), (3, 5), (2, 3, 5)):
        x, w, b = randn(*x_shape), randn(4, 5), randn(4)
        dy = randn(*x_shape[:-1], 4)
        # Without rounding: an ordinary linear layer, backward included.
        leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
        ours = T.bf16_linear(leaves[0], leaves[1], leaves[2], T.no_rounding)
        ours_grads = torch.autograd.grad(ours, leaves, dy)
        plain_leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
        plain = plain_leaves[0] @ plain_leaves[1].T + plain_leaves[2]
        plain_grads = torch.autograd.grad(plain, plain_leaves, dy)
        check_close(f"linear {list(x_shape)} unrounded: forward", ours, plain, 1e-15)
        for label, got, want in zip(("dx", "dW", "db"), ours_grads, plain_grads):
            check_close(f"linear {list(x_shape)} unrounded: {label} = autograd's", got, want, 1e-14)
        check(torch.autograd.gradcheck(lambda a, m, c: T.bf16_linear(a, m, c, T.no_rounding),
                                       tuple(t.clone().requires_grad_(True) for t in (x, w, b))),
              f"linear {list(x_shape)} unrounded: gradcheck")
        # With BF16 rounding: the stated formulas, in numpy with the bit-level rounding.
        leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
        ours = T.bf16_linear(*leaves)
        dx, dw, db = torch.autograd.grad(ours, leaves, dy)
        xn, wn, bn, dyn = (t.numpy() for t in (x, w, b, dy))
        rows, drows = r64(xn).reshape(-1, 5), r64(dyn).reshape(-1, 4)
        check_close(f"linear {list(x_shape)} BF16: y = bf16(x) bf16(W)^T + b", ours,
                    (rows @ r64(wn).T + bn).reshape(*x_shape[:-1], 4), 1e-15)
        check_close(f"linear {list(x_shape)} BF16: dx = bf16(dy) bf16(W)", dx, (drows @ r64(wn)).reshape(x_shape), 1e-15)
        check_close(f"linear {list(x_shape)} BF16: dW = bf16(dy)^T bf16(x)", dw, drows.T @ rows, 1e-15)
        check_close(f"linear {list(x_shape)} BF16: db = sum dy (unrounded)", db, dyn.reshape(-1, 4).sum(0), 1e-15)
        check(not torch.equal(dx, torch.from_numpy((dyn.reshape(-1, 4) @ wn).reshape(x_shape))),
              f"linear {list(x_shape)} BF16: the rounding of the backward shows")
        # Operands that are BF16 values already: exactly autograd of the plain product.
        xb, wb, dyb = (T.bf16(t) for t in (x, w, dy))
        leaves = [t.clone().requires_grad_(True) for t in (xb, wb, b)]
        ours = T.bf16_linear(*leaves)
        ours_grads = torch.autograd.grad(ours, leaves, dyb)
        plain_leaves = [t.clone().requires_grad_(True) for t in (xb, wb, b)]
        plain = plain_leaves[0] @ plain_leaves[1].T + plain_leaves[2]
        plain_grads = torch.autograd.grad(plain, plain_leaves, dyb)
        check_close(f"linear {list(x_shape)} BF16 on BF16 operands: forward = plain", ours, plain, 1e-15)
        for label, got, want in zip(("dx", "dW", "db"), ours_grads, plain_grads):
            check_close(f"linear {list(x_shape)} BF16 on BF16 operands: {label} = autograd's", got, want, 1e-15)
    # The bias is added after the product, never rounded; no bias works; a constant input gets no dx.
    x, w = torch.ones(2, 3, dtype=torch.float64), torch.zeros(4, 3, dtype=torch.float64)
    b = torch.full((4,), 0.1, dtype=torch.float64)
    check(torch.equal(T.bf16_linear(x, w, b), b.expand(2, 4)), "linear BF16: the bias is not rounded",
          f"{T.bf16_linear(x, w, b)[0].tolist()} vs {b.tolist()}")
    leaf = torch.eye(4, 3, dtype=torch.float64).requires_grad_(True)
    dw, = torch.autograd.grad(T.bf16_linear(x, leaf).sum(), [leaf])
    check_close("linear BF16 without bias: dW", dw, np.full((4, 3), 2.0), 0.0)


# ---------------------------------------------------------------------------------------------
# Attention.

def plain_attention(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v


def loop_attention(q, k, v, block):
    """The stated BF16 formulas one row at a time in Python floats over numpy arrays [N, hd]:
    -> out [N, hd], lse [N]."""
    n, hd = q.shape
    scale = 1.0 / math.sqrt(hd)
    qr, kr, vr = r64(q), r64(k), r64(v)
    out, lse = np.zeros((n, hd)), np.zeros(n)
    for i in range(n):
        peak, total, acc = -math.inf, 0.0, np.zeros(hd)
        for start in range(0, n, block):
            keys = range(start, min(n, start + block))
            s = [scale * float(np.dot(qr[i], kr[j])) for j in keys]
            new_peak = max(peak, max(s))
            carry = math.exp(peak - new_peak) if peak > -math.inf else 0.0
            p = [math.exp(x - new_peak) for x in s]
            total = total * carry + sum(p)
            acc = acc * carry + sum(float(r64(np.array([pj]))[0]) * vr[j] for pj, j in zip(p, keys))
            peak = new_peak
        out[i], lse[i] = acc / total, peak + math.log(total)
    return out, lse


def spec_backward(q, k, v, out, lse, dout, rounding=r64):
    """The stated backward, in numpy, with the BF16 forward's out and lse: P from the rounded
    scores, dV and dP from rounded operands, dQ and dK from the unrounded dS, q and k. With
    `rounding` T.no_rounding, nothing is rounded (what the BF16 backward must differ from)."""
    r = rounding
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = np.exp(scale * (r(q) @ r(k).T) - lse[:, None])
    d = (dout * out).sum(-1, keepdims=True)
    ds = p * (r(dout) @ r(v).T - d)
    return scale * ds @ k, scale * ds.T @ q, r(p).T @ r(dout)


def test_attention():
    generator = torch.Generator().manual_seed(SEED + 1)
    for n in (7, 64, 150):
        shape = (2, 3, n, 8)                       # [B, h, N, hd]
        q, k, v, dout = (torch.randn(*shape, dtype=torch.float64, generator=generator) * 1.5 for _ in range(4))
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        ours = T.blocked_attention(*leaves, rounding=T.no_rounding)
        ours_grads = torch.autograd.grad(ours, leaves, dout)
        plain_leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        plain = plain_attention(*plain_leaves)
        plain_grads = torch.autograd.grad(plain, plain_leaves, dout)
        check_close(f"attention N={n} unrounded: forward = softmax(q k^T / sqrt hd) v", ours, plain, 1e-13)
        for label, got, want in zip(("dq", "dk", "dv"), ours_grads, plain_grads):
            check_close(f"attention N={n} unrounded: {label} = autograd's", got, want, 1e-12)
    small = tuple(torch.randn(1, 2, 9, 4, dtype=torch.float64, generator=generator).requires_grad_(True)
                  for _ in range(3))
    check(torch.autograd.gradcheck(lambda a, b, c: T.blocked_attention(a, b, c, T.no_rounding, 4), small),
          "attention unrounded, blocks of 4 over 9 keys: gradcheck")
    # With BF16 rounding: the per-row loop, in one block (N <= 64) and across blocks (N > 64).
    for n, block in ((13, 64), (64, 64), (70, 64), (21, 8)):
        q, k, v, dout = (torch.randn(n, 8, dtype=torch.float64, generator=generator) * 2.0 for _ in range(4))
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        ours = T.blocked_attention(*leaves, rounding=T.bf16, block=block)
        grads = torch.autograd.grad(ours, leaves, dout)
        out, lse = loop_attention(q.numpy(), k.numpy(), v.numpy(), block)
        check_close(f"attention N={n} block {block} BF16: forward = the per-row formula", ours, out, 1e-14)
        expected = spec_backward(q.numpy(), k.numpy(), v.numpy(), out, lse, dout.numpy())
        for label, got, want in zip(("dq", "dk", "dv"), grads, expected):
            check_close(f"attention N={n} block {block} BF16: {label} = the stated backward", got, want, 1e-13)
        unrounded_backward = spec_backward(q.numpy(), k.numpy(), v.numpy(), out, lse, dout.numpy(), T.no_rounding)
        check(all(float(np.abs(g.numpy() - u).max()) > 1e-6 for g, u in zip(grads, unrounded_backward)),
              f"attention N={n} block {block} BF16: the backward's rounding shows in dq, dk and dv")
        check(float((ours - plain_attention(q, k, v)).abs().max()) > 1e-6, f"attention N={n} BF16: the rounding shows")
    # Blocks matter only through p's rounding: a single block of 64 keys is the row-max form.
    q, k, v = (torch.randn(40, 8, dtype=torch.float64, generator=generator) * 2.0 for _ in range(3))
    check_close("attention BF16: block 64 over 40 keys = one block of 1000", T.blocked_attention(q, k, v),
                T.blocked_attention(q, k, v, T.bf16, 1000), 0.0)


# ---------------------------------------------------------------------------------------------
# The whole BF16 forward.

ROUNDED_WEIGHTS = ("image.patch.weight", "video.patch.weight", "audio.patch.weight", "text.projection",
                   "image.projection", "video.projection", "audio.projection")


def test_model(checkpoint, config):
    state = T.TrainerState.from_checkpoint(checkpoint, T.EXAMPLE_OPTIMIZER)
    batch = T.example_batches(config, SEED)[0]

    def run(**options):
        leaves = {n: w.clone().requires_grad_(True) for n, w in state.weights.items()}
        losses = T.forward(config, leaves, batch, **options)
        loss = T.total_loss(losses, state.optimizer)
        grads = dict(zip(state.names, torch.autograd.grad(loss, [leaves[n] for n in state.names], allow_unused=True)))
        return leaves, losses, grads

    _, f32, f32_grads = run()
    _, off, off_grads = run(bf16_compute=True, rounding=T.no_rounding)
    for name in ("contrastive", "choice", "bag_embeddings"):
        check_close(f"BF16 forward with rounding off = F32 forward: {name}", off[name], f32[name], 1e-12)
    worst = max(float((off_grads[n] - f32_grads[n]).abs().max()) for n in state.names if f32_grads[n] is not None)
    check(worst <= 1e-12 and all((off_grads[n] is None) == (f32_grads[n] is None) for n in state.names),
          "BF16 forward with rounding off = F32 forward: every gradient", f"max difference {worst:.3e}")
    _, bf, bf_grads = run(bf16_compute=True)
    moved = abs(float(bf["contrastive"]) - float(f32["contrastive"])) / float(f32["contrastive"])
    check(1e-6 < moved < 1e-2, "BF16 compute moves the contrastive loss a little", f"relative {moved:.3e}")
    # Which leaves reach the rounding: exactly the documented weights (and no bias, norm, table or
    # head).  The recorder replaces train_reference.bf16 itself, so a rounding anywhere shows.
    rounded = []
    leaves = {n: w.clone().requires_grad_(True) for n, w in state.weights.items()}
    by_id = {id(t): n for n, t in leaves.items()}
    original = T.bf16

    def recorder(x):
        rounded.append(by_id.get(id(x)))
        return original(x)

    T.bf16 = recorder
    try:
        losses = T.forward(config, leaves, batch, bf16_compute=True)
        T.total_loss(losses, state.optimizer).backward()
    finally:
        T.bf16 = original
    check_close("the recorded run is the BF16 run", losses["contrastive"], bf["contrastive"], 0.0)
    named = {n for n in rounded if n is not None}
    expected = set(ROUNDED_WEIGHTS) | {f"trunk.{i}.{p}.weight" for i in range(config["depth"])
                                       for p in ("attn.qkv", "attn.out", "mlp.up", "mlp.down")}
    check(named == expected, "BF16 compute rounds exactly the documented weights",
          f"extra {sorted(named - expected)}, missing {sorted(expected - named)}")
    check(None in rounded, "activations are rounded too")


# ---------------------------------------------------------------------------------------------
# compare_train.py end to end.

def run_compare(directory, *extra, flat="1e-2"):
    """compare_train.py on an example dump, judged flat at `flat` (the measured CHAINED tables are
    for train_parity_dump's model and batches; flat=None uses them)."""
    flags = ["--flat", flat] if flat else []
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare_train.py"), directory, "--threads", "1",
                             *flags, *extra], capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


def summary(output):
    words = (output.strip().splitlines() or [""])[-1].split()
    return (int(words[0]), int(words[2])) if len(words) == 4 and words[0].isdigit() and words[2].isdigit() else (None, None)


def edit_tensor(path, name, edit):
    metadata, arrays = R.read_safetensors(path)
    with open(path, "rb") as handle:
        import struct
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    kinds = {key: entry["dtype"] for key, entry in header.items() if key != "__metadata__"}
    arrays[name] = edit(arrays[name].copy())
    R.write_safetensors(path, {k: (kinds[k], a) for k, a in arrays.items()}, metadata)


def test_compare(directory):
    dump = os.path.join(directory, "bf16")
    manifest = T.write_example_dump(dump, "bf16", SEED)
    check(manifest["compute"] == "bf16", "the example dump says compute bf16")
    code, output = run_compare(dump, "--spread", "1")
    passed, failed = summary(output)
    state = T.TrainerState.from_checkpoint(os.path.join(dump, manifest["checkpoint"]))
    expected = 3 * (7 + 5 * len(state.names) + 1)
    check(code == 0 and failed == 0 and passed == expected, "compare_train.py passes the reference's BF16 dump",
          f"{passed} passed (expected {expected}), {failed} failed\n" +
          "\n".join(line for line in output.splitlines() if not line.startswith("PASS"))[-3000:])
    # Everything but the BF16-stored inference weights (which carry their storage's rounding).
    judged = "\n".join(line for line in output.splitlines() if "(BF16)" not in line)
    errors = [float(x) for x in re.findall(r"max_rel (\S+)", judged)] + \
             [float(x) for x in re.findall(r" rel (\S+) tol", judged)]
    check(len(errors) > 100 and max(errors) <= 1e-6,
          "the BF16 judge reproduces its float64 stand-in (float32 storage only)",
          f"{len(errors)} comparisons, worst {max(errors or [math.nan]):.3e}")
    check("span more than one block of 64 keys" in output, "compare_train.py says which items span two key blocks",
          output[:600])
    spread = re.findall(r"# step(\d)/gradient spread: engine worst (\S+) .*jittered twins worst (\S+)", output)
    check(len(spread) == 3 and all(0 < float(twin) < 1 and float(engine) < 1e-6 for _, engine, twin in spread),
          "--spread prints the engine's and a jittered twin's worst gradient error per step", str(spread))

    def corrupt(path, change, label, expect, flat="1e-2"):
        backup = path + ".orig"
        shutil.copyfile(path, backup)
        change(path)
        code, output = run_compare(dump, flat=flat)
        shutil.move(backup, path)
        found = [line for line in output.splitlines() if line.startswith("FAIL")]
        check(code == 1 and any(expect in line for line in found), f"compare_train.py (BF16) catches {label}",
              "\n".join(found[:5]) or output[-1500:])

    def nudge(fraction, every=None):
        def edit(a):
            if every:
                a.reshape(-1)[::every] += fraction * np.abs(a).max()
            else:
                a.reshape(-1)[11] += fraction * np.abs(a).max()
            return a
        return edit

    # Every 7th element 2% of the peak off (a wrong update reaches elements with large gradients, which
    # the BF16 judge never excuses; one element alone could sit where AdamW's normalised step is
    # within the BF16 allowance).
    corrupt(os.path.join(dump, "s1_after.safetensors"),
            lambda p: edit_tensor(p, "optimizer.weights.trunk.0.mlp.down.weight", nudge(0.02, 7)),
            "master weights 2% of their tensor's peak off", "step1/after.optimizer.weights.trunk.0.mlp.down.weight")
    corrupt(os.path.join(dump, "start.safetensors"),
            lambda p: edit_tensor(p, "trunk.1.attn.qkv.weight", nudge(1.0)),
            "a changed starting weight", "step0/after.optimizer.weights.trunk.1.attn.qkv.weight")

    def as_f32(path):
        with open(path) as handle:
            data = json.load(handle)
        data["compute"] = "f32"
        with open(path, "w") as handle:
            json.dump(data, handle)

    corrupt(os.path.join(dump, "manifest.json"), as_f32, "the BF16 dump judged as F32 compute", "step0/gradient.",
            flat=None)
    # The measured BF16 tables pass the float64 stand-in and catch the 5 % learning-rate control.
    code, output = run_compare(dump, flat=None)
    check(code == 0, "compare_train.py's chained BF16 tables pass the float64 stand-in", output[-1500:])
    code, output = run_compare(dump, "--control", "lr=1.05", flat=None)
    check(code == 0 and "caught" in output and "FAIL step1/whole." in output, "the BF16 lr control is caught",
          output[-1500:])


def main():
    print(f"seed {SEED}")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="uform-train-bf16-") as directory:
        config = T.example_config()
        checkpoint = os.path.join(directory, "example.safetensors")
        T.example_checkpoint(checkpoint, config, SEED)
        tests = [
            ("rounding", test_rounding),
            ("linear", test_linear),
            ("attention", test_attention),
            ("model", lambda: test_model(checkpoint, config)),
            ("compare_train.py", lambda: test_compare(directory)),
        ]
        for name, test in tests:
            try:
                test()
            except Exception as error:  # an exception fails its group, not the run
                import traceback
                traceback.print_exc()
                check(False, name, f"{type(error).__name__}: {error}")
    print(f"{PASSED} passed, {FAILED} failed ({time.perf_counter() - started:.1f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
