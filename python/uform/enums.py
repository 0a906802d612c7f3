"""The ABI's enums as ``IntEnum`` classes (numbers fixed by the design) and the parsers that turn
the strings a Python caller writes (``"bf16"``, ``"haswell"``) into them."""

from enum import IntEnum
from typing import Optional, Union

from .errors import invalid


class CpuClass(IntEnum):
    """``uform_cpu_class_t``: the instruction-set class kernels dispatch on."""

    UNKNOWN = 0
    SERIAL = 1
    INTEL_HASWELL = 2
    INTEL_SIERRA = 3
    INTEL_SKYLAKE = 4
    INTEL_ICELAKE = 5
    AMD_GENOA = 6
    INTEL_SAPPHIRE = 7
    INTEL_GRANITE = 8
    INTEL_DIAMOND = 9
    AWS_G2 = 10
    APPLE_M2 = 11
    APPLE_M4 = 12
    AWS_G5 = 13
    NVIDIA_VERA = 14
    ALIBABA_C930 = 15
    WASM32_V128 = 16
    WASM64_EXTENDED = 17
    MONOVERSIONED = 18


class GpuVendor(IntEnum):
    """``uform_gpu_vendor_t``."""

    UNKNOWN = 0
    NVIDIA = 1
    AMD = 2
    APPLE = 3


class GpuClass(IntEnum):
    """``uform_gpu_class_t``."""

    UNKNOWN = 0
    NVIDIA_AMPERE = 1
    NVIDIA_ADA = 2
    NVIDIA_HOPPER = 3
    NVIDIA_BLACKWELL = 4
    NVIDIA_BLACKWELLRTX = 5
    NVIDIA_RUBIN = 6
    AMD_CDNA3 = 7
    AMD_CDNA4 = 8
    AMD_CDNA5 = 9
    APPLE_METAL7 = 10
    APPLE_METAL9 = 11
    APPLE_METAL10 = 12


class Mood(IntEnum):
    """``uform_mood_t``: what an executor's idle threads do."""

    PARKED = 0
    SPINNING = 1


class Compute(IntEnum):
    """``uform_compute_t``: the scalar type of activations in matrix products (``I8``: the trunk's
    products in int8, for model loads only; see uform.h and docs/int8.md)."""

    F32 = 0
    BF16 = 1
    I8 = 2


class Scalar(IntEnum):
    """``uform_scalar_kind_t``: the scalar of embeddings and token vectors."""

    F32 = 0
    F16 = 1
    BF16 = 2
    I8 = 3
    B1 = 4


class Modality(IntEnum):
    """``uform_modality_t``."""

    TEXT = 0
    IMAGE = 1
    VIDEO = 2
    AUDIO = 3


class Residency(IntEnum):
    """``uform_residency_t``: where a model's weights live."""

    RAM = 0
    VRAM = 1


class Outputs(IntEnum):
    """``uform_outputs_t`` flags: which outputs an encode keeps."""

    EMBEDDINGS = 1
    TOKEN_VECTORS = 2
    STATES = 4


def parse_enum(enum, value, function: str, argument: str, aliases=None):
    """``value`` as a member of ``enum``: a member, its number, or its lower-case name.

    Anything else is ``InvalidArgument`` naming ``argument`` and listing the accepted names.
    """
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if aliases and key in aliases:
            return enum(aliases[key])
        for member in enum:
            if member.name.lower() == key:
                return member
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return enum(value)
        except ValueError:
            pass
    names = ", ".join(repr(member.name.lower()) for member in enum)
    raise invalid(function, f"{argument} = {value!r}: expected one of {names}")


def parse_cpu_class(value: Union[None, str, int, CpuClass], function: str, argument: str = "cpu_class") -> CpuClass:
    """A CPU class from a member, a number, a full name (``"intel_haswell"``) or the short name
    after the vendor (``"haswell"``, ``"genoa"``); None means UNKNOWN (detect)."""
    if value is None:
        return CpuClass.UNKNOWN
    short = {member.name.lower().split("_", 1)[-1]: member for member in CpuClass if "_" in member.name}
    short.pop("v128", None), short.pop("extended", None)  # "wasm32_v128": no ambiguous halves
    return parse_enum(CpuClass, value, function, argument, aliases=short)


def optional_enum(enum, value: Optional[object], default, function: str, argument: str):
    """As ``parse_enum``, with None meaning ``default``."""
    return default if value is None else parse_enum(enum, value, function, argument)
