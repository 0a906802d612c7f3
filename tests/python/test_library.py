"""The library as a whole: finding it, its version and CPU classes, statuses and the errors that
carry them."""

import ctypes
import inspect
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path


import uform
from uform import _structs, errors

PACKAGE = Path(uform.__file__).parent


def test_version_and_cpu_classes():
    major, minor, patch = uform.version()
    assert major == 4 and uform.__version__ == f"{major}.{minor}.{patch}"
    detected = uform.cpu_class_detect()
    assert isinstance(detected, uform.CpuClass) and uform.cpu_class_supported(detected)
    assert uform.cpu_class_supported("serial") and not uform.cpu_class_supported("apple_m4")
    assert uform.cpu_class_name(uform.CpuClass.INTEL_HASWELL) == "intel_haswell"
    assert uform.cpu_class_name("haswell") == "intel_haswell" and uform.cpu_class_name(6) == "amd_genoa"
    assert uform.gpu_devices() == []  # this build has no GPU support


def c_line(status: int, function: str, message: str) -> str:
    outcome = _structs.Outcome()
    outcome.status, outcome.function, outcome.message = status, function.encode(), message.encode()
    buffer = ctypes.create_string_buffer(640)
    uform._lib.uform_outcome_format(ctypes.addressof(outcome), buffer, len(buffer))
    return buffer.value.decode()


def test_lines_of_python_side_errors_match_uform_outcome_format():
    for status in uform.Status:
        for function, message in [("", ""), ("f", ""), ("", "m"), ("text_encode", "texts[2]: expected str")]:
            ours = errors.format_line(int(status), function, message)
            assert ours == c_line(int(status), function, message), (status, function, message, ours)


def test_one_class_per_status():
    for status in uform.Status:
        if status in (uform.Status.OK, uform.Status.DEFERRED):
            continue
        cls = errors.ERRORS[status]
        error = cls()
        assert error.status == status and isinstance(error, uform.Error), (status, cls)
        assert uform.status_name(status) in str(error)
    assert errors.ERRORS[uform.Status.FORMAT] is uform.FormatError
    assert errors.ERRORS[uform.Status.CONTENDED] is uform.Contended
    error = uform.InvalidArgument(uform.Status.INVALID_ARGUMENT, "text_encode", "dims = -1: must not be negative")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is uform.InvalidArgument and str(again) == str(error) and again.message == error.message
    assert uform.status_name(13) == "internal" and uform.status_name(99) == "unknown"


def run_python(code: str, environment: dict, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("UFORM_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(environment)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)


def test_library_lookup_order(tmp_path):
    built = os.environ["UFORM_LIBRARY"]
    copy = tmp_path / "site" / "uform"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
    show = "import uform; print(uform.library_path)"
    # 1. UFORM_LIBRARY, and nothing else when it is set.
    done = run_python(show, {"UFORM_LIBRARY": str(tmp_path / "nowhere.so"), "PYTHONPATH": str(copy.parent)}, tmp_path)
    assert done.returncode != 0 and "UFORM_LIBRARY" in done.stderr and "nowhere.so" in done.stderr, done.stderr
    # 3. The system loader, when the package folder has no library.
    done = run_python(show, {"PYTHONPATH": str(copy.parent), "LD_LIBRARY_PATH": str(Path(built).parent)}, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "libuform.so.4", (done.stdout, done.stderr)
    # 2. The package's own folder, where `make install` puts it, before the system loader.
    shutil.copy(built, copy / "libuform.so.4")
    done = run_python(show, {"PYTHONPATH": str(copy.parent), "LD_LIBRARY_PATH": str(Path(built).parent)}, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == str(copy / "libuform.so.4"), (done.stdout, done.stderr)


def test_every_public_name_is_documented():
    undocumented = []
    for name in uform.__all__:
        value = getattr(uform, name)
        if callable(value) and not (getattr(value, "__doc__", None) or "").strip():
            undocumented.append(name)
        if isinstance(value, type):
            for member in dir(value):  # inherited ones too: Model's verbs come from Verbs
                attribute = inspect.getattr_static(value, member)
                if isinstance(attribute, (classmethod, staticmethod)):
                    attribute = attribute.__func__
                if member.startswith("_") or not callable(attribute) and not isinstance(attribute, property):
                    continue
                if not (getattr(attribute, "__doc__", None) or "").strip():
                    undocumented.append(f"{name}.{member}")
    assert not undocumented, f"public names without a docstring: {undocumented}"
    assert (PACKAGE / "py.typed").exists()
