"""Media decoded ahead of an encode (uform.h, "Media": uform_media_prepare, uform_prepared_encode).

    with uform.Executor.for_ram(threads=1) as decoder, uform.Executor.for_ram() as executor:
        prepared = model.on(decoder).media_prepare(["a.jpg", "b.png"], "image")   # decode here ...
        encoded = model.on(executor).prepared_encode(prepared)                   # ... compute there
        print(prepared.errors)     # per item: None, or why it could not be decoded

``Prepared`` owns the arena its rows live in (freed by ``close()``); ``rows`` is a copy of the
model-ready inputs, F32 [count · rows_per_item, patch_width]. Only the items that decoded are
encoded, in order: ``encoded.embeddings[k]`` belongs to the k-th item whose error is None.
"""

from ctypes import addressof, c_void_p
from typing import Any, List, Optional

import numpy as np

from . import _data_structs as D, _structs as S
from ._closing import Closing
from ._library import lib
from .errors import from_outcome, invalid
from .results import _matrix

_MODALITIES = {"image": 1, "video": 2, "audio": 3}


class Prepared(Closing):
    """Decoded media of one modality, ready for ``prepared_encode`` on any executor."""

    def __init__(self, request: D.MediaPrepare, arena: int, keep: Any) -> None:
        self._request, self._arena, self._keep = request, arena, keep
        prepared = request.prepared
        self.modality: str = ("text", "image", "video", "audio")[prepared.modality]
        self.count: int = prepared.count
        self.rows_per_item: int = prepared.rows_per_item
        self.failed: int = prepared.failed
        outcomes = (S.Outcome * prepared.count).from_address(prepared.item_outcomes) if prepared.count else []
        self.errors: List[Optional[str]] = [None if o.status == 0 else o.message.decode(errors="replace") for o in outcomes]

    @property
    def rows(self) -> np.ndarray:
        """A copy of the prepared rows [count · rows_per_item, patch_width] float32."""
        if self._arena is None:
            raise invalid("Prepared.rows", "the prepared items are closed")
        return _matrix(self._request.prepared.rows, False, None)

    def close(self) -> None:
        """Frees the arena the rows live in. Closing twice is a no-op."""
        if getattr(self, "_arena", None) is None:
            return
        arena, self._arena = self._arena, None
        lib.uform_arena_free(arena)


def media_prepare(receiver: Any, files: Any, modality: str) -> Prepared:
    """``receiver.media_prepare``: decodes image, video or audio files (paths or bytes) ahead."""
    from . import _inputs

    function = "media_prepare"
    if receiver._completion != 0:
        raise invalid(function, "media_prepare blocks: call it on the model or model.on(executor)")
    if modality not in _MODALITIES:
        raise invalid(function, f"modality {modality!r}: expected 'image', 'video' or 'audio'")
    items = _inputs.files(files, function, "files")
    model, executor = receiver._model, receiver._executor
    handle = model._handle
    if handle is None:
        raise invalid(function, "the model is closed")
    arena = c_void_p(executor._new_arena(function))  # the Prepared's own: its rows live there
    request = D.MediaPrepare()
    request.model, request.executor, request.modality = handle, executor._handle, _MODALITIES[modality]
    request.files = S.Tape(items.data, items.offsets, items.count)
    request.arena = arena.value
    if lib.uform_media_prepare(addressof(request)) != 0:
        lib.uform_arena_free(arena.value)
        raise from_outcome(request.outcome)
    return Prepared(request, arena.value, (items.keep, model))


def prepared_encode(receiver: Any, prepared: Prepared, outputs: Any, scalar: Any, dims: Optional[int]) -> Any:
    """``receiver.prepared_encode``: encodes prepared items (those that decoded), owned results."""
    from ._verbs import _options
    from .results import encoded

    function = "prepared_encode"
    if receiver._completion != 0:
        raise invalid(function, "prepared_encode blocks: call it on the model or model.on(executor)")
    if not isinstance(prepared, Prepared) or prepared._arena is None:
        raise invalid(function, "prepared: expected an open uform.Prepared (from media_prepare)")
    flags, kind, dimensions = _options(function, outputs, scalar, dims, None, False, None)
    model, executor = receiver._model, receiver._executor
    arena = executor._acquire_arena(function)
    try:
        request = D.PreparedEncode()
        request.model, request.executor, request.prepared = model._handle, executor._handle, addressof(prepared._request.prepared)
        request.outputs, request.arena = flags, arena
        request.config.outputs_scalar, request.config.dimensions = kind, dimensions
        if lib.uform_prepared_encode(addressof(request)) != 0:
            raise from_outcome(request.outcome)
        return encoded(request.encoded, flags, None, None, 0)
    finally:
        executor._release_arena(arena)
