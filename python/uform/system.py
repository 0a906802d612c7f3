"""What the library and the machine are: version, CPU classes, GPUs."""

from ctypes import byref, c_int, c_size_t
from dataclasses import dataclass
from typing import List, Tuple, Union

from . import _structs as S
from ._library import lib
from .enums import CpuClass, GpuClass, GpuVendor, parse_cpu_class


def version() -> Tuple[int, int, int]:
    """The library's (major, minor, patch); major is 4."""
    major, minor, patch = c_int(), c_int(), c_int()
    lib.uform_version(byref(major), byref(minor), byref(patch))
    return major.value, minor.value, patch.value


def cpu_class_detect() -> CpuClass:
    """The best CPU class this machine runs (lowered by the ``UFORM_CPU_CLASS`` environment variable)."""
    return CpuClass(lib.uform_cpu_class_detect())


def cpu_class_supported(cpu_class: Union[str, int, CpuClass]) -> bool:
    """True when this machine can run the kernels of ``cpu_class``."""
    return bool(lib.uform_cpu_class_supported(int(parse_cpu_class(cpu_class, "cpu_class_supported"))))


def cpu_class_name(cpu_class: Union[str, int, CpuClass]) -> str:
    """The library's lower-case name of a class (``"amd_genoa"``)."""
    return lib.uform_cpu_class_name(int(parse_cpu_class(cpu_class, "cpu_class_name"))).decode()


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as ``gpu_devices()`` lists it."""

    vendor: GpuVendor
    vendor_ordinal: int
    gpu_class: GpuClass
    compute_units: int
    memory_bytes: int
    name: str


def gpu_devices() -> List[GpuDevice]:
    """The GPUs this build can use (empty in a build without GPU support)."""
    count = c_size_t()
    lib.uform_gpu_devices(None, 0, byref(count))
    if count.value == 0:
        return []
    devices = (S.GpuDevice * count.value)()
    lib.uform_gpu_devices(devices, count.value, byref(count))
    return [
        GpuDevice(GpuVendor(d.vendor), d.vendor_ordinal, GpuClass(d.gpu_class), d.compute_units, d.memory_bytes,
                  d.name.decode("utf-8", errors="replace"))
        for d in devices[: count.value]
    ]
