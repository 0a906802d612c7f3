"""Shared fixtures of the binding's tests. CTest (tests/python/CMakeLists.txt) sets the paths:
UFORM_LIBRARY, PYTHONPATH, the tiny checkpoint (UFORM_TEST_CHECKPOINT overrides it), the media
fixtures, the C reference runner and the CLI."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import uform


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests with `ctest --test-dir build -R python`")
    return value


@pytest.fixture(scope="session")
def checkpoint() -> str:
    return os.environ.get("UFORM_TEST_CHECKPOINT") or required("UFORM_PYTEST_TINY")


@pytest.fixture(scope="session")
def media() -> Path:
    return Path(required("UFORM_PYTEST_MEDIA"))


@pytest.fixture(scope="session")
def model(checkpoint):
    with uform.Model.load_ram(None, checkpoint) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def description(model):
    return model.describe()


@pytest.fixture(scope="session")
def executor():
    """Two threads, as the C reference's executors; room for 256 queued deferred calls."""
    with uform.Executor.for_ram(threads=2, deferred_limit=256) as made:
        yield made


@pytest.fixture(scope="session")
def has_ffmpeg(model, media) -> bool:
    try:
        model.video_encode(media / "counter.mp4")
        return True
    except uform.Unsupported:
        return False


def _u64(values) -> bytes:
    return np.asarray(values, dtype="<u8").tobytes()


class CReference:
    """Runs one verb through tests/python/c_reference.c and reads back what it wrote."""

    def __init__(self, program: str, checkpoint: str, directory: Path):
        self.program, self.checkpoint, self.directory = program, checkpoint, directory
        self.runs = 0

    def __call__(self, verb, items, threads=-1, compute="f32", scalar=0, dims=0, outputs=1, rate=0,
                 heights=None, widths=None, choices=None, groups=None):
        self.runs += 1
        folder = self.directory / f"run{self.runs}"
        folder.mkdir()
        offsets = np.concatenate([[0], np.cumsum([len(item) for item in items])]) if items else [0]
        (folder / "data.bin").write_bytes(b"".join(items))
        (folder / "offsets.bin").write_bytes(_u64(offsets))
        if heights is not None:
            (folder / "heights.bin").write_bytes(_u64(heights))
            (folder / "widths.bin").write_bytes(_u64(widths))
        if choices is not None:
            choice_offsets = np.concatenate([[0], np.cumsum([len(c) for c in choices])])
            (folder / "choices.bin").write_bytes(b"".join(choices))
            (folder / "choice_offsets.bin").write_bytes(_u64(choice_offsets))
        if groups is not None:
            (folder / "groups.bin").write_bytes(_u64(groups))
        lines = [f"verb {verb}", f"threads {threads}", f"compute {compute}", f"scalar {scalar}", f"dims {dims}",
                 f"outputs {outputs}", f"rate {rate}"]
        (folder / "request.txt").write_text("\n".join(lines) + "\n")
        done = subprocess.run([self.program, self.checkpoint, str(folder)], capture_output=True, text=True)
        assert done.returncode == 0, f"c_reference failed ({done.returncode}): {done.stderr}"
        answers = {}
        for line in (folder / "shapes.txt").read_text().splitlines():
            name, rows, columns, scalar_kind = line.split()
            answers[name] = {
                "rows": int(rows),
                "columns": int(columns),
                "scalar": int(scalar_kind),
                "bytes": (folder / f"{name}.bin").read_bytes(),
            }
            offsets_file = folder / f"{name}_offsets.bin"
            if offsets_file.exists():
                answers[name]["offsets"] = np.frombuffer(offsets_file.read_bytes(), dtype="<u8").astype(np.int64)
        return answers


@pytest.fixture(scope="session")
def c_reference(checkpoint, tmp_path_factory):
    return CReference(required("UFORM_PYTEST_C_REFERENCE"), checkpoint, tmp_path_factory.mktemp("c_reference"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skipped test fails: CI runs on a machine scripts/install-deps.sh set up, so a
    skip there means an install step is missing (tests/common/skip.h says the same for C tests)."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get("CI") in ("true", "1"):
        report.outcome = "failed"
        report.longrepr = f"CI=true: a skip is a failure here ({report.longrepr})"
