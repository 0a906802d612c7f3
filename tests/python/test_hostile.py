"""Random Python objects fed to every entry point: each call either works or raises a uform.Error
(or the exception a hostile object raised itself); the interpreter never crashes."""

import os
import random
import stat
import traceback

import numpy as np
import pytest

import uform

SEED = 20261130
CALLS = 3000


class Hostile(Exception):
    """Raised by the pool's own booby-trapped objects; passing it through is correct."""


class EvilLength(list):
    def __iter__(self):
        raise Hostile("__iter__")

    def __len__(self):
        raise Hostile("__len__")


class EvilPath(os.PathLike):
    def __fspath__(self):
        raise Hostile("__fspath__")


class EvilIndex:
    def __index__(self):
        raise Hostile("__index__")


class EvilBool:
    def __bool__(self):
        raise Hostile("__bool__")


def pool(media, executor, arena):
    rng = np.random.default_rng(SEED)
    return [
        None, 0, 1, 3, -1, -(2**40), 2**70, 1.5, float("nan"), True, False, 1j,
        "", "x", "a photo", "\ud800", "f32", "bf16", "b1", "embeddings", "states", "haswell", "spinning", "matmul",
        b"", b"\x00" * 10, b"\xff\xd8\xff" + b"\x00" * 40, bytearray(b"ab"), memoryview(b"abc"), memoryview(b"abcd")[::2],
        [], [None], [1, 2], [[]], ["a", b"b"], [b"x"] * 300, (), ("a",), {}, {"a": 1}, set(), frozenset([1]), object(),
        lambda *a: None, lambda *a: False, lambda *a: 1 / 0, EvilBool(), lambda *a: EvilBool(),
        np.zeros(0), np.zeros((2, 2)), np.zeros((1, 8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.uint8)[:, ::2],
        rng.integers(0, 256, (9, 7, 3), dtype=np.uint8), np.zeros(100, np.float32), np.zeros((2, 5), np.float32),
        np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32), np.array(["a"]), np.array([None]),
        np.float32(3), np.int64(-5), np.int64(2), np.uint8(7), np.zeros((3,), np.int64),
        media / "rgb8.png", str(media / "pcm16.wav"), media / "missing.jpg", "/dev/null", media,
        EvilLength([1]), EvilPath(), EvilIndex(),
        executor, uform.Executor(), arena, uform.Arena, uform.Status.OK, uform.CpuClass.SERIAL, uform.Outputs.STATES,
    ]


VALID_KEYWORDS = {
    "outputs": ["embeddings", ["states", "token_vectors"]],
    "scalar": ["f16", "i8", "b1"],
    "dims": [None, 16, 0],
    "progress": [None, lambda done, total: None],
    "stats": [True, False],
    "arena": [None],
}


def keywords(pick, rng):
    chosen = {}
    for key, valid in VALID_KEYWORDS.items():
        if rng.random() < 0.2:
            chosen[key] = rng.choice(valid) if rng.random() < 0.5 else pick()
    return chosen


def test_hostile_objects(model, executor, media, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything relative lands in this test's folder
    # The fixtures the pool names must come out unchanged (other tests add files beside them meanwhile).
    named = ["rgb8.png", "pcm16.wav", "pcm8.wav", "short.mp4"]
    fixtures_before = {name: (media / name).read_bytes() for name in named}
    rng = random.Random(SEED)
    save_paths = [tmp_path / "hostile.safetensors", str(tmp_path / "odd name ü.safetensors"), tmp_path / "missing" / "x",
                  None, 3, b"", b"a\0b", "", "\ud800", [], EvilPath(), EvilIndex(), object()]
    arena = uform.Arena(executor)
    objects = pool(media, executor, arena)
    pick = lambda: rng.choice(objects)  # noqa: E731

    def valid_or_not(*valid):
        """A valid argument half the time, so the checks further in are reached too."""
        return rng.choice(valid) if rng.random() < 0.5 else pick()

    pixels = np.zeros((2, 16, 16, 3), np.uint8)
    samples = np.zeros(4000, np.float32)
    session = uform.Session()
    builder = uform.ProgramBuilder()
    x = builder.parameter("x", "f32", (2, 3))
    w = builder.parameter("w", "f32", (4, 3))
    builder.output("y", builder.operation("matmul", [x, w], attributes=[0, 1]))
    program = session.compile(builder.finish())
    scratch_builder = uform.ProgramBuilder()
    receivers = [model, model.on(executor), model.deferred(executor)]
    trainer = uform.Trainer.init_ram(executor, seed=1)
    trainers = [trainer.on(executor), trainer.deferred(executor)]
    settings = list(uform.trainer.CONFIG_KEYS) + ["mesh", "unknown"]

    def settle(answer):
        return answer.wait() if isinstance(answer, uform.Deferred) else answer

    entry_points = [
        lambda r: settle(r.text_encode(valid_or_not("text", ["a", b"b"]), **keywords(pick, rng))),
        lambda r: settle(r.image_encode(valid_or_not(media / "rgb8.png"), **keywords(pick, rng))),
        lambda r: settle(r.image_encode_pixels(valid_or_not(pixels), **keywords(pick, rng))),
        lambda r: settle(r.video_encode(valid_or_not(media / "short.mp4"), **keywords(pick, rng))),
        lambda r: settle(r.audio_encode(valid_or_not(media / "pcm8.wav"), **keywords(pick, rng))),
        lambda r: settle(r.audio_encode_samples(valid_or_not(samples), valid_or_not(8000), **keywords(pick, rng))),
        lambda r: settle(r.text_choose(valid_or_not(["ab"]), valid_or_not(["cd"], [[1, 2]]), valid_or_not(None, [1]),
                                       **{k: v for k, v in keywords(pick, rng).items() if k in ("progress", "stats", "arena")})),
        lambda r: uform.Executor.for_ram(threads=rng.choice([0, 1, 2, pick()]), cpu_class=pick(),
                                         numa_nodes=rng.choice([None, pick()]), deferred_limit=rng.choice([0, pick()])).close(),
        lambda r: uform.Model.load_ram(pick(), pick(), compute=pick(), cpu_class=pick()).close(),
        lambda r: uform.Arena(pick()).close(),
        lambda r: model.on(pick()),
        lambda r: model.deferred(pick()),
        lambda r: executor.drain(pick()),
        lambda r: uform.cpu_class_name(pick()),
        lambda r: uform.cpu_class_supported(pick()),
        lambda r: uform.bfloat16_to_float32(pick()),
        lambda r: session.compile(pick()),
        lambda r: program.invoke(*[pick() for _ in range(rng.choice([0, 1, 2, 3]))], out=rng.choice([None, pick()])),
        lambda r: scratch_builder.parameter(pick(), pick(), pick()),
        lambda r: scratch_builder.constant(pick(), rng.choice([None, pick()])),
        lambda r: scratch_builder.operation(pick(), pick(), pick(), pick(), rng.choice([None, pick()])),
        lambda r: scratch_builder.output(pick(), pick()),
        lambda r: scratch_builder.type(pick()),
        lambda r: session.compile(scratch_builder.finish()),
        lambda r: settle(rng.choice(trainers).step(valid_or_not(["a", "b"]), valid_or_not("text", ["text", "image"]),
                                                   relations=valid_or_not([(0, 1)], None), sides=rng.choice([None, pick()]),
                                                   choices=rng.choice([None, pick()]), targets=rng.choice([None, pick()]),
                                                   **{k: v for k, v in keywords(pick, rng).items()
                                                      if k in ("progress", "stats", "arena")})),
        # save writes a file: its path is never drawn from the pool (which names real files and
        # /dev/null), only a file in this test's folder or an object that is no path at all.
        lambda r: settle(rng.choice(trainers).save(rng.choice(save_paths), user_metadata=rng.choice([None, pick()]))),
        lambda r: uform.Trainer.init_ram(rng.choice([None, executor, pick()]),
                                         **{rng.choice(settings): pick() for _ in range(rng.choice([0, 1, 2]))}).close(),
        lambda r: trainer.snapshot(pick()).close(),
        # A mesh of one (no peers to wait for, no folder written), with hostile options.
        lambda r: uform.Mesh.bootstrap(rng.choice([None, executor, pick()]), rng.choice([0, pick()]), 1,
                                       job=rng.choice([None, pick()]), address=rng.choice([None, pick()]),
                                       agreement=rng.choice([None, pick()]),
                                       trainer_config=rng.choice([None, {"seed": 1}, pick()])).close(),
        lambda r: model.text_encode(["ragged"], outputs="states").states[pick()],
    ]
    outcomes = {"ok": 0, "uform.Error": 0, "hostile": 0}
    for call in range(CALLS):
        entry = rng.randrange(len(entry_points))
        receiver = rng.choice(receivers)
        try:
            entry_points[entry](receiver)
            outcomes["ok"] += 1
        except uform.Error:
            outcomes["uform.Error"] += 1
        except (Hostile, ZeroDivisionError):
            outcomes["hostile"] += 1  # the pool's own objects raised; passed through untouched
        except IndexError:
            if entry != len(entry_points) - 1:
                raise
            outcomes["ok"] += 1  # Ragged[i] out of range: Python's own convention
        except BaseException as error:
            pytest.fail(f"call {call} (entry point {entry}) raised {type(error).__name__}: {error}\n"
                        + "".join(traceback.format_exception(error)))
    # Everything still works afterwards.
    assert model.on(executor).text_encode("after the storm").embeddings.shape[0] == 1
    (y,) = program.invoke(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32))
    assert np.array_equal(y, np.full((2, 4), 3, np.float32)), y
    assert outcomes["ok"] > 50 and outcomes["uform.Error"] > 500, outcomes
    after = trainer.on(executor).step(["still", "trains", "on"], "text", relations=[(0, 1)])
    assert after.step >= 1 and np.isfinite(after.loss) and after.bag_embeddings.shape[0] == 3, after
    trainer.close()
    arena.close()
    session.close()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is no longer a device"
    assert {name: (media / name).read_bytes() for name in named} == fixtures_before, "a media fixture changed"
    assert not (media / "missing.jpg").exists(), "a file appeared among the media fixtures"
