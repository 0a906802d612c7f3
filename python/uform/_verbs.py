"""The verbs every receiver offers (``Model``, ``model.on(executor)``, ``model.deferred(executor)``)
and the one path they all take into C: check the arguments, fill the request, call, collect."""

from _thread import allocate_lock as _Lock
from ctypes import addressof, c_char, c_int, c_size_t, sizeof
from typing import Any, Callable, Generic, Iterable, Optional, TypeVar, Union

from . import _inputs, _structs as S
from ._library import lib
from ._progress import Relay, trampoline
from .arena import Arena
from .deferred import _STATUSES, Deferred
from .enums import Outputs, Scalar, parse_enum
from .errors import Status, from_outcome, invalid
from .results import Encoded, _Guard, chosen, encoded, frozen_view, owned_rows, placement_of, rows_view

E = TypeVar("E")  # what an encode verb answers: Encoded, or Deferred[Encoded]
C = TypeVar("C")  # what text_choose answers: Chosen, or Deferred[Chosen]

BLOCKING, DEFERRED = 0, 1  # uform_completion_t
_OK, _DEFERRED = int(Status.OK), int(Status.DEFERRED)  # plain ints: an IntEnum member costs a lookup

OutputsArgument = Union[None, str, Outputs, Iterable[Union[str, Outputs]]]
ScalarArgument = Union[str, int, Scalar]
Progress = Optional[Callable[[int, int], Optional[bool]]]

_OUTPUT_NAMES = {"embeddings": 1, "token_vectors": 2, "states": 4}


def parse_outputs(value: Any, function: str) -> int:
    """``outputs=`` as flags: a name (``"embeddings"``, ``"token_vectors"``, ``"states"``), an
    ``Outputs`` member, or a list of them; None means embeddings."""
    if value is None:
        return 1
    items = [value] if isinstance(value, (str, Outputs)) else value
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise invalid(function, f"outputs: expected a name or a list of names, got {type(value).__name__}")
    flags = 0
    for item in items:
        if isinstance(item, str) and item in _OUTPUT_NAMES:
            flags |= _OUTPUT_NAMES[item]
        elif isinstance(item, Outputs):
            flags |= int(item)
        else:
            raise invalid(function, f"outputs: {item!r} is not one of 'embeddings', 'token_vectors', 'states'")
    if not flags:
        raise invalid(function, "outputs: empty; name at least one of 'embeddings', 'token_vectors', 'states'")
    return flags


_SCALAR_NAMES = {"f32": 0, "f16": 1, "bf16": 2, "i8": 3, "b1": 4}


def _options(function: str, outputs: Any, scalar: Any, dims: Any, progress: Any, stats: Any, arena: Any):
    """Checks the options of an encode verb and answers (output flags, scalar number, dims). The
    defaults take the shortest path: this runs on every call."""
    flags = 1 if outputs is None else parse_outputs(outputs, function)
    kind = _SCALAR_NAMES.get(scalar) if type(scalar) is str else None
    if kind is None:
        kind = int(parse_enum(Scalar, scalar, function, "scalar"))
    dimensions = 0 if dims is None else _inputs.non_negative(dims, function, "dims")
    if progress is not None or stats is not False or arena is not None:
        _check_common(function, progress, stats, arena)
    return flags, kind, dimensions


def _check_common(function: str, progress: Any, stats: Any, arena: Any) -> None:
    """Checks the options every verb shares: progress, stats and arena."""
    if progress is not None and not callable(progress):
        raise invalid(function, f"progress: expected a callable (completed, total) -> bool, got {type(progress).__name__}")
    if stats is not False and stats is not True:
        raise invalid(function, f"stats: expected True or False, got {type(stats).__name__}")
    if arena is not None and not isinstance(arena, Arena):
        raise invalid(function, f"arena: expected a uform.Arena or None, got {type(arena).__name__}")


_TWO = c_size_t * 2

# The embeddings' (data, rows, columns, stride_bytes, scalar) inside a text request, as raw bytes.
_EMBEDDINGS_AT = S.TextEncode.encoded.offset + S.Encoded.embeddings.offset
_PLACEMENT_BYTES = S.Matrix.scalar.offset + sizeof(c_int)
_ENCODED_AT = S.TextEncode.encoded.offset
_TEXT_BYTES = 256  # a slot's own text buffer; longer texts are pointed at in place
_TEXT_BUFFER = c_char * _TEXT_BYTES


class _TextSlot:
    """A batch-1 text request an executor keeps for reuse, with an arena of its own (a new one,
    never one a large call grew: see ``Executor._new_arena``).

    A fresh request costs more than the rest of a default ``text_encode(str)`` (the struct's
    constructor, cold memory for the library to write), so each executor keeps a free list
    of these (``Executor._slots``; ``list.pop`` and ``append`` are atomic, so every call holds its
    own slot, also from several threads). What never changes is filled once: executor, arena, the
    tape's offsets and count, the outputs; a call fills the model, the text and its length (and a
    deferred one the completion, put back when ``_hand_back`` returns the slot). An ``Arena`` keeps
    slots of its own for batch-1 views into it (``Arena._slots``), whose executor a call fills too.

    The text is copied into the slot's own buffer (``text``, ``_TEXT_BYTES``; a memoryview slice
    assignment costs a quarter of pointing the tape at the ``bytes`` and back); a longer text is
    pointed at for the call and the tape put back on the buffer after (``_fill``, ``_unput``).

    ``placement`` reads the embeddings' (data, rows, columns, stride, scalar) as one bytes object;
    ``view`` is a NumPy view of the rows where they lay last time (``last``). The arena rewinds for
    every call, so a steady loop finds them there again and the result is one ``view.copy()``. The
    view is read only right after a call wrote exactly there, so it never reads freed memory.
    """

    __slots__ = ("request", "tape", "offsets", "buffer", "text", "address", "outcome", "arena", "placement", "last",
                 "view", "window")

    def __init__(self, executor: Any, arena: int) -> None:
        request = self.request = S.TextEncode()
        self.offsets = _TWO(0, 0)
        self.buffer = _TEXT_BUFFER()
        self.text = memoryview(self.buffer).cast("B")
        self.tape = tape = request.texts  # a view of the request's own tape field
        tape.data, tape.offsets, tape.count = addressof(self.buffer), addressof(self.offsets), 1
        request.executor, request.arena, request.outputs = executor._handle, arena, 1
        self.address, self.outcome, self.arena = addressof(request), addressof(request.outcome), arena
        self.placement = memoryview((c_char * _PLACEMENT_BYTES).from_buffer(request, _EMBEDDINGS_AT))
        self.last, self.view, self.window = b"", None, None

    def locate(self) -> Any:
        """The writable view of the embeddings a call just wrote, rebuilt (with ``window``, what a
        caller's read-only view is made of) when they moved or changed shape."""
        placement = self.placement.tobytes()
        if placement != self.last:
            view = self.view = rows_view(placement_of(self.request.encoded.embeddings))
            base = view.base
            self.window = (type(base), addressof(base), view.shape, view.dtype, view.strides) if base is not None else None
            self.last = placement
        return self.view


def _fill(slot: _TextSlot, data: bytes) -> int:
    """Puts one text on the slot's tape and answers its length: copied into the slot's buffer when
    it fits, else pointed at in place for one call (``_unput`` after, when the length is over
    ``_TEXT_BYTES``; the request keeps the text alive while the call runs)."""
    size = len(data)
    if size <= _TEXT_BYTES:
        slot.text[:size] = data
    else:
        slot.tape.data = data
    slot.offsets[1] = size
    return size


def _unput(slot: _TextSlot) -> None:
    slot.tape.data = addressof(slot.buffer)  # the long text goes; the buffer is the tape again


def _hand_back(slot: _TextSlot, executor: Any) -> None:
    """Returns a slot of the executor's after a call (its arena is freed if the executor closed)."""
    if slot.offsets[1] > _TEXT_BYTES:
        _unput(slot)
    slot.request.completion = BLOCKING
    if executor._closed:
        lib.uform_arena_free(slot.arena)
    else:
        executor._slots.append(slot)


class _TextDeferred(Deferred):
    """The Deferred of a default batch-1 text submitted on a slot (``_one_text_deferred``). Its
    ``_settle`` builds the result and hands the slot back itself: no closure per call, no
    ``finish`` and ``_hand_back`` frames (the base class's contract otherwise holds: the first
    waiter to take the lock settles, once, and the slot goes back only after ``_status`` is set)."""

    __slots__ = ("_slot", "_executor", "_busy")

    def __init__(self, slot: _TextSlot, model: Any, executor: Any) -> None:
        self._outcome, self._finish, self._keep, self._lock = slot.outcome, None, model, _Lock()
        self._settled, self._status, self._result, self._error = False, None, None, None
        self._slot, self._executor, self._busy = slot, executor, model._busy

    def _settle(self) -> None:
        status = lib.uform_outcome_wait(self._outcome) if self._status is None else 0
        with self._lock:
            if self._settled:
                return
            self._status = _STATUSES[status] if status in _STATUSES else Status(status)
            slot = self._slot
            try:
                request = slot.request
                if request.outcome.status != _OK:
                    raise from_outcome(request.outcome)
                placement = slot.placement.tobytes()
                view = slot.view if placement == slot.last else slot.locate()
                self._result = Encoded(view.copy(), None, None, None, None)
            except BaseException as error:
                self._error = error
            finally:
                self._busy.discard(slot)
                _hand_back(slot, self._executor)
            self._settled = True
            self._keep = self._slot = self._executor = self._busy = None


def _tape(items: _inputs.Items) -> S.Tape:
    return S.Tape(items.data, items.offsets, items.count)


class Verbs(Generic[E, C]):
    """The encode verbs and ``text_choose``. Common keyword arguments:

    - ``outputs``: ``"embeddings"`` (default), ``"token_vectors"``, ``"states"`` or a list of them;
    - ``scalar``: ``"f32"`` (default), ``"f16"``, ``"bf16"``, ``"i8"`` or ``"b1"`` for embeddings and
      token vectors (states are always float32);
    - ``dims``: a Matryoshka prefix of the embedding (renormalised); None or 0 keeps all of it;
    - ``progress``: ``callable(completed, total)``; answer ``False`` or raise ``uform.Cancelled`` to
      cancel (the call then raises ``Cancelled``); anything else it raises is re-raised here;
    - ``stats``: ``True`` to fill ``.stats``;
    - ``arena``: a ``uform.Arena`` to answer zero-copy views into instead of owned arrays.
    """

    _model: Any
    _executor: Any
    _completion: int

    def text_encode(
        self,
        texts: Union[str, bytes, Iterable[Union[str, bytes]]],
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes texts (``str`` as UTF-8, ``bytes`` as they are; one or a list). Bytes are the
        model's tokens; a text longer than the model's ``text_bytes`` keeps its first bytes."""
        if (type(texts) is str and outputs is None and dims is None and progress is None and stats is False
                and type(scalar) is str and scalar == "f32"):
            # One text with the defaults: the most frequent call, given the shortest path.
            try:
                data = texts.encode()
            except UnicodeEncodeError:
                data = None  # the general path below names the problem
            if data is not None:
                if self._completion == BLOCKING:
                    if arena is None:
                        return self._one_text(data)
                    if type(arena) is Arena:
                        return self._one_text_view(data, arena)
                elif arena is None:
                    return self._one_text_deferred(data)
        options = _options("text_encode", outputs, scalar, dims, progress, stats, arena)
        items = _inputs.texts(texts, "text_encode")
        return self._call(S.TextEncode, lib.uform_text_encode, (_tape(items),), items.keep, "text_encode", options,
                          progress, stats, arena)

    def image_encode(
        self,
        images: Any,
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes image files (JPEG, PNG, WebP; GIF, BMP … with FFmpeg): paths (``str`` or
        ``os.PathLike``, read here) or the files' bytes, one or a list."""
        options = _options("image_encode", outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(images, "image_encode", "images")
        return self._call(S.ImageEncode, lib.uform_image_encode, (_tape(items),), items.keep, "image_encode", options,
                          progress, stats, arena)

    def image_encode_pixels(
        self,
        pixels: Any,
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes RGB8 images: a C-contiguous ``uint8`` array ``[h, w, 3]`` or ``[n, h, w, 3]``
        (read in place, no copy), or a list of ``[h, w, 3]`` arrays of any sizes."""
        function = "image_encode_pixels"
        options = _options(function, outputs, scalar, dims, progress, stats, arena)
        items, heights, widths = _inputs.pixels(pixels, function)
        inputs = (_tape(items), addressof(heights), addressof(widths))
        return self._call(S.ImageEncodePixels, lib.uform_image_encode_pixels, inputs, (items.keep, heights, widths),
                          function, options, progress, stats, arena)

    def video_encode(
        self,
        videos: Any,
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes video files (MP4, WebM, MKV … through FFmpeg): paths or bytes, one or a list.
        Raises ``Unsupported`` in a build without FFmpeg."""
        options = _options("video_encode", outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(videos, "video_encode", "videos")
        return self._call(S.VideoEncode, lib.uform_video_encode, (_tape(items),), items.keep, "video_encode", options,
                          progress, stats, arena)

    def audio_encode(
        self,
        recordings: Any,
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes audio files (WAV; FLAC, Ogg, MP3, AAC … with FFmpeg): paths or bytes, one or a
        list; mixed to mono, resampled to the model's rate, cropped or padded to its seconds."""
        options = _options("audio_encode", outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(recordings, "audio_encode", "recordings")
        return self._call(S.AudioEncode, lib.uform_audio_encode, (_tape(items),), items.keep, "audio_encode", options,
                          progress, stats, arena)

    def audio_encode_samples(
        self,
        samples: Any,
        rate: int,
        *,
        outputs: OutputsArgument = None,
        scalar: ScalarArgument = "f32",
        dims: Optional[int] = None,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> E:
        """Encodes mono float32 PCM at ``rate`` Hz (any rate; resampled like files): a C-contiguous
        ``float32`` array ``[samples]`` or ``[n, samples]`` (read in place), or a list of 1-D arrays."""
        function = "audio_encode_samples"
        options = _options(function, outputs, scalar, dims, progress, stats, arena)
        sample_rate = _inputs.non_negative(rate, function, "rate")
        if sample_rate == 0:
            raise invalid(function, "rate = 0: the sample rate must be positive")
        items = _inputs.samples(samples, function)
        return self._call(S.AudioEncodeSamples, lib.uform_audio_encode_samples, (_tape(items), sample_rate), items.keep,
                          function, options, progress, stats, arena)

    def text_choose(
        self,
        texts: Union[str, bytes, Iterable[Union[str, bytes]]],
        choices: Any,
        groups: Optional[Any] = None,
        *,
        progress: Progress = None,
        stats: bool = False,
        arena: Any = None,
    ) -> C:
        """Constrained next-byte choice: for each text (a prefix), the probabilities of its legal
        next bytes. ``choices`` has one entry per text — ``bytes``, a ``str`` (its UTF-8 bytes) or a
        list of byte values — of distinct bytes; ``groups`` optionally gives each text's temperature
        group (default 0). ``.probabilities[i]`` lists text ``i``'s probabilities in its choices' order."""
        function = "text_choose"
        _check_common(function, progress, stats, arena)
        text_items = _inputs.texts(texts, function)
        choice_items = _inputs.choices(choices, text_items.count, function)
        group_array = _inputs.groups(groups, text_items.count, function)
        inputs = (_tape(text_items), _tape(choice_items), addressof(group_array) if group_array is not None else None)
        keep = (text_items.keep, choice_items.keep, group_array)
        return self._call(S.TextChoose, lib.uform_text_choose, inputs, keep, function, None, progress, stats, arena)

    def media_prepare(self, files: Any, modality: str) -> Any:
        """Decodes image, video or audio files (paths or bytes) into model-ready rows ahead of an
        encode, on this receiver's executor (blocking receivers only): a ``uform.Prepared`` whose
        ``errors`` say per item why it could not be decoded (the call itself does not fail)."""
        from .prepared import media_prepare

        return media_prepare(self, files, modality)

    def prepared_encode(self, prepared: Any, *, outputs: OutputsArgument = None, scalar: ScalarArgument = "f32",
                        dims: Optional[int] = None) -> Any:
        """Encodes a ``uform.Prepared`` (its items that decoded, in order), as the modality's
        encode verb would the same files; owned results (blocking receivers only)."""
        from .prepared import prepared_encode

        return prepared_encode(self, prepared, outputs, scalar, dims)

    def _one_text(self, data: bytes) -> Encoded:
        """One text, default options, blocking: the binding's most frequent call, on a request the
        executor keeps for reuse (``_TextSlot``). A result with owned arrays keeps no reference to
        the request, and no Python code runs while the call holds it."""
        handle = self._model._handle
        if handle is None:
            raise invalid("text_encode", "the model is closed")
        executor = self._executor
        slots = executor._slots
        # A closed executor has no slots left, and making one raises "the executor is closed".
        slot = slots.pop() if slots else _TextSlot(executor, executor._new_arena("text_encode"))
        size = len(data)
        try:
            _fill(slot, data)
            request = slot.request
            request.model = handle
            if lib.uform_text_encode(slot.address) != 0:
                raise from_outcome(request.outcome)
            placement = slot.placement.tobytes()
            view = slot.view if placement == slot.last else slot.locate()
            return Encoded(view.copy(), None, None, None, None)
        finally:
            if size > _TEXT_BYTES:
                _unput(slot)
            if executor._closed:
                lib.uform_arena_free(slot.arena)
            else:
                slots.append(slot)

    def _one_text_deferred(self, data: bytes) -> Any:
        """One text, default options, deferred, on a request of the executor's (``_TextSlot``): the
        Deferred holds it until its first ``wait()`` has built the result, which hands it back.
        Until then the slot is in the model's ``_busy`` set, which ``Model.close()`` waits for (a
        plain set of slots costs less than registering the Deferred in the ``_pending`` WeakSet)."""
        handle = self._model._handle
        if handle is None:
            raise invalid("text_encode", "the model is closed")
        model, executor = self._model, self._executor
        slots = executor._slots
        slot = slots.pop() if slots else _TextSlot(executor, executor._new_arena("text_encode"))
        request, busy = slot.request, model._busy
        try:
            _fill(slot, data)
            request.model, request.completion = handle, DEFERRED
            busy.add(slot)
            status = lib.uform_text_encode(slot.address)
            if status != _OK and status != _DEFERRED:
                raise from_outcome(request.outcome)  # refused (a full queue: Contended)
        except BaseException:
            busy.discard(slot)
            _hand_back(slot, executor)
            raise
        return _TextDeferred(slot, model, executor)

    def _one_text_view(self, data: bytes, arena: Arena) -> Encoded:
        """One text, default options, blocking, answering a zero-copy view into ``arena``. The
        request is one the arena keeps for reuse (``Arena._slots``): the arena's next call, which
        makes this result stale, is the next one to use it. ``_raw`` is a copy of the C views."""
        function = "text_encode"
        handle = self._model._handle
        if handle is None:
            raise invalid(function, "the model is closed")
        executor = self._executor
        if executor._closed:
            raise invalid(function, "the executor is closed")
        arena_handle = arena._handle
        if arena_handle is None:
            raise invalid(function, "arena: the arena is closed")
        slots = arena._slots
        slot = slots.pop() if slots else _TextSlot(executor, arena_handle)
        size = len(data)
        try:
            _fill(slot, data)
            request = slot.request
            request.model, request.executor, request.arena = handle, executor._handle, arena_handle
            if lib.uform_text_encode(slot.address) != 0:
                raise from_outcome(request.outcome)
            raw = S.Encoded.from_buffer_copy(request, _ENCODED_AT)
            if slot.placement.tobytes() != slot.last:
                slot.locate()
            window = slot.window
            if window is None:  # no rows
                view = rows_view(placement_of(raw.embeddings), arena)
            else:
                buffer_type, address, shape, dtype, strides = window
                view = frozen_view(buffer_type.from_address(address), arena, shape, dtype, strides)
            # The generation the library stamped on the view: the arena's, until its next call.
            return Encoded(view, None, None, None, _Guard(arena, raw.embeddings.generation), raw)
        finally:
            if size > _TEXT_BYTES:
                _unput(slot)
            slots.append(slot)

    def _call(self, request_type, verb, inputs, keep, function: str, options, progress, stats, arena) -> Any:
        """Makes the request, runs the verb and answers the result (or a Deferred of it).

        ``inputs`` are the verb's own fields (after model, executor, completion); ``options`` is
        (output flags, scalar, dims), None for text_choose. A blocking call with default options
        takes a straight path: it is the binding's whole per-call overhead."""
        model, executor = self._model, self._executor
        handle = model._handle
        if handle is None:
            raise invalid(function, "the model is closed")
        if executor._closed:
            raise invalid(function, "the executor is closed")
        if arena is None:
            pool = executor._arenas
            arena_handle = pool.pop() if pool else executor._acquire_arena(function)
        else:
            arena_handle = arena._use(function)
        completion = self._completion
        if options is None:  # text_choose
            flags = 0
            request = request_type(handle, executor._handle, completion, *inputs, arena_handle)
        else:
            flags, kind, dims = options
            request = request_type(handle, executor._handle, completion, *inputs, flags, arena_handle)
            if kind or dims:
                config = request.config
                config.outputs_scalar, config.dimensions = kind, dims
        if completion == BLOCKING and progress is None and not stats:
            if arena is not None:  # zero-copy views into the caller's arena
                if verb(addressof(request)) != 0:
                    raise from_outcome(request.outcome)
                return _collect(request, flags, None, arena, lib.uform_arena_generation(arena_handle))
            try:
                if verb(addressof(request)) != 0:
                    raise from_outcome(request.outcome)
                if flags == 1:  # embeddings only, owned: the common case, without detours
                    return Encoded(owned_rows(request.encoded.embeddings), None, None, None, None)
                return _collect(request, flags, None, None, 0)
            finally:
                if executor._closed:
                    lib.uform_arena_free(arena_handle)
                else:
                    executor._arenas.append(arena_handle)
        raw_stats = relay = None
        if stats:
            raw_stats = S.EncodeStats()
            request.config.stats = addressof(raw_stats)
        if progress is not None:
            relay = Relay(progress)
            request.config.progress = S.Progress(trampoline, relay.key, 0)

        def finish():
            try:
                if relay is not None:
                    relay.reraise()
                if request.outcome.status != _OK:
                    raise from_outcome(request.outcome)
                generation = lib.uform_arena_generation(arena_handle) if arena is not None else 0
                return _collect(request, flags, raw_stats, arena, generation)
            finally:
                if relay is not None:
                    relay.close()
                if arena is None:
                    executor._release_arena(arena_handle)

        try:
            status = verb(addressof(request))
        except BaseException:
            finish_quietly(relay, arena, executor, arena_handle)
            raise
        if completion == BLOCKING or status not in (_OK, _DEFERRED):
            return finish()
        deferred = Deferred(request, finish, (keep, raw_stats, relay, arena, model, executor))
        model._pending.add(deferred)
        return deferred


def finish_quietly(relay, view, executor, arena_handle) -> None:
    """Releases what a call took when the call itself could not be made."""
    if relay is not None:
        relay.close()
    if view is None:
        executor._release_arena(arena_handle)


def _collect(request: Any, flags: int, raw_stats, view, generation: int) -> Any:
    """The result of a final request: an ``Encoded`` for the encode verbs, a ``Chosen`` for text_choose."""
    if flags:
        return encoded(request.encoded, flags, raw_stats, view, generation)
    return chosen(request.probabilities, raw_stats, view, generation)


