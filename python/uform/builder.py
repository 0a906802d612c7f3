"""``ProgramBuilder``: writes tensor-program wire bytes, so nobody assembles them by hand.

    builder = uform.ProgramBuilder()
    x = builder.parameter("x", "f32", (2, 3))
    w = builder.parameter("w", "f32", (4, 3))
    logits = builder.operation("matmul", [x, w], attributes=[0, 1])   # x · wᵀ, type inferred
    builder.output("y", builder.operation("softmax", [logits], attributes=[1]))
    program = uform.Session().compile(builder.finish())

Values are numbered 0, 1, 2 … in the order they are added. Operation names, operand counts and
attributes are those of ``uform_session_opcode_t`` in uform.h (``Opcode`` lists them). The builder
checks only what it must to write (and the rule of an operation whose type it infers), so it can
also write invalid programs on purpose; ``Session.compile`` checks the rest.
"""

import struct
from ctypes import addressof, byref, c_int, c_int64, c_size_t, c_uint32, c_void_p, string_at
from enum import IntEnum
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from ._closing import Closing
from ._inputs import non_negative
from ._library import lib
from .enums import parse_enum
from .errors import invalid
from .session import NUMPY_DTYPES, DType, DTypeArgument
from .errors import SessionStatus, session_error

MAX_RANK = 8
_INFER = (1 << 64) - 1  # UFORM_SESSION_INFER: (size_t)-1


class Opcode(IntEnum):
    """``uform_session_opcode_t``: the operations (the wire format's opcodes)."""

    NEG = 1
    ABS = 2
    EXP = 3
    LOG = 4
    SQRT = 5
    RSQRT = 6
    TANH = 7
    ERF = 8
    SIGMOID = 9
    RELU = 10
    GELU = 11
    ADD = 20
    SUB = 21
    MUL = 22
    DIV = 23
    MAX = 24
    MIN = 25
    POW = 26
    EQ = 30
    NE = 31
    LT = 32
    LE = 33
    GT = 34
    GE = 35
    SELECT = 36
    CONVERT = 40
    REDUCE_SUM = 50
    REDUCE_MAX = 51
    REDUCE_MIN = 52
    REDUCE_MEAN = 53
    MATMUL = 60
    RESHAPE = 70
    TRANSPOSE = 71
    BROADCAST = 72
    SLICE = 73
    CONCAT = 74
    SOFTMAX = 80
    LAYER_NORM = 81


_NUMPY_TO_DTYPE = {value: key for key, value in NUMPY_DTYPES.items() if key != DType.BF16}


def float_bits(value: float) -> int:
    """The bit pattern of a binary64 as a signed 64-bit integer: how ``layer_norm`` takes its eps."""
    return struct.unpack("<q", struct.pack("<d", float(value)))[0]


class ProgramBuilder(Closing):
    """Builds one program's wire bytes; ``finish()`` answers them (and building may go on)."""

    def __init__(self) -> None:
        handle = c_void_p()
        status = lib.uform_program_builder_init(byref(handle))
        if status != SessionStatus.OK:
            raise session_error(status, "uform_program_builder_init", "cannot make a builder")
        self._handle: Optional[int] = handle.value

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the builder is closed")
        return self._handle

    def _fail(self, status: int, function: str):
        cause = lib.uform_program_builder_cause(self._handle).decode("utf-8", errors="replace")
        return session_error(status, function, cause)

    def parameter(self, name: Optional[str], dtype: DTypeArgument, shape: Sequence[int]) -> int:
        """Adds the next parameter (input) and answers its value id; ``name`` may be None."""
        function = "ProgramBuilder.parameter"
        builder = self._use(function)
        kind = parse_enum(DType, dtype, function, "dtype")
        dims = _dims(shape, function, "shape")
        encoded = _name(name, function)
        value = c_uint32()
        status = lib.uform_program_builder_parameter(builder, encoded, int(kind), len(dims), _pointer(dims), byref(value))
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_parameter")
        return value.value

    def constant(self, array: Any, dtype: Optional[DTypeArgument] = None) -> int:
        """Adds a constant holding ``array``'s elements (copied) and answers its value id. The dtype
        comes from the array; pass ``dtype="bf16"`` with a ``uint16`` array of bfloat16 bits."""
        function = "ProgramBuilder.constant"
        builder = self._use(function)
        if not isinstance(array, np.ndarray):
            raise invalid(function, f"array: expected a NumPy array, got {type(array).__name__}")
        if dtype is None:
            kind = _NUMPY_TO_DTYPE.get(array.dtype)
            if kind is None:
                raise invalid(function, f"array: dtype {array.dtype} has no program dtype")
        else:
            kind = parse_enum(DType, dtype, function, "dtype")
            if NUMPY_DTYPES[kind] != array.dtype:
                raise invalid(function, f"array: dtype {array.dtype}, expected {NUMPY_DTYPES[kind]} for {kind.name.lower()}")
        if array.ndim > MAX_RANK:
            raise invalid(function, f"array: rank {array.ndim} above {MAX_RANK}")
        payload = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        dims = _dims(array.shape, function, "array.shape")
        value = c_uint32()
        status = lib.uform_program_builder_constant(
            builder, int(kind), len(dims), _pointer(dims), payload, len(payload), byref(value)
        )
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_constant")
        return value.value

    def operation(
        self,
        opcode: Union[str, int, Opcode],
        operands: Sequence[int],
        attributes: Sequence[int] = (),
        dtype: Optional[DTypeArgument] = None,
        shape: Optional[Sequence[int]] = None,
    ) -> int:
        """Adds an operation and answers its result's value id. Without ``shape`` the builder
        infers the result type (``convert`` then takes ``dtype``; ``reshape`` and ``broadcast``
        need ``dtype`` and ``shape``); with it, ``dtype`` and ``shape`` are written unchecked."""
        function = "ProgramBuilder.operation"
        builder = self._use(function)
        code = parse_enum(Opcode, opcode, function, "opcode")
        ids = _integers(operands, function, "operands", c_uint32, 0, (1 << 32) - 1)
        attrs = _integers(attributes, function, "attributes", c_int64, -(1 << 63), (1 << 63) - 1)
        if shape is None:
            if code == Opcode.CONVERT and dtype is None:
                raise invalid(function, "dtype: convert needs the result dtype")
            kind = parse_enum(DType, dtype, function, "dtype") if dtype is not None else DType.F32
            rank, dims = _INFER, ()
        else:
            if dtype is None:
                raise invalid(function, "dtype: required with shape")
            kind = parse_enum(DType, dtype, function, "dtype")
            dims = _dims(shape, function, "shape")
            rank = len(dims)
        value = c_uint32()
        status = lib.uform_program_builder_operation(
            builder, int(code), _array(ids, c_uint32), len(ids), _array(attrs, c_int64), len(attrs),
            int(kind), rank, _pointer(dims), byref(value),
        )
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_operation")
        return value.value

    def output(self, name: Optional[str], value: int) -> None:
        """Marks ``value`` as the next output; ``name`` may be None."""
        function = "ProgramBuilder.output"
        builder = self._use(function)
        number = _integers([value], function, "value", c_uint32, 0, (1 << 32) - 1)[0]
        status = lib.uform_program_builder_output(builder, _name(name, function), number)
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_output")

    def type(self, value: int) -> Tuple[DType, Tuple[int, ...]]:
        """The dtype and shape the builder recorded or inferred for ``value``."""
        function = "ProgramBuilder.type"
        builder = self._use(function)
        number = _integers([value], function, "value", c_uint32, 0, (1 << 32) - 1)[0]
        kind, rank, dims = c_int(), c_size_t(), (c_size_t * MAX_RANK)()
        status = lib.uform_program_builder_type(builder, number, byref(kind), byref(rank), addressof(dims))
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_type")
        return DType(kind.value), tuple(dims[i] for i in range(rank.value))

    def finish(self) -> bytes:
        """The wire bytes of everything added so far (a copy the caller owns)."""
        function = "ProgramBuilder.finish"
        builder = self._use(function)
        pointer, length = c_void_p(), c_size_t()
        status = lib.uform_program_builder_finish(builder, byref(pointer), byref(length))
        if status != SessionStatus.OK:
            raise self._fail(status, "uform_program_builder_finish")
        return string_at(pointer.value, length.value) if length.value else b""

    def close(self) -> None:
        """Frees the builder. Closing twice is a no-op."""
        handle, self._handle = self._handle, None
        if handle:
            lib.uform_program_builder_free(handle)


def _name(name: Optional[str], function: str) -> Optional[bytes]:
    if name is None:
        return None
    if not isinstance(name, str):
        raise invalid(function, f"name: expected a str or None, got {type(name).__name__}")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError as error:
        raise invalid(function, f"name: not encodable as UTF-8 ({error.reason})") from None
    if b"\0" in encoded:
        raise invalid(function, "name: contains a NUL character")
    return encoded


def _dims(shape: Any, function: str, argument: str) -> Tuple[int, ...]:
    if not isinstance(shape, (list, tuple)):
        raise invalid(function, f"{argument}: expected a tuple of sizes, got {type(shape).__name__}")
    if len(shape) > MAX_RANK:
        raise invalid(function, f"{argument}: rank {len(shape)} above {MAX_RANK}")
    return tuple(non_negative(size, function, f"{argument}[{i}]") for i, size in enumerate(shape))


def _integers(values: Any, function: str, argument: str, ctype, low: int, high: int) -> Tuple[int, ...]:
    if not isinstance(values, (list, tuple, np.ndarray)):
        raise invalid(function, f"{argument}: expected a list of integers, got {type(values).__name__}")
    answer = []
    for i, item in enumerate(values):
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise invalid(function, f"{argument}[{i}]: expected an integer, got {type(item).__name__}")
        if not low <= int(item) <= high:
            raise invalid(function, f"{argument}[{i}] = {int(item)}: outside [{low}, {high}]")
        answer.append(int(item))
    return tuple(answer)


def _array(values: Tuple[int, ...], ctype) -> Any:
    return (ctype * max(len(values), 1))(*values) if values else None


def _pointer(dims: Tuple[int, ...]) -> Any:
    return (c_size_t * max(len(dims), 1))(*dims) if dims else None
