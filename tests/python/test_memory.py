"""10,000 calls through the binding keep the resident set flat: nothing leaks through ctypes
(requests, tapes, relays, arenas, Deferred objects).

A leak grows the resident set in every window of 10,000 calls; a one-time step does not (glibc
makes another malloc arena when threads contend for one, which depends on the machine's load: in a
parallel CI run one window grew by 1.9 MiB once). So up to three windows run, and the test passes
on the first whose growth is under the bound; a leak of 52 bytes a call fails all three."""

import gc
import os

import numpy as np

import uform

CALLS = 10_000
ALLOWED_GROWTH = 512 * 1024  # over 10,000 calls: 52 bytes a call, or 360 in one of the seven kinds, fail


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_resident_set_stays_flat(model, executor):
    arena = uform.Arena(executor)
    pixels = np.zeros((1, 32, 32, 3), np.uint8)
    samples = np.zeros(1600, np.float32)
    calls = [
        lambda i: model.text_encode(f"text {i % 97}"),
        lambda i: model.text_encode(["a", "bb"], outputs=["embeddings", "token_vectors"], stats=True),
        lambda i: model.on(executor).text_encode(b"bytes", progress=lambda done, total: None, arena=arena),
        lambda i: model.deferred(executor).text_encode("deferred").wait(),
        lambda i: model.image_encode_pixels(pixels, scalar="i8"),
        lambda i: model.audio_encode_samples(samples, 16000, dims=16),
        lambda i: model.text_choose(["yes or n"], ["oa"], [0]),
    ]

    def run(count):
        for i in range(count):
            answer = calls[i % len(calls)](i)
            assert answer is not None
        gc.collect()

    run(1000)  # warm up: arenas, pymalloc pools, NumPy caches
    growths = []
    for window in range(3):
        before = resident_bytes()
        run(CALLS)
        growths.append(resident_bytes() - before)
        if growths[-1] < ALLOWED_GROWTH:
            break
    kib = ", ".join(f"{growth / 1024:.0f}" for growth in growths)
    assert growths[-1] < ALLOWED_GROWTH, f"RSS grew in every window of {CALLS} calls: {kib} KiB"
    arena.close()
