"""The trainer from Python: steps equal the same steps through the C API (tests/python/
train_reference.c) bit for bit, receivers, refusals, cancel, save, resume and snapshot."""

import subprocess
import threading

import numpy as np
import pytest

import uform
from conftest import required


def batch(media):
    """Texts and images in bags on two sides, related in two temperature groups, plus a text that
    belongs to no bag and only trains the choice head."""
    contents = ["a red square", media / "rgb8.png", "a blue circle", media / "baseline.jpg", "yes or n"]
    modalities = ["text", "image", "text", "image", "text"]
    return dict(contents=contents, modalities=modalities, bags=[0, 1, 2, 3, 4], sides=[0, 1, 0, 1],
                relations=[(0, 1, 0), (2, 3, 1)], choices=["", "", "", "", "oa"], targets=[None] * 4 + [ord("o")])


def write_batch(folder, spec, threads, seed, steps):
    raw = [c.read_bytes() if hasattr(c, "read_bytes") else c.encode() for c in spec["contents"]]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype("<u8")
    (folder / "data.bin").write_bytes(b"".join(raw))
    (folder / "offsets.bin").write_bytes(offsets.tobytes())
    kinds = [int(uform.Modality[m.upper()]) for m in spec["modalities"]]
    (folder / "modalities.bin").write_bytes(np.array(kinds, "<i4").tobytes())
    (folder / "bags.bin").write_bytes(np.array(spec["bags"], "<u8").tobytes())
    (folder / "sides.bin").write_bytes(bytes(spec["sides"]))
    for index, name in enumerate(["lefts", "rights", "groups"]):
        (folder / f"{name}.bin").write_bytes(np.array([r[index] for r in spec["relations"]], "<u8").tobytes())
    choices = [c.encode() for c in spec["choices"]]
    (folder / "choices.bin").write_bytes(b"".join(choices))
    (folder / "choice_offsets.bin").write_bytes(np.concatenate([[0], np.cumsum([len(c) for c in choices])]).astype("<u8").tobytes())
    (folder / "targets.bin").write_bytes(bytes(t or 0 for t in spec["targets"]))
    (folder / "request.txt").write_text(f"threads {threads}\nseed {seed}\nsteps {steps}\nscalar 0\n")


@pytest.mark.parametrize("threads", [-1, 2])
def test_steps_equal_the_c_api(media, tmp_path, threads):
    spec, steps, seed = batch(media), 3, 5
    write_batch(tmp_path, spec, threads, seed, steps)
    done = subprocess.run([required("UFORM_PYTEST_TRAIN_REFERENCE"), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    executor = uform.Executor() if threads < 0 else uform.Executor.for_ram(threads=threads)
    with executor, uform.Trainer.init_ram(executor, seed=seed) as trainer:
        for k in range(1, steps + 1):
            result = trainer.on(executor).step(**spec)
            c_line = (tmp_path / f"step{k}.txt").read_text().split()
            ours = [result.loss.hex(), result.contrastive.hex(), result.choice.hex(), result.learning_rate.hex(),
                    result.grad_norm.hex(), str(result.step)]
            theirs = [float.fromhex(v).hex() for v in c_line[:5]] + [c_line[5]]
            assert ours == theirs, f"step {k}: python {ours} vs c {theirs}"
            assert result.bag_embeddings.tobytes() == (tmp_path / f"bags{k}.bin").read_bytes(), f"step {k} bags"
            assert result.temperatures.tobytes() == (tmp_path / f"temperatures{k}.bin").read_bytes(), f"step {k}"
        assert trainer.describe().steps == steps
        trainer.on(executor).save(tmp_path / "python.safetensors")
    ours, theirs = (tmp_path / "python.safetensors").read_bytes(), (tmp_path / "trained.safetensors").read_bytes()
    assert ours == theirs, f"saved checkpoints differ: {len(ours)} vs {len(theirs)} bytes"


def test_deferred_steps_equal_blocking_ones(media):
    spec = batch(media)
    with uform.Executor.for_ram(threads=2) as executor:
        with uform.Trainer.init_ram(executor, seed=9) as blocking, uform.Trainer.init_ram(executor, seed=9) as deferred:
            expected = [blocking.on(executor).step(**spec) for _ in range(2)]
            pending = [deferred.deferred(executor).step(**spec) for _ in range(2)]
            got = [p.wait() for p in pending]
            assert [r.loss for r in got] == [r.loss for r in expected], ([r.loss for r in got], [r.loss for r in expected])
            assert [r.step for r in got] == [1, 2]
            assert np.array_equal(got[1].bag_embeddings, expected[1].bag_embeddings)


def test_receivers_are_the_trainers_executor_only(media):
    with uform.Executor.for_ram(threads=1) as executor, uform.Executor.for_ram(threads=1) as other:
        with uform.Trainer.init_ram(executor) as trainer:
            assert trainer.executor is executor
            for make in (trainer.on, trainer.deferred):
                with pytest.raises(uform.InvalidArgument, match="the executor it was made over"):
                    make(other)
                with pytest.raises(uform.InvalidArgument, match="executor"):
                    make(None)
            # A blocking step on a busy executor is contended.
            opened, entered = threading.Event(), threading.Event()

            def hold(done, total):
                entered.set()
                opened.wait(timeout=60)

            pending = trainer.deferred(executor).step(["a", "b"], "text", relations=[(0, 1)], progress=hold)
            try:
                assert entered.wait(timeout=30)
                with pytest.raises(uform.Contended):
                    trainer.on(executor).step(["c", "d"], "text", relations=[(0, 1)])
            finally:
                opened.set()
            assert pending.wait().step == 1


def test_refusals_leave_the_trainer_unchanged(media, monkeypatch):
    with uform.Trainer.init_ram(None, seed=2) as trainer:
        receiver = trainer.on(uform.Executor())
        python_side = [
            (dict(contents="abc", modalities="text"), "contents: expected a list"),
            (dict(contents=["a", "b"], modalities=["text"]), "modalities: 1 entries for 2 contents"),
            (dict(contents=["a"], modalities="smell"), "modalities = 'smell'"),
            (dict(contents=[3], modalities="text"), "contents[0]: a text content is str or bytes"),
            (dict(contents=["a", "b"], modalities="text", relations=[(0,)]), "relations[0]"),
            (dict(contents=["a", "b"], modalities="text", relations=[(0, -1)]), "relations[0][1] = -1"),
            (dict(contents=["a", "b"], modalities="text", bags=[0, 5]), "bags[1] = 5"),
            (dict(contents=["a", "b"], modalities="text", sides=[0]), "sides: 1 entries for 2 bags"),
            (dict(contents=["a"], modalities="text", targets=[1]), "targets: given without choices"),
            (dict(contents=["a"], modalities="text", choices=["ab"], targets=[300]), "targets[0] = 300"),
            (dict(contents=["a"], modalities="text", learning_rate=-1.0), "learning_rate = -1.0"),
            (dict(contents=["a"], modalities="text", scalar="f64"), "scalar = 'f64'"),
        ]
        from uform import _library

        monkeypatch.setattr(_library.lib, "uform_trainer_step", lambda *a: pytest.fail("reached C"))
        for arguments, words in python_side:
            with pytest.raises(uform.InvalidArgument) as caught:
                receiver.step(**arguments)
            assert words in caught.value.message, (arguments, caught.value.message)
        monkeypatch.undo()
        with pytest.raises(uform.InvalidArgument, match="relates bag 0 with itself"):
            receiver.step(["a", "b"], "text", relations=[(0, 0)])
        with pytest.raises(uform.FormatError) as caught:
            receiver.step(["a", b"not an image"], ["text", "image"], relations=[(0, 1)])
        assert "contents[1]" in caught.value.message, caught.value.message
        with pytest.raises(uform.Cancelled):
            receiver.step(["a", "b"], "text", relations=[(0, 1)], progress=lambda done, total: False)
        assert trainer.describe().steps == 0, "a refused or cancelled step changed the trainer"
        with pytest.raises(uform.InvalidArgument, match="setting"):
            uform.Trainer.init_ram(None, learning_rat=1e-3)
        with pytest.raises(uform.InvalidArgument, match="hidden = -1"):
            uform.Trainer.init_ram(None, hidden=-1)


def test_save_resume_and_snapshot(media, tmp_path):
    spec = batch(media)
    path = tmp_path / "trained.safetensors"
    with uform.Trainer.init_ram(None, seed=4, learning_rate=2e-3) as trainer:
        receiver = trainer.on(uform.Executor())
        receiver.step(**spec)
        receiver.save(path, user_metadata="loader position 17", progress=lambda done, total: None)
        snapshot = trainer.snapshot()
        description = trainer.describe()
        assert description.steps == 1 and description.learning_rate == 2e-3 and description.model.hidden == 128
    with uform.Model.load_ram(None, path) as loaded, snapshot:
        texts = ["after one step", "of training"]
        assert np.array_equal(loaded.text_encode(texts).embeddings, snapshot.text_encode(texts).embeddings)
    with uform.Trainer.init_ram(None, resume=path) as resumed:
        assert resumed.user_metadata == "loader position 17"
        assert resumed.describe().steps == 1 and resumed.describe().learning_rate == 2e-3
        with pytest.raises(uform.ConfigMismatch):
            uform.Trainer.init_ram(None, resume=path, hidden=256)
    with pytest.raises(uform.IoError):
        uform.Trainer.init_ram(None, resume=tmp_path / "missing.safetensors")
