"""Indexes from vectors (uform.h, uform_index_builder_create_vectors / _add_vectors): the body of
``Index.build(vectors=...)``. A NumPy matrix of float32 or float16 rows becomes the index's items,
named by ``paths`` (or ``ids``; strings or bytes, one per row) or by their row numbers."""

from ctypes import addressof, byref, c_void_p, create_string_buffer
from typing import Any, Optional, Sequence

import numpy as np

from . import _structs as S
from ._library import lib
from .enums import Scalar, parse_enum
from .errors import invalid

_MODALITY_NAMES = ("text", "image", "video", "audio")
_NORMALIZE = 1  # UFORM_INDEX_NORMALIZE


def _raise(outcome: S.Outcome) -> None:
    from .data import _raise as raise_outcome

    raise_outcome(outcome)


def _name_tape(names: Sequence[Any], rows: int, function: str):
    """The names as one byte buffer and count + 1 offsets (kept alive by the caller)."""
    if isinstance(names, (str, bytes)):
        raise invalid(function, "paths: give a sequence of names, one per row, not one string")
    encoded = [n.encode() if isinstance(n, str) else bytes(n) for n in names]
    if len(encoded) != rows:
        raise invalid(function, f"paths: {len(encoded)} names for {rows} rows of vectors: one per row")
    offsets = np.zeros(rows + 1, dtype=np.uintp)
    if rows:
        offsets[1:] = np.cumsum([len(n) for n in encoded])
    data = b"".join(encoded)
    return data, offsets


def checked_matrix(vectors: Any, modality: str, function: str) -> np.ndarray:
    """``vectors`` as a contiguous 2-D float32 or float16 matrix (refusing anything else)."""
    matrix = np.asarray(vectors)
    if matrix.dtype not in (np.float32, np.float16):
        raise invalid(function, f"vectors: dtype {matrix.dtype} — give float32 or float16 rows "
                                "(vectors.astype(numpy.float32))")
    if matrix.ndim != 2:
        raise invalid(function, f"vectors: {matrix.ndim} dimensions — give a 2-D [rows, columns] matrix")
    if modality not in _MODALITY_NAMES:
        raise invalid(function, f"modality: {modality!r} is not one of text, image, video, audio")
    return matrix


def fill_builder(matrix: np.ndarray, *, paths: Optional[Sequence[Any]], model: Any, scalar: Any, normalize: bool,
                 modality: str, function: str) -> int:
    """A new builder (its handle) holding the rows of ``matrix`` named by ``paths`` (None: a lone
    builder numbers them from 0). The caller frees it with uform_index_builder_free."""
    matrix = np.ascontiguousarray(matrix)
    rows, columns = matrix.shape
    fingerprint = None
    if model is not None:
        if columns > model.describe().embedding:
            raise invalid(function, f"vectors: {columns} columns, wider than the model's embeddings "
                                    f"({model.describe().embedding})")
        buffer = create_string_buffer(33)  # UFORM_FINGERPRINT_CAPACITY
        if lib.uform_model_fingerprint(model._handle, addressof(buffer), addressof(outcome := S.Outcome())) != 0:
            _raise(outcome)
        fingerprint = buffer.value
    kind = int(parse_enum(Scalar, scalar, function, "scalar"))
    outcome, handle = S.Outcome(), c_void_p()
    if lib.uform_index_builder_create_vectors(columns, kind, fingerprint, byref(handle), addressof(outcome)) != 0:
        _raise(outcome)
    try:
        tape, keep = None, None
        if paths is not None:
            data, offsets = _name_tape(paths, rows, function)
            keep = (data, offsets)
            tape = S.Tape(data, offsets.ctypes.data, rows)
        source_kind = 0 if matrix.dtype == np.float32 else 1  # UFORM_SCALAR_F32, UFORM_SCALAR_F16
        flags = _NORMALIZE if normalize else 0
        if lib.uform_index_builder_add_vectors(handle.value, _MODALITY_NAMES.index(modality), matrix.ctypes.data,
                                               source_kind, rows, columns, 0,
                                               addressof(tape) if tape is not None else None, flags,
                                               addressof(outcome)) != 0:
            _raise(outcome)
        del keep
    except BaseException:
        lib.uform_index_builder_free(handle.value)
        raise
    return handle.value


def build_from_vectors(vectors: Any, out: Any, *, paths: Optional[Sequence[Any]], model: Any, scalar: Any,
                       normalize: bool, modality: str, function: str, out_bytes: bytes) -> int:
    """Writes ``out`` from ``vectors`` and answers the number of items."""
    matrix = checked_matrix(vectors, modality, function)
    handle = fill_builder(matrix, paths=paths, model=model, scalar=scalar, normalize=normalize, modality=modality,
                          function=function)
    try:
        outcome = S.Outcome()
        if lib.uform_index_builder_write(handle, out_bytes, None, 0, addressof(outcome)) != 0:
            _raise(outcome)
    finally:
        lib.uform_index_builder_free(handle)
    return matrix.shape[0]
