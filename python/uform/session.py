"""The tensor-program session: compile wire bytes for this CPU, run them on NumPy arrays.

    session = uform.Session()
    program = session.compile(wire)          # bytes from uform.ProgramBuilder or anywhere
    (y,) = program.invoke(x, w)              # arrays matching program.inputs; answers new outputs
    program.invoke(x, w, out=(y,))           # or writes into arrays you own
    program.release()

Arrays must match the descriptors exactly (dtype, shape, C-contiguous, aligned); anything else
raises ``InvalidArgument`` naming the array before C is called. The inputs are never written.
"""

import threading
from ctypes import POINTER, addressof, byref, c_size_t, c_void_p, cast
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _structs as S
from ._closing import Closing
from ._library import lib
from .errors import invalid
from .errors import SessionStatus, session_error


class DType(IntEnum):
    """``uform_session_dtype_t``: scalar types of program values (the wire format's dtype bytes)."""

    F32 = 0
    F64 = 1
    F16 = 2
    BF16 = 3
    I8 = 4
    I32 = 5
    I64 = 6
    U8 = 7
    BOOL = 8


# bfloat16 values travel as their uint16 bit patterns (NumPy has no bfloat16).
NUMPY_DTYPES = {
    DType.F32: np.dtype(np.float32),
    DType.F64: np.dtype(np.float64),
    DType.F16: np.dtype(np.float16),
    DType.BF16: np.dtype(np.uint16),
    DType.I8: np.dtype(np.int8),
    DType.I32: np.dtype(np.int32),
    DType.I64: np.dtype(np.int64),
    DType.U8: np.dtype(np.uint8),
    DType.BOOL: np.dtype(np.bool_),
}

DTypeArgument = Union[str, int, DType]


@dataclass(frozen=True)
class Descriptor:
    """One parameter or output of a compiled program: its dtype, shape, exact byte size and the
    alignment its address needs. ``numpy_dtype`` is the array dtype that carries it."""

    dtype: DType
    shape: Tuple[int, ...]
    byte_size: int
    alignment: int

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype of arrays for this value (``uint16`` bit patterns for bf16)."""
        return NUMPY_DTYPES[self.dtype]


def _descriptors(pointer: int, count: int) -> Tuple[Descriptor, ...]:
    if count == 0:
        return ()
    array = (S.Descriptor * count).from_address(pointer)
    answer = []
    for raw in array:
        dims = cast(raw.dims, POINTER(c_size_t)) if raw.rank else None
        shape = tuple(dims[i] for i in range(raw.rank)) if dims is not None else ()
        answer.append(Descriptor(DType(raw.dtype), shape, raw.byte_size, raw.alignment))
    return tuple(answer)


class Session(Closing):
    """Up to 64 compiled programs and the scratch memory they run in. The C session is not
    thread-safe; this object serialises its calls with a lock, so Python threads may share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        handle = c_void_p()
        status = lib.uform_session_init(byref(handle))
        if status != SessionStatus.OK:
            raise session_error(status, "uform_session_init", "cannot make a session")
        self._handle: Optional[int] = handle.value

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the session is closed")
        return self._handle

    @property
    def last_cause(self) -> str:
        """For logs: the inner reason behind the latest compile failure (``""`` when none)."""
        return lib.uform_session_last_cause(self._handle).decode("utf-8", errors="replace")

    def compile(self, wire: Union[bytes, bytearray, memoryview]) -> "Program":
        """Decodes, validates and compiles wire bytes into a ``Program``. Raises ``InvalidProgram``
        (malformed, with the cause), ``UnsupportedVersion``, ``TooManyPrograms`` or ``CompileFailed``."""
        function = "Session.compile"
        if not isinstance(wire, (bytes, bytearray, memoryview)):
            raise invalid(function, f"wire: expected bytes, got {type(wire).__name__}")
        data = bytes(wire)
        handle = S.ProgramHandle()
        with self._lock:
            session = self._use(function)
            status = lib.uform_session_compile(session, data, len(data), byref(handle))
            if status != SessionStatus.OK:
                raise session_error(status, "uform_session_compile", self.last_cause)
            return Program(self, handle)

    def close(self) -> None:
        """Releases every program and the session. Closing twice is a no-op."""
        with self._lock:
            handle, self._handle = self._handle, None
            if handle:
                lib.uform_session_free(handle)


class Program:
    """A compiled program of a ``Session``: ``inputs`` and ``outputs`` describe its arrays,
    ``invoke`` runs it, ``release`` frees its slot (a released program raises ``InvalidHandle``)."""

    def __init__(self, session: Session, handle: S.ProgramHandle) -> None:
        self._session = session
        self._handle = handle
        self._released = False
        pointer, count = c_void_p(), c_size_t()
        lib.uform_session_inputs(session._handle, handle, byref(pointer), byref(count))
        self.inputs: Tuple[Descriptor, ...] = _descriptors(pointer.value or 0, count.value)
        lib.uform_session_outputs(session._handle, handle, byref(pointer), byref(count))
        self.outputs: Tuple[Descriptor, ...] = _descriptors(pointer.value or 0, count.value)

    @property
    def scratch_size(self) -> int:
        """Bytes of scratch one invocation needs (the session provides it)."""
        with self._session._lock:
            return lib.uform_session_scratch_size(self._session._use("Program.scratch_size"), self._handle)

    def invoke(self, *arrays: np.ndarray, out: Optional[Sequence[np.ndarray]] = None) -> Tuple[np.ndarray, ...]:
        """Runs the program on ``arrays`` (one per input descriptor, in order) and answers its
        outputs as a tuple: new arrays, or the arrays of ``out`` written in place."""
        function = "Program.invoke"
        if len(arrays) != len(self.inputs):
            raise invalid(function, f"arrays: the program takes {len(self.inputs)} inputs, got {len(arrays)}")
        for i, (array, descriptor) in enumerate(zip(arrays, self.inputs)):
            _check(array, descriptor, function, f"arrays[{i}]", writable=False)
        if out is None:
            results = tuple(np.empty(d.shape, d.numpy_dtype) for d in self.outputs)
        else:
            if not isinstance(out, (list, tuple)):
                raise invalid(function, f"out: expected a list or tuple of arrays, got {type(out).__name__}")
            if len(out) != len(self.outputs):
                raise invalid(function, f"out: the program has {len(self.outputs)} outputs, got {len(out)} arrays")
            for i, (array, descriptor) in enumerate(zip(out, self.outputs)):
                _check(array, descriptor, function, f"out[{i}]", writable=True)
            for i, array in enumerate(out):
                for j, other in enumerate(list(arrays) + list(out[:i])):
                    if array.nbytes and other.nbytes and np.may_share_memory(array, other):
                        name = f"arrays[{j}]" if j < len(arrays) else f"out[{j - len(arrays)}]"
                        raise invalid(function, f"out[{i}]: shares memory with {name}")
            results = tuple(out)
        input_pointers = (c_void_p * max(len(arrays), 1))(*[_address(a) for a in arrays])
        input_sizes = (c_size_t * max(len(arrays), 1))(*[a.nbytes for a in arrays])
        output_pointers = (c_void_p * max(len(results), 1))(*[_address(a) for a in results])
        output_sizes = (c_size_t * max(len(results), 1))(*[a.nbytes for a in results])
        with self._session._lock:
            session = self._session._use(function)
            status = lib.uform_session_invoke(
                session,
                self._handle,
                addressof(input_pointers),
                addressof(input_sizes),
                len(arrays),
                addressof(output_pointers),
                addressof(output_sizes),
                len(results),
                None,
                0,
            )
        if status != SessionStatus.OK:
            raise session_error(status, "uform_session_invoke", _INVOKE_REASONS.get(status, ""))
        return results

    def release(self) -> None:
        """Frees the program's slot. Releasing twice raises ``InvalidHandle``, like the C API."""
        with self._session._lock:
            session = self._session._use("Program.release")
            status = lib.uform_session_release(session, self._handle)
        if status != SessionStatus.OK:
            raise session_error(status, "uform_session_release", "the program was released already")
        self._released = True

    def __repr__(self) -> str:
        state = "released" if self._released else f"{len(self.inputs)} inputs, {len(self.outputs)} outputs"
        return f"Program({state})"


_INVOKE_REASONS = {
    SessionStatus.INVALID_HANDLE: "the program was released",
    SessionStatus.INVALID_BUFFER: "the buffers do not match the program's descriptors",
    SessionStatus.OUT_OF_MEMORY: "the session could not allocate its scratch",
    SessionStatus.LAUNCH_FAILED: "a kernel refused to run",
}


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _check(array: Any, descriptor: Descriptor, function: str, where: str, writable: bool) -> None:
    """Refuses an array that does not match a descriptor, naming it and what was expected."""
    expected = descriptor.numpy_dtype
    if not isinstance(array, np.ndarray):
        raise invalid(function, f"{where}: expected a NumPy array, got {type(array).__name__}")
    if array.dtype != expected:
        raise invalid(function, f"{where}: dtype {array.dtype}, expected {expected} ({descriptor.dtype.name.lower()})")
    if array.shape != descriptor.shape:
        raise invalid(function, f"{where}: shape {array.shape}, expected {descriptor.shape}")
    if not array.flags.c_contiguous:
        raise invalid(function, f"{where}: not C-contiguous (pass np.ascontiguousarray)")
    if array.nbytes and _address(array) % max(descriptor.alignment, 1):
        raise invalid(function, f"{where}: address not aligned to {descriptor.alignment} bytes")
    if writable and not array.flags.writeable:
        raise invalid(function, f"{where}: read-only")
