"""Turning Python inputs into tapes (``uform_tape_t``), checked before anything reaches C.

A tape is ``count`` items end to end in one buffer with ``count + 1`` byte offsets. One item is
passed where it lies (a ``bytes`` object, a C-contiguous NumPy array); several items of a NumPy
batch (``[n, h, w, 3]`` pixels, ``[n, samples]`` recordings) too; a list of separate objects is
joined into one buffer, which is the only copy the binding makes of an input.

Every builder answers ``Items(data, offsets, count, keep)``: ``data`` is a ``bytes`` object or an
address, ``offsets`` an address, and ``keep`` holds every object those addresses point into, which
the caller keeps alive until the call is final. Wrong types, dtypes, shapes and layouts raise
``InvalidArgument`` naming the argument and the item.
"""

import os
from ctypes import addressof, c_size_t
from itertools import accumulate
from operator import index
from typing import Any, NamedTuple, Tuple

import numpy as np

from .errors import IoError, Status, invalid

_BYTES = (bytes, bytearray, memoryview)
_SEQUENCES = (list, tuple)


class Items(NamedTuple):
    """A tape's fields and the objects its addresses point into."""

    data: Any
    offsets: int
    count: int
    keep: Tuple[Any, ...]


def _type_name(value: Any) -> str:
    return type(value).__name__


def _offsets(lengths) -> Any:
    """``count + 1`` running offsets as a C ``size_t`` array."""
    values = list(accumulate(lengths, initial=0))
    return (c_size_t * len(values))(*values)


def _join(parts) -> Items:
    """One tape from a list of ``bytes`` objects (an empty list is an empty tape)."""
    if len(parts) == 1:
        return _single(parts[0])
    data = b"".join(parts)
    offsets = _offsets(map(len, parts))
    return Items(data, addressof(offsets), len(parts), (data, offsets))


def _as_bytes(value: Any, function: str, where: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        try:
            return memoryview(value).tobytes()
        except (TypeError, ValueError) as error:
            raise invalid(function, f"{where}: unreadable buffer ({error})") from None
    raise invalid(function, f"{where}: expected bytes, got {_type_name(value)}")


def _listed(value: Any, function: str, argument: str, singles: tuple, what: str) -> list:
    """``value`` as a list of items: a single item of a ``singles`` type, or a list/tuple."""
    if isinstance(value, singles):
        return [value]
    if isinstance(value, _SEQUENCES):
        return list(value)
    raise invalid(function, f"{argument}: expected {what} or a list of them, got {_type_name(value)}")


_TWO = c_size_t * 2
_new_items = tuple.__new__


def _single(data: bytes) -> Items:
    """The tape of one item, built the quickest way (it is on every batch-1 call's path)."""
    offsets = _TWO(0, len(data))
    return _new_items(Items, (data, addressof(offsets), 1, (data, offsets)))


def texts(value: Any, function: str, argument: str = "texts") -> Items:
    """Texts: ``str`` (UTF-8 encoded) or ``bytes`` (taken as they are), one or a list."""
    kind = type(value)
    if kind is str:
        try:
            return _single(value.encode())
        except UnicodeEncodeError:
            pass  # the general path below names the problem
    elif kind is bytes:
        return _single(value)
    elif kind is list or kind is tuple:  # the common list: every item a str that encodes
        try:
            parts = [item.encode() for item in value if type(item) is str]
        except UnicodeEncodeError:
            parts = None  # the loop below names the item
        if parts is not None and len(parts) == len(value):
            return _join(parts)
    items = _listed(value, function, argument, (str,) + _BYTES, "str or bytes")
    parts = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            try:
                parts.append(item.encode("utf-8"))
            except UnicodeEncodeError as error:
                raise invalid(function, f"{argument}[{i}]: not encodable as UTF-8 ({error.reason})") from None
        elif isinstance(item, _BYTES):
            parts.append(_as_bytes(item, function, f"{argument}[{i}]"))
        else:
            raise invalid(function, f"{argument}[{i}]: expected str or bytes, got {_type_name(item)}")
    return _join(parts)


def _read(path: Any, function: str, where: str) -> bytes:
    try:
        name = os.fspath(path)
    except TypeError:
        raise invalid(function, f"{where}: expected a path, got {_type_name(path)}") from None
    try:
        with open(name, "rb") as file:
            return file.read()
    except OSError as error:
        reason = error.strerror or str(error)
        raise IoError(Status.IO, function, f"{where}: cannot open {str(name)!r}: {reason}") from None
    except ValueError as error:  # embedded NUL
        raise invalid(function, f"{where}: bad path {name!r} ({error})") from None


def files(value: Any, function: str, argument: str) -> Items:
    """Whole files: a path (``str`` or ``os.PathLike``, read here) or the file's bytes, one or a list."""
    singles = (str, os.PathLike) + _BYTES
    items = _listed(value, function, argument, singles, "a path or bytes")
    for i, item in enumerate(items):  # every item's type first, then the reads
        if not isinstance(item, singles):
            raise invalid(function, f"{argument}[{i}]: expected a path or bytes, got {_type_name(item)}")
    parts = []
    for i, item in enumerate(items):
        where = f"{argument}[{i}]"
        if isinstance(item, _BYTES):
            parts.append(_as_bytes(item, function, where))
        else:
            parts.append(_read(item, function, where))
    return _join(parts)


def _array(value: Any, dtype, function: str, where: str, advice: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise invalid(function, f"{where}: expected a NumPy array of {np.dtype(dtype).name}, got {_type_name(value)}")
    if value.dtype != dtype:
        raise invalid(function, f"{where}: dtype {value.dtype}, expected {np.dtype(dtype).name} ({advice})")
    if not value.flags.c_contiguous:
        raise invalid(function, f"{where}: not C-contiguous (pass np.ascontiguousarray({where.split('[')[0]}))")
    return value


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def pixels(value: Any, function: str, argument: str = "pixels") -> Tuple[Items, Any, Any]:
    """RGB8 images: a ``uint8`` array ``[h, w, 3]`` or ``[n, h, w, 3]`` (passed in place), or a
    list of ``[h, w, 3]`` arrays (joined). Answers the tape and the C arrays of heights and widths."""
    advice = "RGB8 pixels: convert with .astype(np.uint8)"
    if isinstance(value, np.ndarray):
        array = _array(value, np.uint8, function, argument, advice)
        if array.ndim not in (3, 4) or array.shape[-1] != 3:
            raise invalid(function, f"{argument}: shape {array.shape}, expected [h, w, 3] or [n, h, w, 3]")
        batch = array if array.ndim == 4 else array[np.newaxis]
        count, height, width = batch.shape[0], batch.shape[1], batch.shape[2]
        item = height * width * 3
        offsets = _offsets([item] * count)
        heights, widths = (c_size_t * count)(*([height] * count)), (c_size_t * count)(*([width] * count))
        tape = Items(_address(array), addressof(offsets), count, (array, offsets))
        return tape, heights, widths
    if not isinstance(value, _SEQUENCES):
        raise invalid(function, f"{argument}: expected a uint8 NumPy array or a list of them, got {_type_name(value)}")
    parts, shapes = [], []
    for i, item in enumerate(value):
        where = f"{argument}[{i}]"
        array = _array(item, np.uint8, function, where, advice)
        if array.ndim != 3 or array.shape[2] != 3:
            raise invalid(function, f"{where}: shape {array.shape}, expected [h, w, 3]")
        parts.append(array.tobytes())
        shapes.append(array.shape)
    tape = _join(parts)
    heights = (c_size_t * max(len(shapes), 1))(*[shape[0] for shape in shapes])
    widths = (c_size_t * max(len(shapes), 1))(*[shape[1] for shape in shapes])
    return tape, heights, widths


def samples(value: Any, function: str, argument: str = "samples") -> Items:
    """Mono float32 recordings: ``[samples]`` (one), ``[n, samples]`` (n, passed in place), or a
    list of 1-D arrays (joined)."""
    advice = "mono float32 PCM: convert with .astype(np.float32)"
    if isinstance(value, np.ndarray):
        array = _array(value, np.float32, function, argument, advice)
        if array.ndim not in (1, 2):
            raise invalid(function, f"{argument}: shape {array.shape}, expected [samples] or [n, samples]")
        batch = array if array.ndim == 2 else array[np.newaxis]
        offsets = _offsets([batch.shape[1] * 4] * batch.shape[0])
        return Items(_address(array), addressof(offsets), batch.shape[0], (array, offsets))
    if not isinstance(value, _SEQUENCES):
        raise invalid(function, f"{argument}: expected a float32 NumPy array or a list of them, got {_type_name(value)}")
    parts = []
    for i, item in enumerate(value):
        where = f"{argument}[{i}]"
        array = _array(item, np.float32, function, where, advice)
        if array.ndim != 1:
            raise invalid(function, f"{where}: shape {array.shape}, expected [samples]")
        parts.append(array.tobytes())
    return _join(parts)


def choices(value: Any, count: int, function: str, argument: str = "choices") -> Items:
    """One entry per text listing its legal next bytes: ``bytes``, a ``str`` (its UTF-8 bytes) or a
    list of integers in [0, 255]."""
    if not isinstance(value, _SEQUENCES):
        raise invalid(function, f"{argument}: expected a list with one entry per text, got {_type_name(value)}")
    if len(value) != count:
        raise invalid(function, f"{argument}: {len(value)} entries for {count} texts")
    parts = []
    for i, entry in enumerate(value):
        where = f"{argument}[{i}]"
        if isinstance(entry, str):
            try:
                parts.append(entry.encode("utf-8"))
            except UnicodeEncodeError as error:
                raise invalid(function, f"{where}: not encodable as UTF-8 ({error.reason})") from None
        elif isinstance(entry, _BYTES):
            parts.append(_as_bytes(entry, function, where))
        elif isinstance(entry, _SEQUENCES):
            values = []
            for j, byte in enumerate(entry):
                if isinstance(byte, bool) or not isinstance(byte, (int, np.integer)) or not 0 <= byte <= 255:
                    raise invalid(function, f"{where}[{j}] = {byte!r}: expected a byte value in [0, 255]")
                values.append(int(byte))
            parts.append(bytes(values))
        else:
            raise invalid(function, f"{where}: expected bytes, str or a list of byte values, got {_type_name(entry)}")
    return _join(parts)


def groups(value: Any, count: int, function: str, argument: str = "groups") -> Any:
    """Temperature groups, one non-negative integer per text, as a C ``size_t`` array (None: NULL)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise invalid(function, f"{argument}: expected a 1-D integer array, got {value.dtype} {value.shape}")
        value = value.tolist()
    if not isinstance(value, _SEQUENCES):
        raise invalid(function, f"{argument}: expected a list of integers, got {_type_name(value)}")
    if len(value) != count:
        raise invalid(function, f"{argument}: {len(value)} entries for {count} texts")
    numbers = []
    for i, group in enumerate(value):
        number = non_negative(group, function, f"{argument}[{i}]")
        numbers.append(number)
    return (c_size_t * max(count, 1))(*numbers)


def path_bytes(value: Any, function: str, argument: str) -> bytes:
    """A file path as the bytes C receives (``str``, ``bytes`` or ``os.PathLike``; no NUL, not empty)."""
    try:
        name = os.fsencode(value)
    except TypeError:
        raise invalid(function, f"{argument}: expected a str or os.PathLike, got {_type_name(value)}") from None
    except UnicodeEncodeError as error:
        raise invalid(function, f"{argument}: not encodable for the file system ({error.reason})") from None
    if not name or b"\0" in name:
        raise invalid(function, f"{argument}: empty or contains a NUL byte")
    return name


def non_negative(value: Any, function: str, argument: str) -> int:
    """An integer >= 0 that fits a ``size_t`` (``bool`` is refused)."""
    if isinstance(value, bool):
        raise invalid(function, f"{argument} = {value!r}: expected an integer")
    try:
        number = index(value)
    except TypeError:
        raise invalid(function, f"{argument}: expected an integer, got {_type_name(value)}") from None
    if number < 0:
        raise invalid(function, f"{argument} = {number}: must not be negative")
    if number >= 1 << 63:
        raise invalid(function, f"{argument} = {number}: too large")
    return number
