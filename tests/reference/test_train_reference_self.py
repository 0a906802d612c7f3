"""Self-tests of the training reference (no engine needed): /usr/bin/python3 test_train_reference_self.py

Checks train_reference.py against restatements of docs/training.md that share no code with it: the
batched contrastive loss against a per-relation Python loop, bag embeddings and the choice loss
against the inference reference (Model.encode, Model.choose), the whole loss's gradient against
central finite differences in float64, the learning-rate schedule at chosen steps, the hand
AdamW against torch.optim.AdamW, dense decay and clipping, checkpoint round trips and resume,
batch validation, the benchmark's training model against the reference's loss, and
compare_train.py end to end: on a dump the reference writes in float32 (which must pass, also
when it starts from a checkpoint with optimizer state) and on corrupted copies (which must fail).
Prints "N passed, N failed" and exits 1 on any failure.  Seeds are fixed and printed.
"""

import base64
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import uform_reference as R  # noqa: E402
import train_reference as T  # noqa: E402

SEED = 20261130
PASSED = FAILED = 0


def check(ok, label, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL {label}: {detail}", flush=True)


def as_float64(x):
    """torch.as_tensor would make a Python float float32: go through numpy's float64."""
    return x.detach().double() if torch.is_tensor(x) else torch.from_numpy(np.asarray(x, dtype=np.float64))


def check_close(label, got, expected, tolerance, relative=False):
    got, expected = as_float64(got), as_float64(expected)
    if got.shape != expected.shape:
        check(False, label, f"shape {list(got.shape)} vs {list(expected.shape)}")
        return
    error = float((got - expected).abs().max()) if got.numel() else 0.0
    if relative:
        error /= max(float(expected.abs().max()), 1e-300)
    check(error <= tolerance, label, f"{'relative' if relative else 'absolute'} error {error:.3e} > {tolerance:.1e}; "
                                     f"got {got.flatten()[:4].tolist()} expected {expected.flatten()[:4].tolist()}")


def example(directory):
    config = T.example_config()
    path = os.path.join(directory, "example.safetensors")
    T.example_checkpoint(path, config, SEED)
    return path, config


# ---------------------------------------------------------------------------------------------

def loop_contrastive(embeddings, sides, lefts, rights, groups, temperatures):
    """docs/training.md's formula one relation, one prefix and one candidate at a time, in Python floats."""
    if not lefts:
        return 0.0
    per_prefix = []
    for e in embeddings:
        rows = e.tolist()
        bags = len(rows)
        total = 0.0
        for r, (l, q) in enumerate(zip(lefts, rights)):
            g = groups[r] if groups else 0
            s = min(math.exp(float(temperatures[g])), 100.0)
            halves = []
            for anchor, target in ((l, q), (q, l)):
                candidates = [c for c in range(bags)
                              if (sides[c] != sides[anchor] if sides else c != anchor)]
                logits = {c: s * sum(a * b for a, b in zip(rows[anchor], rows[c])) for c in candidates}
                peak = max(logits.values())
                log_sum = peak + math.log(sum(math.exp(v - peak) for v in logits.values()))
                halves.append(log_sum - logits[target])
            total += 0.5 * (halves[0] + halves[1])
        per_prefix.append(total / len(lefts))
    return sum(per_prefix) / len(per_prefix)


def test_contrastive_loop():
    generator = torch.Generator().manual_seed(SEED)
    temperatures = torch.tensor([math.log(1 / 0.07), 1.2, 4.9, -0.3], dtype=torch.float64)
    cases = [
        ("sides", [0, 1, 0, 1, 1, 0, 1], [0, 3, 4, 5, 2], [1, 2, 0, 6, 3], [0, 1, 2, 3, 1]),
        ("no sides", [], [0, 2, 4, 6, 1], [1, 3, 5, 0, 6], [0, 0, 1, 2, 3]),
        ("no groups", [1, 0, 0, 1, 0, 1, 1], [0, 1], [1, 3], []),
        ("no relations", [0, 1, 0, 1, 0, 1, 0], [], [], []),
    ]
    for label, sides, lefts, rights, groups in cases:
        embeddings = [T.normalise(torch.randn(7, p, dtype=torch.float64, generator=generator)) for p in (4, 8, 16)]
        batched = T.contrastive_loss(embeddings, sides, lefts, rights, groups, temperatures)
        looped = loop_contrastive(embeddings, sides, lefts, rights, groups, temperatures)
        check_close(f"contrastive batched vs loop ({label})", batched, looped, 1e-12)
    # The clamp: at temperatures beyond ln 100 the loss is that of s = 100 and its gradient is 0.
    leaf = temperatures.clone().requires_grad_(True)
    embeddings = [T.normalise(torch.randn(4, 8, dtype=torch.float64, generator=generator))]
    loss = T.contrastive_loss(embeddings, [0, 1, 0, 1], [0, 2], [1, 3], [2, 0], leaf)
    gradient, = torch.autograd.grad(loss, leaf)
    check(float(gradient[2]) == 0.0 and float(gradient[0]) != 0.0, "temperature beyond the clamp has gradient 0",
          f"{gradient.tolist()}")
    at_clamp = temperatures.clone()
    at_clamp[2] = math.log(100.0)
    check_close("s = min(exp(t), 100)", T.contrastive_loss(embeddings, [0, 1, 0, 1], [0, 2], [1, 3], [2, 0], temperatures),
                T.contrastive_loss(embeddings, [0, 1, 0, 1], [0, 2], [1, 3], [2, 0], at_clamp), 1e-12)


def test_forward_against_inference(checkpoint, config):
    state = T.TrainerState.from_checkpoint(checkpoint)
    model = R.Model(config, state.weights)
    batch = T.example_batches(config, SEED)[0]
    with torch.no_grad():
        out = T.forward(config, state.weights, batch)
        offsets = batch.bag_offsets()
        for index, prefix in enumerate(config["matryoshka"]):
            expected = []
            for j in range(len(offsets) - 1):
                units = [model.encode(batch.contents[i][0], [batch.contents[i][1]], prefix)["embeddings"][0]
                         for i in range(offsets[j], offsets[j + 1])]
                mean = torch.stack(units).mean(0)
                expected.append(mean / mean.norm())
            check_close(f"bag embeddings at prefix {prefix} vs Model.encode", out["embeddings_by_prefix"][index],
                        torch.stack(expected), 1e-12)
        check(config["matryoshka"][-1] == config["embedding"], "the example's last prefix is the full width")
        check_close("bag_embeddings output is the full width", out["bag_embeddings"], out["embeddings_by_prefix"][-1], 0.0)
        chosen = batch.choice_contents()
        probabilities = model.choose([batch.contents[i][1] for i in chosen], [batch.choices[i] for i in chosen],
                                     [0] * len(chosen))
        expected = np.mean([-math.log(float(p[list(batch.choices[i]).index(batch.choice_targets[i])]))
                            for p, i in zip(probabilities, chosen)])
        check_close("choice loss = mean -log Model.choose(target), group 0", out["choice"], expected, 1e-12)
        check(len(chosen) == 3 and chosen[0] == 4, "the example has a content both in a bag and with choices",
              str(chosen))
        # A content after the last bag changes nothing but the choice loss.
        bare = T.Batch(batch.contents[:11], batch.bags, batch.sides, batch.lefts, batch.rights, batch.groups)
        check_close("contents after the last bag enter no bag", T.forward(config, state.weights, bare)["bag_embeddings"],
                    out["bag_embeddings"], 0.0)
        nothing = T.Batch(batch.contents[:2])
        zero = T.forward(config, state.weights, nothing)
        check(float(zero["contrastive"]) == 0.0 and float(zero["choice"]) == 0.0, "no relations, no choices: losses 0")


def test_finite_differences(checkpoint, config):
    state = T.TrainerState.from_checkpoint(checkpoint, T.EXAMPLE_OPTIMIZER)
    optimizer = state.optimizer
    generator = np.random.default_rng(SEED)
    for batch_index, batch in enumerate(T.example_batches(config, SEED)[1:]):
        leaves = {n: w.clone().requires_grad_(True) for n, w in state.weights.items()}
        loss = T.total_loss(T.forward(config, leaves, batch), optimizer)
        names = ["temperatures", "image.patch.weight", "video.patch.bias", "video.time", "audio.positions",
                 "text.bytes", "text.positions", "trunk.0.attn.qkv.weight", "trunk.1.mlp.down.weight", "trunk.1.norm2.bias",
                 "choose.head.weight", "choose.norm.weight", "modality.video", "image.projection", "audio.norm.bias",
                 "image.cls"]
        gradients = dict(zip(names, torch.autograd.grad(loss, [leaves[n] for n in names], allow_unused=True)))
        for name in names:
            g = gradients[name]
            if g is None:
                g = torch.zeros_like(state.weights[name])
            flat = g.reshape(-1).abs()
            picks = {int(torch.argmax(flat)), int(generator.integers(0, flat.numel()))}
            if name == "temperatures":
                picks |= {0, 1, 2}
            for index in sorted(picks):
                estimates = []
                for sign in (1.0, -1.0):
                    shifted = dict(state.weights)
                    shifted[name] = state.weights[name].clone()
                    step = 1e-6 * max(1.0, abs(float(shifted[name].reshape(-1)[index])))
                    shifted[name].reshape(-1)[index] += sign * step
                    with torch.no_grad():
                        estimates.append(float(T.total_loss(T.forward(config, shifted, batch), optimizer)))
                numeric = (estimates[0] - estimates[1]) / (2 * step)
                analytic = float(g.reshape(-1)[index])
                ok = abs(numeric - analytic) <= 1e-6 + 1e-5 * abs(analytic)
                check(ok, f"batch {batch_index + 1}: d loss / d {name}[{index}] vs finite differences",
                      f"autograd {analytic:.10g}, central difference {numeric:.10g}")


def test_schedule():
    lr = 2e-3
    optimizer = dict(T.OPTIMIZER_DEFAULTS, learning_rate=lr, warmup=4, total_steps=12)
    expected = {1: lr / 4, 2: lr / 2, 4: lr, 8: 0.55 * lr, 12: 0.1 * lr, 13: 0.1 * lr, 100: 0.1 * lr,
                5: lr * (0.1 + 0.45 * (1 + math.cos(math.pi / 8)))}
    for step, value in expected.items():
        check_close(f"schedule warmup 4 total 12 at step {step}", T.learning_rate(optimizer, step), value, 1e-18)
    optimizer.update(total_steps=0)
    for step, value in {2: lr / 2, 4: lr, 5: lr, 1000: lr}.items():
        check_close(f"schedule total 0 at step {step}", T.learning_rate(optimizer, step), value, 1e-18)
    optimizer.update(warmup=0, total_steps=10)
    for step, value in {1: lr * (0.1 + 0.45 * (1 + math.cos(math.pi / 10))), 5: 0.55 * lr, 10: 0.1 * lr}.items():
        check_close(f"schedule warmup 0 total 10 at step {step}", T.learning_rate(optimizer, step), value, 1e-18)


def test_adamw_against_torch():
    generator = torch.Generator().manual_seed(SEED)
    optimizer = dict(T.OPTIMIZER_DEFAULTS, learning_rate=3e-2, weight_decay=0.3, warmup=2, total_steps=5, epsilon=1e-6)
    shapes = {"trunk.0.attn.qkv.weight": (6, 4), "trunk.0.attn.qkv.bias": (6,), "text.positions": (5, 4),
              "untouched.weight": (3, 3), "untouched.bias": (3,)}
    initial = {n: torch.randn(s, dtype=torch.float64, generator=generator) for n, s in shapes.items()}
    ours = {n: w.clone() for n, w in initial.items()}
    m = {n: torch.zeros_like(w) for n, w in initial.items()}
    v = {n: torch.zeros_like(w) for n, w in initial.items()}
    theirs = {n: torch.nn.Parameter(w.clone()) for n, w in initial.items()}
    decayed = [theirs[n] for n in shapes if T.decays(n, shapes[n])]
    plain = [theirs[n] for n in shapes if not T.decays(n, shapes[n])]
    check([n for n in shapes if T.decays(n, shapes[n])] == ["trunk.0.attn.qkv.weight", "untouched.weight"],
          "decay applies to rank-2 tensors except position tables")
    torch_adamw = torch.optim.AdamW([{"params": decayed, "weight_decay": optimizer["weight_decay"]},
                                     {"params": plain, "weight_decay": 0.0}], lr=optimizer["learning_rate"],
                                    betas=(optimizer["beta1"], optimizer["beta2"]), eps=optimizer["epsilon"])
    for step in range(1, 8):
        lr = T.learning_rate(optimizer, step)
        for group in torch_adamw.param_groups:
            group["lr"] = lr
        for name, shape in shapes.items():
            g = torch.zeros(shape, dtype=torch.float64) if name.startswith("untouched") else \
                torch.randn(shape, dtype=torch.float64, generator=generator) * (10.0 ** -step)
            theirs[name].grad = g.clone()
            T.adamw_update(ours[name], g, m[name], v[name], step, lr, optimizer, T.decays(name, shape))
        torch_adamw.step()
        for name in shapes:
            check_close(f"hand AdamW vs torch.optim.AdamW, step {step}, {name}", ours[name], theirs[name].detach(), 1e-15,
                        relative=True)
            state = torch_adamw.state[theirs[name]]
            check_close(f"hand AdamW m vs torch, step {step}, {name}", m[name], state["exp_avg"], 0.0)
            check_close(f"hand AdamW v vs torch, step {step}, {name}", v[name], state["exp_avg_sq"], 0.0)
    decay = math.prod(1 - T.learning_rate(optimizer, s) * optimizer["weight_decay"] for s in range(1, 8))
    check_close("a zero-gradient matrix only decays", ours["untouched.weight"], initial["untouched.weight"] * decay, 1e-15)
    check_close("a zero-gradient vector stays", ours["untouched.bias"], initial["untouched.bias"], 0.0)


def test_step_semantics(checkpoint, config, directory):
    batch = T.example_batches(config, SEED)[0]
    # Clipping: the first moment is (1 - beta1) g clip / norm when the norm exceeds clip_norm.
    for clip in (0.0, 1.0, 1e9):
        state = T.TrainerState.from_checkpoint(checkpoint, dict(T.EXAMPLE_OPTIMIZER, clip_norm=clip))
        out = state.step(batch)
        norm = math.sqrt(sum(float((g * g).sum()) for g in out["gradients"].values()))
        check_close(f"grad_norm is the global L2 norm (clip {clip})", out["grad_norm"], norm, 1e-9, relative=True)
        factor = clip / norm if 0 < clip < norm else 1.0
        for name in ("trunk.0.mlp.up.weight", "temperatures"):
            check_close(f"m after one step with clip {clip}: {name}", state.m[name],
                        (1 - state.optimizer["beta1"]) * out["gradients"][name] * factor, 1e-15)
        check(state.step_count == 1, "the step count advances")
    # Dense: a tensor the batch never reached gets a zero gradient, decays if it is a matrix.
    text_only = T.Batch([("text", b"abc"), ("text", b"xyz")], lefts=[0], rights=[1])
    state = T.TrainerState.from_checkpoint(checkpoint, T.EXAMPLE_OPTIMIZER)
    before = {n: w.clone() for n, w in state.weights.items()}
    out = state.step(text_only)
    lr = out["learning_rate"]
    check(float(out["gradients"]["image.patch.weight"].abs().max()) == 0.0, "an unreached tensor has a zero gradient")
    check_close("an unreached matrix decays", state.weights["image.patch.weight"],
                before["image.patch.weight"] * (1 - lr * state.optimizer["weight_decay"]), 1e-16)
    check_close("an unreached position table stays", state.weights["image.positions"], before["image.positions"], 0.0)
    check_close("an unreached CLS row stays", state.weights["image.cls"], before["image.cls"], 0.0)
    check(float(state.v["image.patch.weight"].abs().max()) == 0.0, "an unreached tensor's v stays 0")
    # Checkpoint round trip and resume: 3 steps == 1 + save + resume + 2, exactly (float32 state).
    batches = T.example_batches(config, SEED)
    straight = T.TrainerState.from_checkpoint(checkpoint, T.EXAMPLE_OPTIMIZER, torch.float32)
    for b in batches:
        straight.step(b)
    first = T.TrainerState.from_checkpoint(checkpoint, T.EXAMPLE_OPTIMIZER, torch.float32)
    first.step(batches[0])
    saved = os.path.join(directory, "resume.safetensors")
    first.save(saved)
    resumed = T.TrainerState.from_checkpoint(saved, T.EXAMPLE_OPTIMIZER, torch.float32)
    check(resumed.step_count == 1, "resume reads optimizer.step", str(resumed.step_count))
    for name in first.names:
        for kind in ("weights", "m", "v"):
            if not torch.equal(getattr(first, kind)[name], getattr(resumed, kind)[name]):
                check(False, f"resume reads optimizer.{kind}.{name} exactly")
    for b in batches[1:]:
        resumed.step(b)
    worst = max(float((straight.weights[n] - resumed.weights[n]).abs().max()) for n in straight.names)
    check(worst == 0.0, "3 steps == 1 + save + resume + 2 (bit for bit)", f"max difference {worst:.3e}")
    plain = T.TrainerState.from_checkpoint(checkpoint)
    _, arrays = R.read_safetensors(checkpoint)
    check(plain.step_count == 0 and float(plain.m["text.bytes"].abs().max()) == 0.0, "a plain checkpoint starts at step 0")
    check_close("a plain checkpoint's BF16 weights widened", plain.weights["text.bytes"], arrays["text.bytes"], 0.0)


def test_validation(config):
    image = torch.zeros(3, config["image"]["size"], config["image"]["size"])
    contents = [("text", b"a"), ("image", image), ("text", b"b"), ("image", image)]
    good = dict(bags=[0, 1, 2, 3, 4], sides=[0, 1, 0, 1], lefts=[0, 2], rights=[1, 3], groups=[0, 1],
                choices=[b"xy", b"", b"", b""], choice_targets=[ord("x"), 0, 0, 0])
    T.Batch(contents, **good).validate(config)
    bad = [
        ("bags", dict(bags=[0, 2, 1, 4])), ("bags", dict(bags=[1, 2, 3, 4, 4])), ("bags", dict(bags=[0, 5])),
        ("sides", dict(sides=[0, 1, 0])), ("sides[1]", dict(sides=[0, 2, 0, 1])),
        ("relations.rights[1]", dict(rights=[1, 4])), ("relations[1]", dict(rights=[1, 2])),
        ("relations[0]", dict(lefts=[0, 2], rights=[2, 3])),
        ("relations.groups[1]", dict(groups=[0, 4])), ("relations.groups", dict(groups=[0])),
        ("choice_targets[0]", dict(choice_targets=[ord("z"), 0, 0, 0])),
        ("choices[1]", dict(choices=[b"", b"ab", b"", b""])), ("choices[0]", dict(choices=[b"xx", b"", b"", b""])),
        ("choices", dict(choices=[b"x"])),
    ]
    for field, change in bad:
        try:
            T.Batch(contents, **dict(good, **change)).validate(config)
            check(False, f"validation catches {field}", str(change))
        except ValueError as error:
            check(str(error).startswith(field), f"validation names {field}", str(error))


def test_bench_model(checkpoint, config):
    """bench/train_torch.py's nn.Module model gives the reference's contrastive loss and gradients."""
    import train_torch as B
    _, tensors = R.load(checkpoint, torch.float64)
    generator = torch.Generator().manual_seed(SEED)
    pairs = 3
    s = config["image"]["size"]
    images = torch.randn(pairs, 3, s, s, dtype=torch.float64, generator=generator)
    texts = torch.randint(0, 256, (pairs, 9), generator=generator)
    for case in ("image", "text"):
        model = B.TrainModel(config, tensors, ("text", case)).double()
        if case == "image":
            left, right = B.text_ids(texts), images
            contents = [("text", bytes(t.tolist())) for t in texts] + [("image", x) for x in images]
        else:
            left, right = B.text_ids(texts), B.text_ids(texts.flip(1))
            contents = [("text", bytes(t.tolist())) for t in texts] + [("text", bytes(t.tolist())) for t in texts.flip(1)]
        loss = model(left, right)
        batch = T.Batch(contents, sides=[0] * pairs + [1] * pairs, lefts=list(range(pairs)),
                        rights=list(range(pairs, 2 * pairs)))
        state = T.TrainerState.from_checkpoint(checkpoint)
        leaves = {n: w.clone().requires_grad_(True) for n, w in state.weights.items()}
        reference = T.forward(config, leaves, batch)["contrastive"]
        check_close(f"benchmark model {case}: contrastive loss", loss, reference, 1e-12)
        ours = dict(zip(["trunk.1.mlp.up.weight", "temperatures", "text.bytes"],
                        torch.autograd.grad(reference, [leaves["trunk.1.mlp.up.weight"], leaves["temperatures"],
                                                        leaves["text.bytes"]])))
        loss.backward()
        check_close(f"benchmark model {case}: gradient of trunk.1.mlp.up.weight", model.blocks[1].up.weight.grad,
                    ours["trunk.1.mlp.up.weight"], 1e-12)
        check_close(f"benchmark model {case}: gradient of the temperature", model.temperature.grad,
                    ours["temperatures"][0], 1e-12)
        check_close(f"benchmark model {case}: gradient of text.bytes", model.stems["text"].bytes.weight.grad,
                    ours["text.bytes"], 1e-12)


# ---------------------------------------------------------------------------------------------
# compare_train.py end to end.

def run_compare(directory, *extra, flat="1e-4"):
    """compare_train.py on an example dump, judged flat at `flat` (the measured CHAINED tables are
    for train_parity_dump's model and batches; flat=None uses them)."""
    flags = ["--flat", flat] if flat else []
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare_train.py"), directory, "--threads", "1",
                             *flags, *extra], capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


def summary(output):
    last = output.strip().splitlines()[-1] if output.strip() else ""
    words = last.split()
    return (int(words[0]), int(words[2])) if len(words) == 4 and words[0].isdigit() and words[2].isdigit() else (None, None)


def test_compare(directory):
    dump = os.path.join(directory, "dump")
    manifest = T.write_example_dump(dump, "f32", SEED)
    state = T.TrainerState.from_checkpoint(os.path.join(dump, manifest["checkpoint"]))
    code, output = run_compare(dump)
    passed, failed = summary(output)
    check(code == 0 and failed == 0, "compare_train.py passes the float32 reference's dump",
          "\n".join(line for line in output.splitlines() if not line.startswith("PASS"))[-3000:])
    # Per step: 5 scalars, temperatures, bag embeddings; gradients; weights, m, v and stored weights; step.
    tensors = len(state.names)
    expected = 3 * (7 + tensors + 4 * tensors + 1)
    check(passed == expected, "compare_train.py compared everything", f"{passed} passed, expected {expected}")
    check(manifest["steps"][0]["batch"]["sides"] and manifest["steps"][2]["batch"]["bags"] == [] and
          len(set(manifest["steps"][0]["batch"]["relations"]["groups"])) >= 2, "the example covers both batch forms")

    def corrupt(file_name, change, label, expect_in_output):
        path = os.path.join(dump, file_name)
        backup = path + ".orig"
        shutil.copyfile(path, backup)
        change(path)
        code, output = run_compare(dump)
        shutil.move(backup, path)
        _, failed = summary(output)
        found = [line for line in output.splitlines() if line.startswith("FAIL")]
        check(code == 1 and failed and any(expect_in_output in line for line in found),
              f"compare_train.py catches {label}", "\n".join(found[:5]) or output[-1500:])

    def edit_tensor(name, edit):
        def change(path):
            metadata, arrays = R.read_safetensors(path)
            kinds = {}
            with open(path, "rb") as handle:
                import struct
                (length,) = struct.unpack("<Q", handle.read(8))
                header = json.loads(handle.read(length))
            for key, entry in header.items():
                if key != "__metadata__":
                    kinds[key] = entry["dtype"]
            arrays[name] = edit(arrays[name].copy())
            R.write_safetensors(path, {k: (kinds[k], a) for k, a in arrays.items()}, metadata)
        return change

    def nudge(a):
        flat = a.reshape(-1)
        flat[7] += 1e-3 * np.abs(a).max()
        return a

    def edit_manifest(edit):
        def change(path):
            with open(path) as handle:
                data = json.load(handle)
            edit(data)
            with open(path, "w") as handle:
                json.dump(data, handle)
        return change

    corrupt("s1_after.safetensors", edit_tensor("optimizer.weights.trunk.1.attn.out.weight", nudge),
            "one master weight changed by 1e-3 of its tensor's peak", "step1/after.optimizer.weights.trunk.1.attn.out.weight")
    corrupt("s0_after.safetensors", edit_tensor("optimizer.v.video.time", lambda a: a * 1.001),
            "v of one tensor 0.1% off", "step0/after.optimizer.v.video.time")
    corrupt("s2_grads.safetensors", edit_tensor("choose.head.bias", nudge), "one gradient element off",
            "step2/gradient.choose.head.bias")
    corrupt("s0_after.safetensors", edit_tensor("optimizer.step", lambda a: a + 1), "a wrong step count",
            "step0/after.optimizer.step")
    corrupt("manifest.json", edit_manifest(lambda d: d["steps"][1]["outputs"].update(loss=d["steps"][1]["outputs"]["loss"] * 1.001)),
            "a loss 0.1% off", "step1/loss")
    corrupt("manifest.json", edit_manifest(lambda d: d["steps"][0]["outputs"].update(
        temperatures=d["steps"][1]["outputs"]["temperatures"])), "the temperatures after the update logged as the step's",
        "step0/temperatures")
    corrupt("s1_bags.npy", lambda p: np.save(p, np.load(p)[[1, 0] + list(range(2, 8))]), "swapped bag embeddings",
            "step1/bag_embeddings")

    # The measured tables (no --flat) pass a float64 stand-in, and a learning rate 5 % off is caught
    # by them: --control answers 0 when the comparison fails, 1 when it does not.
    exact = os.path.join(directory, "exact")
    T.write_example_dump(exact, "f32", SEED, dtype=torch.float64)
    code, output = run_compare(exact, flat=None)
    check(code == 0 and "whole.update" in output, "compare_train.py's chained F32 tables pass a float64 stand-in",
          "\n".join(line for line in output.splitlines() if not line.startswith("PASS"))[-2000:])
    code, output = run_compare(exact, "--control", "lr=1.05", flat=None)
    check(code == 0 and "control lr=1.05: caught" in output and "FAIL step1/whole.update" in output,
          "the lr control is caught", output[-1500:])
    code, output = run_compare(exact, "--control", "lr=1", flat=None)
    check(code == 1 and "NOT caught" in output, "a control that changes nothing is not caught (exit 1)", output[-800:])
    # The whole-model update sees a learning rate 0.5 % off that no per-tensor line sees at step 0.
    code, output = run_compare(exact, "--control", "lr=1.005", flat=None)
    check(code == 0 and "FAIL step0/whole.update" in output, "a learning rate 0.5 % off fails the step-0 update",
          output[-1500:])

    # A start with optimizer state (the engine's checkpoint after step 0): the reference continues it.
    resumed = os.path.join(directory, "resumed")
    T.write_example_dump(resumed, "f32", SEED, start=os.path.join(dump, "s0_after.safetensors"),
                         batches=T.example_batches(state.config, SEED)[1:])
    code, output = run_compare(resumed)
    _, failed = summary(output)
    check(code == 0 and failed == 0 and "from step 1" in output, "compare_train.py resumes from optimizer state",
          "\n".join(line for line in output.splitlines() if not line.startswith("PASS"))[-2000:])
    # A zero reference judged with the absolute floor: unreached tensors' m and v are 0 in both.
    floor_dump = os.path.join(directory, "floor")
    T.write_example_dump(floor_dump, "f32", SEED, batches=[T.Batch([("text", b"abc"), ("text", b"xyz")], lefts=[0], rights=[1])])
    code, output = run_compare(floor_dump)
    check(code == 0 and "PASS step0/after.optimizer.v.audio.patch.weight" in output and "(floor" in output,
          "an unreached tensor's zero moments pass through the floor", output[-1500:])
    path = os.path.join(floor_dump, "s0_after.safetensors")
    edit_tensor("optimizer.v.audio.patch.weight", lambda a: a + np.float32(1e-30))(path)
    code, output = run_compare(floor_dump)
    check(code == 0, "0 against 1e-30 passes", output[-800:])
    edit_tensor("optimizer.m.audio.patch.weight", lambda a: a + np.float32(1e-12))(path)
    code, output = run_compare(floor_dump)
    check(code == 1 and "FAIL step0/after.optimizer.m.audio.patch.weight" in output, "0 against 1e-12 fails",
          output[-800:])


def main():
    print(f"seed {SEED}")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="uform-train-reference-") as directory:
        checkpoint, config = example(directory)
        tests = [
            ("contrastive loop", test_contrastive_loop),
            ("forward against inference", lambda: test_forward_against_inference(checkpoint, config)),
            ("finite differences", lambda: test_finite_differences(checkpoint, config)),
            ("schedule", test_schedule),
            ("AdamW against torch", test_adamw_against_torch),
            ("step semantics", lambda: test_step_semantics(checkpoint, config, directory)),
            ("validation", lambda: test_validation(config)),
            ("benchmark model", lambda: test_bench_model(checkpoint, config)),
            ("compare_train.py", lambda: test_compare(directory)),
        ]
        for name, test in tests:
            try:
                test()
            except Exception as error:  # an exception fails its group, not the run
                import traceback
                traceback.print_exc()
                check(False, name, f"{type(error).__name__}: {error}")
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
