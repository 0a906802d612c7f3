"""What the verbs answer: ``Encoded`` (embeddings, token vectors, states), ``Chosen`` (the
probabilities of ``text_choose``), ``Ragged`` rows and ``Stats``.

By default every array is a NumPy array the caller owns (copied out of the binding's own arena).
A call given ``arena=Arena(...)`` answers zero-copy, read-only views into that arena instead; their
accessors (``.embeddings``, ``.values`` …) check the arena's generation every time and raise
``InvalidArgument`` once a later call has rewritten it or it was closed — the stale-view rule of the
C API. An array taken from an accessor is a plain NumPy view with no check of its own, like a C
pointer read from a view's ``data``: the arena's next call may move its pages (it regrows by
mapping a new block), so using such an array after that call or after ``close()`` reads freed
memory. Copy what you keep past the arena's next call, or read it through the accessors.

Scalars: ``f32`` → ``float32``, ``f16`` → ``float16``, ``bf16`` → ``uint16`` (the bfloat16 bit
patterns; ``bfloat16_to_float32`` widens them exactly), ``i8`` → ``int8``, ``b1`` → ``uint8`` with
``ceil(E / 8)`` bytes a row, dimension 0 in the most significant bit (``np.unpackbits`` order).
"""

from ctypes import c_char
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np

from . import _structs as S
from ._library import lib
from .errors import invalid

_DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float16), 2: np.dtype(np.uint16), 3: np.dtype(np.int8), 4: np.dtype(np.uint8)}
_OFFSET = np.dtype(np.int64)  # size_t offsets, read as int64 (bit-identical below 2^63)


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widens bfloat16 bit patterns (``uint16``, as ``scalar="bf16"`` answers them) to ``float32``, exactly."""
    array = np.asarray(bits)
    if array.dtype != np.uint16:
        raise invalid("bfloat16_to_float32", f"bits: dtype {array.dtype}, expected uint16")
    return (array.astype(np.uint32) << 16).view(np.float32)


@dataclass(frozen=True)
class Stats:
    """What a call measured (``uform_encode_stats_t``), asked for with ``stats=True``."""

    items: int
    tokens: int
    input_bytes: int
    decode_seconds: float
    compute_seconds: float
    flops: float
    arena_bytes: int

    @classmethod
    def _of(cls, raw: S.EncodeStats) -> "Stats":
        return cls(raw.items, raw.tokens, raw.input_bytes, raw.decode_seconds, raw.compute_seconds, raw.flops, raw.arena_bytes)


class _Guard:
    """The stale-view check of results that live in a caller's arena."""

    __slots__ = ("arena", "generation")

    def __init__(self, arena, generation: int):
        self.arena, self.generation = arena, generation

    def check(self, accessor: str) -> None:
        handle = self.arena._handle
        if handle is None:
            raise invalid(accessor, "stale view: its arena was closed")
        now = lib.uform_arena_generation(handle)
        if now != self.generation:
            raise invalid(
                accessor,
                f"stale view: it belongs to arena generation {self.generation}, and a later call moved the arena "
                f"to generation {now} (copy results you keep, or give each live result its own Arena)",
            )


def _matrix(matrix: S.Matrix, view: bool, keep) -> np.ndarray:
    """A ``[rows, width]`` array of a matrix: a read-only view into the arena, or an owned copy."""
    if not view:
        return owned_rows(matrix)
    return rows_view(placement_of(matrix), keep)


def placement_of(matrix: S.Matrix) -> tuple:
    """Where and how a matrix lies: (data, rows, columns, stride_bytes, scalar)."""
    return (matrix.data, matrix.rows, matrix.columns, matrix.stride_bytes, matrix.scalar)


def rows_view(placement: tuple, keep: Any = None) -> np.ndarray:
    """A NumPy view of the rows at ``placement`` (no copy). With ``keep`` None it is writable and
    keeps nothing alive: read it only while the memory is known to hold those rows. Otherwise it is
    read-only and keeps ``keep`` (the arena) alive. Rows of no bytes answer an empty array."""
    data, rows, columns, stride, scalar = placement
    dtype = _DTYPES[scalar]
    width = (columns + 7) // 8 if scalar == 4 else columns
    row_bytes = width * dtype.itemsize
    if not rows or not row_bytes or not data:
        return np.empty((rows, width), dtype)
    buffer = (c_char * ((rows - 1) * stride + row_bytes)).from_address(data)
    if keep is None:
        return np.ndarray((rows, width), dtype, buffer, 0, (stride, dtype.itemsize))
    return frozen_view(buffer, keep, (rows, width), dtype, (stride, dtype.itemsize))


def frozen_view(buffer: Any, keep: Any, shape: tuple, dtype: np.dtype, strides: tuple) -> np.ndarray:
    """A read-only array over a ctypes buffer that keeps ``keep`` alive (a read-only memoryview
    makes it so in one step: cheaper than setting ``flags.writeable`` after)."""
    buffer._uform_keep = keep  # the arena outlives every array made over it
    return np.ndarray(shape, dtype, memoryview(buffer).toreadonly(), 0, strides)


# The placement (data, rows, columns, stride, scalar) of the matrix owned_rows copied last, and a
# view of it. One tuple, replaced whole, so threads never see a placement with another's view.
_last_rows: tuple = ((), None)


def owned_rows(matrix: S.Matrix) -> np.ndarray:
    """An owned, C-contiguous copy of a matrix (on every default call's path, so kept short).

    The binding's own arenas rewind for every call, so a steady loop finds its outputs at the same
    address with the same shape call after call: the view over them is kept and only ``copy()``
    runs (building the view costs four times the copy of a batch-1 embedding). A kept view is read
    only when the matrix just written lies exactly where it points, so it never reads memory the
    library has since freed, and it keeps nothing alive."""
    global _last_rows
    placement = placement_of(matrix)
    last, view = _last_rows
    if placement != last:
        view = rows_view(placement)
        _last_rows = (placement, view)
    return view.copy()


def _offsets(rows: S.Rows, view: bool, keep) -> np.ndarray:
    count = rows.count
    if not rows.offsets:
        return np.zeros(count + 1, _OFFSET)
    buffer = (c_char * (8 * (count + 1))).from_address(rows.offsets)
    if view:
        return frozen_view(buffer, keep, (count + 1,), _OFFSET, (8,))
    return np.ndarray((count + 1,), _OFFSET, buffer).copy()


class Ragged:
    """Ragged rows: item ``i`` is ``values[offsets[i]:offsets[i + 1]]``.

    ``len()`` is the number of items, indexing and iteration answer each item's rows.
    """

    __slots__ = ("_values", "_offsets", "_guard", "_name")

    def __init__(self, values: np.ndarray, offsets: np.ndarray, guard: Optional[_Guard] = None, name: str = "Ragged"):
        self._values, self._offsets, self._guard, self._name = values, offsets, guard, name

    def _check(self, accessor: str) -> None:
        if self._guard is not None:
            self._guard.check(f"{self._name}.{accessor}")

    @property
    def values(self) -> np.ndarray:
        """Every item's rows end to end (``[total rows, width]``; 1-D for ``text_choose``)."""
        self._check("values")
        return self._values

    @property
    def offsets(self) -> np.ndarray:
        """``int64 [items + 1]``: item ``i`` owns rows ``offsets[i] .. offsets[i + 1]``."""
        self._check("offsets")
        return self._offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, item: int) -> np.ndarray:
        self._check("__getitem__")
        count = len(self._offsets) - 1
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise invalid(f"{self._name}.__getitem__", f"item: expected an integer, got {type(item).__name__}")
        position = int(item) + count if item < 0 else int(item)
        if not 0 <= position < count:
            raise IndexError(f"item {item} out of range for {count} items")
        return self._values[self._offsets[position] : self._offsets[position + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for item in range(len(self)):
            yield self[item]

    def __repr__(self) -> str:
        return f"Ragged({len(self)} items, values {self._values.dtype} {self._values.shape})"


class Encoded:
    """The outputs of an encode; outputs not asked for are None."""

    __slots__ = ("_embeddings", "_token_vectors", "_states", "_stats", "_guard", "_raw")

    def __init__(self, embeddings, token_vectors, states, stats, guard, raw=None):
        self._embeddings, self._token_vectors, self._states = embeddings, token_vectors, states
        self._stats, self._guard = stats, guard
        self._raw = raw  # the C views (uform_encoded_t) of an arena result, for tests and debugging

    def _check(self, accessor: str) -> None:
        if self._guard is not None:
            self._guard.check(f"Encoded.{accessor}")

    @property
    def embeddings(self) -> Optional[np.ndarray]:
        """``[items, E or dims]``: each item's L2-normalised embedding (in the requested scalar)."""
        self._check("embeddings")
        return self._embeddings

    @property
    def token_vectors(self) -> Optional[Ragged]:
        """Ragged ``[tokens, E or dims]`` per item, CLS first (in the requested scalar)."""
        self._check("token_vectors")
        return self._token_vectors

    @property
    def states(self) -> Optional[Ragged]:
        """Ragged ``[tokens, hidden]`` float32 per item: the final normalised token states."""
        self._check("states")
        return self._states

    @property
    def stats(self) -> Optional[Stats]:
        """What the call measured, when asked for with ``stats=True``."""
        return self._stats

    @property
    def is_view(self) -> bool:
        """True when the arrays are views into a caller's ``Arena`` (and go stale with it)."""
        return self._guard is not None

    def __repr__(self) -> str:
        parts = []
        if self._embeddings is not None:
            parts.append(f"embeddings {self._embeddings.dtype} {self._embeddings.shape}")
        if self._token_vectors is not None:
            parts.append(f"token_vectors {self._token_vectors!r}")
        if self._states is not None:
            parts.append(f"states {self._states!r}")
        return "Encoded(" + ", ".join(parts) + ")"


class Chosen:
    """The answer of ``text_choose``: per text, one probability per legal byte, in the order listed."""

    __slots__ = ("_probabilities", "_stats", "_guard", "_raw")

    def __init__(self, probabilities: Ragged, stats: Optional[Stats], guard: Optional[_Guard], raw=None):
        self._probabilities, self._stats, self._guard = probabilities, stats, guard
        self._raw = raw  # the C view (uform_rows_t) of an arena result

    @property
    def probabilities(self) -> Ragged:
        """Ragged float32: ``probabilities[i]`` is text ``i``'s distribution over its choices."""
        if self._guard is not None:
            self._guard.check("Chosen.probabilities")
        return self._probabilities

    @property
    def stats(self) -> Optional[Stats]:
        """What the call measured, when asked for with ``stats=True``."""
        return self._stats

    def __repr__(self) -> str:
        return f"Chosen({self._probabilities!r})"


def encoded(raw: S.Encoded, flags: int, stats: Optional[S.EncodeStats], arena, generation: int) -> Encoded:
    """An ``Encoded`` from a final request: views into ``arena`` when given, else owned copies."""
    view = arena is not None
    if flags == 1 and stats is None:
        if view:
            return Encoded(_matrix(raw.embeddings, True, arena), None, None, None, _Guard(arena, generation), raw)
        return Encoded(owned_rows(raw.embeddings), None, None, None, None)
    guard = _Guard(arena, generation) if view else None
    keep = arena
    embeddings = _matrix(raw.embeddings, view, keep) if flags & 1 else None
    token_vectors = states = None
    if flags & 2:
        rows = raw.token_vectors
        token_vectors = Ragged(_matrix(rows.matrix, view, keep), _offsets(rows, view, keep), guard, "Encoded.token_vectors")
    if flags & 4:
        rows = raw.states
        states = Ragged(_matrix(rows.matrix, view, keep), _offsets(rows, view, keep), guard, "Encoded.states")
    return Encoded(embeddings, token_vectors, states, Stats._of(stats) if stats is not None else None, guard,
                   raw if view else None)


def chosen(raw: S.Rows, stats: Optional[S.EncodeStats], arena, generation: int) -> Chosen:
    """A ``Chosen`` from a final ``text_choose`` request (1-D float32 probabilities)."""
    view = arena is not None
    guard = _Guard(arena, generation) if view else None
    values = _matrix(raw.matrix, view, arena).reshape(-1)
    probabilities = Ragged(values, _offsets(raw, view, arena), guard, "Chosen.probabilities")
    return Chosen(probabilities, Stats._of(stats) if stats is not None else None, guard, raw if view else None)
