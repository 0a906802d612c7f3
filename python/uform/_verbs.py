"""The verbs every receiver offers (``Model``, ``model.on(executor)``, ``model.deferred(executor)``)
and the one path they all take into C: check the arguments, fill the request, call, collect."""

from ctypes import addressof
from typing import Any, Callable, Generic, Iterable, Optional, TypeVar, Union

from . import _inputs, _structs as S
from ._library import lib
from ._progress import Relay, trampoline
from .arena import Arena
from .deferred import Deferred
from .enums import Outputs, Scalar, parse_enum
from .errors import Status, from_outcome, invalid
from .results import Chosen, Encoded, chosen, encoded

E = TypeVar("E")  # what an encode verb answers: Encoded, or Deferred[Encoded]
C = TypeVar("C")  # what text_choose answers: Chosen, or Deferred[Chosen]

BLOCKING, DEFERRED = 0, 1

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


class _Options:
    """The options every verb shares, checked before any resource is taken."""

    __slots__ = ("flags", "scalar", "dims", "progress", "stats", "arena")

    def __init__(self, function, outputs, scalar, dims, progress, stats, arena, encode=True):
        self.flags = parse_outputs(outputs, function) if encode else 0
        self.scalar = parse_enum(Scalar, scalar, function, "scalar") if encode else Scalar.F32
        self.dims = 0 if dims is None else _inputs.non_negative(dims, function, "dims")
        if progress is not None and not callable(progress):
            raise invalid(function, f"progress: expected a callable (completed, total) -> bool, got {type(progress).__name__}")
        self.progress = progress
        if not isinstance(stats, bool):
            raise invalid(function, f"stats: expected True or False, got {type(stats).__name__}")
        self.stats = stats
        if arena is not None and not isinstance(arena, Arena):
            raise invalid(function, f"arena: expected a uform.Arena or None, got {type(arena).__name__}")
        self.arena = arena


def _tape(field: S.Tape, items: _inputs.Items) -> None:
    field.data, field.offsets, field.count = items.data, items.offsets, items.count


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
        function = "text_encode"
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        items = _inputs.texts(texts, function)
        request = S.TextEncode()
        _tape(request.texts, items)
        return self._call(lib.uform_text_encode, request, items.keep, function, options, _encoded)

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
        function = "image_encode"
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(images, function, "images")
        request = S.ImageEncode()
        _tape(request.images, items)
        return self._call(lib.uform_image_encode, request, items.keep, function, options, _encoded)

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
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        items, heights, widths = _inputs.pixels(pixels, function)
        request = S.ImageEncodePixels()
        _tape(request.pixels, items)
        request.heights, request.widths = addressof(heights), addressof(widths)
        keep = (items.keep, heights, widths)
        return self._call(lib.uform_image_encode_pixels, request, keep, function, options, _encoded)

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
        function = "video_encode"
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(videos, function, "videos")
        request = S.VideoEncode()
        _tape(request.videos, items)
        return self._call(lib.uform_video_encode, request, items.keep, function, options, _encoded)

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
        function = "audio_encode"
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        items = _inputs.files(recordings, function, "recordings")
        request = S.AudioEncode()
        _tape(request.recordings, items)
        return self._call(lib.uform_audio_encode, request, items.keep, function, options, _encoded)

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
        options = _Options(function, outputs, scalar, dims, progress, stats, arena)
        sample_rate = _inputs.non_negative(rate, function, "rate")
        if sample_rate == 0:
            raise invalid(function, "rate = 0: the sample rate must be positive")
        items = _inputs.samples(samples, function)
        request = S.AudioEncodeSamples()
        _tape(request.samples, items)
        request.sample_rate = sample_rate
        return self._call(lib.uform_audio_encode_samples, request, items.keep, function, options, _encoded)

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
        options = _Options(function, None, "f32", None, progress, stats, arena, encode=False)
        text_items = _inputs.texts(texts, function)
        choice_items = _inputs.choices(choices, text_items.count, function)
        group_array = _inputs.groups(groups, text_items.count, function)
        request = S.TextChoose()
        _tape(request.texts, text_items)
        _tape(request.choices, choice_items)
        request.groups = addressof(group_array) if group_array is not None else None
        keep = (text_items.keep, choice_items.keep, group_array)
        return self._call(lib.uform_text_choose, request, keep, function, options, _chosen)

    def _call(self, verb, request, keep, function: str, options: _Options, collect) -> Any:
        """Fills the shared fields, runs the verb and answers the result (or a Deferred of it)."""
        model, executor = self._model, self._executor
        request.model = model._use(function)
        request.executor = executor._use(function)
        request.completion = self._completion
        config = request.config
        if options.flags:  # an encode verb (text_choose has no outputs, scalar or dims)
            request.outputs = options.flags
            config.outputs_scalar = options.scalar
            config.dimensions = options.dims
        raw_stats = None
        if options.stats:
            raw_stats = S.EncodeStats()
            config.stats = addressof(raw_stats)
        view = options.arena
        arena_handle = view._use(function) if view is not None else executor._acquire_arena(function)
        request.arena = arena_handle
        relay = None
        if options.progress is not None:
            relay = Relay(options.progress)
            config.progress.callback = trampoline
            config.progress.state = relay.key

        def finish():
            try:
                if relay is not None:
                    relay.reraise()
                if request.outcome.status != Status.OK:
                    raise from_outcome(request.outcome)
                generation = lib.uform_arena_generation(arena_handle) if view is not None else 0
                return collect(request, options.flags, raw_stats, view, generation)
            finally:
                if relay is not None:
                    relay.close()
                if view is None:
                    executor._release_arena(arena_handle)

        try:
            status = verb(addressof(request))
        except BaseException:
            finish_quietly(relay, view, executor, arena_handle)
            raise
        if self._completion == BLOCKING or status not in (Status.OK, Status.DEFERRED):
            return finish()
        deferred = Deferred(request, finish, (keep, raw_stats, relay, view, model, executor))
        model._pending.add(deferred)
        return deferred


def finish_quietly(relay, view, executor, arena_handle) -> None:
    """Releases what a call took when the call itself could not be made."""
    if relay is not None:
        relay.close()
    if view is None:
        executor._release_arena(arena_handle)


def _encoded(request: Any, flags: int, raw_stats, view, generation: int) -> Encoded:
    return encoded(request.encoded, flags, raw_stats, view, generation)


def _chosen(request: S.TextChoose, flags: int, raw_stats, view, generation: int) -> Chosen:
    return chosen(request.probabilities, raw_stats, view, generation)


