"""Models and their receivers: where a verb runs is chosen by what it is called on.

- ``model.text_encode(...)`` runs on the calling thread;
- ``model.on(executor).text_encode(...)`` blocks while it runs on the executor's threads;
- ``model.deferred(executor).text_encode(...)`` answers a ``Deferred`` at once.
"""

import os
import weakref
from ctypes import POINTER, byref, c_size_t, c_uint32, c_void_p

import numpy as np
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple, Union

from . import _structs as S
from ._closing import Closing
from ._inputs import path_bytes
from ._library import lib
from ._verbs import BLOCKING, DEFERRED, Verbs
from .deferred import Deferred
from .enums import Compute, CpuClass, Modality, Residency, parse_cpu_class, parse_enum
from .errors import from_outcome, invalid
from .executor import Executor, calling_thread
from .results import Chosen, Encoded

PathArgument = Union[str, bytes, "os.PathLike[str]"]


@dataclass(frozen=True)
class Description:
    """Everything ``Model.describe()`` answers (``uform_model_description_t``)."""

    size: str
    hidden: int
    depth: int
    heads: int
    mlp: int
    embedding: int
    matryoshka: Tuple[int, ...]
    temperature_groups: int
    modalities: Tuple[str, ...]
    text_bytes: int
    image_size: int
    image_patch: int
    video_size: int
    video_patch: int
    video_frames: int
    video_tubelet: int
    audio_rate: int
    audio_seconds: int
    audio_mels: int
    parameters: int
    weight_bytes: int
    residency: str
    cpu_class: CpuClass
    compute: str
    family: str = "uform4"
    tokenizer: str = ""
    text_tokens: int = 0
    towers: Dict[str, Dict[str, int]] = field(default_factory=dict)


def description_of(d: S.ModelDescription) -> Description:
    """A ``Description`` from the C struct."""
    return Description(
        size=d.size.decode("utf-8", errors="replace"),
        hidden=d.hidden,
        depth=d.depth,
        heads=d.heads,
        mlp=d.mlp,
        embedding=d.embedding,
        matryoshka=tuple(d.matryoshka[: min(d.matryoshka_count, 8)]),
        temperature_groups=d.temperature_groups,
        modalities=tuple(m.name.lower() for m in Modality if d.modalities & (1 << m)),
        text_bytes=d.text_bytes,
        image_size=d.image_size,
        image_patch=d.image_patch,
        video_size=d.video_size,
        video_patch=d.video_patch,
        video_frames=d.video_frames,
        video_tubelet=d.video_tubelet,
        audio_rate=d.audio_rate,
        audio_seconds=d.audio_seconds,
        audio_mels=d.audio_mels,
        parameters=d.parameters,
        weight_bytes=d.weight_bytes,
        residency=Residency(d.residency).name.lower(),
        cpu_class=CpuClass(d.cpu_class),
        compute=Compute(d.compute).name.lower(),
        family=d.family.decode("utf-8", errors="replace"),
        tokenizer=d.tokenizer.decode("utf-8", errors="replace"),
        text_tokens=d.text_tokens,
        towers={
            m.name.lower(): dict(hidden=t.hidden, depth=t.depth, heads=t.heads, mlp=t.mlp)
            for m in Modality
            for t in (d.towers[m],)
            if d.modalities & (1 << m)
        },
    )


def _executor_argument(executor: Optional[Executor], function: str) -> Executor:
    if executor is None:
        return calling_thread
    if not isinstance(executor, Executor):
        raise invalid(function, f"executor: expected a uform.Executor or None, got {type(executor).__name__}")
    return executor


class Model(Verbs[Encoded, Chosen], Closing):
    """A loaded perception model. Its own verbs run on the calling thread; ``on(executor)`` and
    ``deferred(executor)`` run them elsewhere. Immutable after load: any number of executors and
    Python threads may use one model at once.

    ``close()`` waits for the model's unfinished Deferred calls, then frees it (leaving a ``with``
    block does the same); verbs on a closed model raise ``InvalidArgument``.
    """

    def __init__(self) -> None:
        raise TypeError("use uform.Model.load_ram(executor, path)")

    @staticmethod
    def quantize(path: PathArgument, output: PathArgument) -> None:
        """Writes a quantized copy of the checkpoint at ``path`` to ``output`` (uform.h's
        ``uform_model_quantize``): the trunk's matrices as I8 with per-channel F32 scales, the rest
        unchanged; loading it with ``compute="i8"`` gives the same outputs as quantizing at load.
        Raises ``IoError``, ``FormatError`` or ``InvalidArgument``."""
        function = "Model.quantize"
        source, target = path_bytes(path, function, "path"), path_bytes(output, function, "output")
        outcome = S.Outcome()
        if lib.uform_model_quantize(source, target, byref(outcome)) != 0:
            raise from_outcome(outcome)

    @classmethod
    def load_ram(
        cls,
        executor: Optional[Executor],
        path: PathArgument,
        compute: Union[str, int, Compute] = "f32",
        cpu_class: Union[None, str, int, CpuClass] = None,
    ) -> "Model":
        """Maps the checkpoint at ``path`` and prepares it on ``executor`` (None: the calling
        thread), with ``compute`` ``"f32"``, ``"bf16"`` or ``"i8"`` (int8 weights and activations
        in the trunk's products, docs/int8.md) and the kernels of ``cpu_class``
        (None: the executor's). Raises ``IoError`` (cannot open), ``FormatError`` (not a UForm
        checkpoint; the message names the tensor) or ``Unsupported``."""
        function = "Model.load_ram"
        runner = _executor_argument(executor, function)
        name = path_bytes(path, function, "path")
        options = S.RamOptions()
        options.compute = parse_enum(Compute, compute, function, "compute")
        options.cpu_class = parse_cpu_class(cpu_class, function)
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_model_load_ram(runner._use(function), name, byref(options), byref(handle), byref(outcome)) != 0:
            raise from_outcome(outcome)
        return cls._adopt(handle.value, os.fsdecode(name))

    @classmethod
    def _adopt(cls, handle: int, label: str) -> "Model":
        """A Model object owning a C model handle (from a load or a trainer's snapshot)."""
        model = object.__new__(cls)
        model._handle = handle
        model._executor = calling_thread
        model._completion = BLOCKING
        model._pending = weakref.WeakSet()
        model._busy = set()  # the _TextSlot of each deferred batch-1 text call not yet handed back
        model._path = label
        return model

    @property
    def _model(self) -> "Model":  # the receiver protocol of Verbs: a model is its own
        return self

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the model is closed")
        return self._handle

    def on(self, executor: Executor) -> "Receiver":
        """The verbs of this model, blocking while they run on ``executor``'s threads (the GIL is
        released meanwhile). A call that finds the executor busy raises ``Contended``."""
        if not isinstance(executor, Executor):
            raise invalid("Model.on", f"executor: expected a uform.Executor, got {type(executor).__name__}")
        return Receiver(self, executor)

    def deferred(self, executor: Executor) -> "DeferredReceiver":
        """The verbs of this model, each answering a ``Deferred`` as soon as the call is queued on
        ``executor``. Raises ``Contended`` when its queue (``deferred_limit``) is full."""
        if not isinstance(executor, Executor):
            raise invalid("Model.deferred", f"executor: expected a uform.Executor, got {type(executor).__name__}")
        return DeferredReceiver(self, executor)

    def describe(self) -> Description:
        """The config, sizes, modalities present, parameter count, residency and CPU class."""
        request = S.ModelDescribe()
        request.model = self._use("Model.describe")
        if lib.uform_model_describe(byref(request)) != 0:
            raise from_outcome(request.outcome)
        return description_of(request.description)

    def tokenize(self, text: Union[str, bytes]) -> "np.ndarray":
        """The token ids the text tower runs for ``text`` (uint32): [CLS] and the text's bytes for a
        UForm checkpoint, the folder's tokenizer's ids for a published one (``uform_text_tokenize``)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        count, outcome = c_size_t(), S.Outcome()
        if lib.uform_text_tokenize(self._use("Model.tokenize"), data, len(data), None, 0, byref(count), byref(outcome)) != 0:
            raise from_outcome(outcome)
        ids = np.zeros(count.value, dtype=np.uint32)
        pointer = ids.ctypes.data_as(POINTER(c_uint32))
        if lib.uform_text_tokenize(self._use("Model.tokenize"), data, len(data), pointer, count.value, byref(count),
                                   byref(outcome)) != 0:
            raise from_outcome(outcome)
        return ids

    def tokens(self, modality: Union[str, int, Modality], data: Union[None, str, bytes, bytearray, memoryview] = None) -> int:
        """The positions the model's tower for ``modality`` runs for one item (``uform_model_tokens``):
        for a text (``str``, or UTF-8 bytes) as many as ``tokenize`` gives; for an image, video or
        recording the tower's class, register and patch rows, which do not depend on the item, so
        ``data`` may be left out. ``InvalidArgument`` for a modality the model has no tower for."""
        function = "Model.tokens"
        kind = parse_enum(Modality, modality, function, "modality")
        if data is None:
            payload = b""
        elif isinstance(data, str):
            payload = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            payload = bytes(data)
        else:
            raise invalid(function, f"data: expected str or bytes, got {type(data).__name__}")
        count, outcome = c_size_t(), S.Outcome()
        if lib.uform_model_tokens(self._use(function), int(kind), payload, len(payload), byref(count), byref(outcome)) != 0:
            raise from_outcome(outcome)
        return count.value

    def close(self) -> None:
        """Waits for this model's unfinished Deferred calls, then frees it. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        for deferred in list(self._pending):
            deferred._settle()
        for slot in list(self._busy):
            lib.uform_outcome_wait(slot.outcome)  # final: its Deferred builds the result from its arena later
        handle, self._handle = self._handle, None
        lib.uform_model_free(handle)


    def __repr__(self) -> str:
        state = "closed" if self._handle is None else repr(self._path)
        return f"Model({state})"


class Receiver(Verbs[Encoded, Chosen]):
    """``model.on(executor)``: the model's verbs, blocking while they run on ``executor``."""

    def __init__(self, model: Model, executor: Executor) -> None:
        self._model, self._executor, self._completion = model, executor, BLOCKING

    def __repr__(self) -> str:
        return f"Receiver({self._model!r} on {self._executor!r})"


class DeferredReceiver(Verbs[Deferred[Encoded], Deferred[Chosen]]):
    """``model.deferred(executor)``: the model's verbs, each answering a ``Deferred``."""

    def __init__(self, model: Model, executor: Executor) -> None:
        self._model, self._executor, self._completion = model, executor, DEFERRED

    def __repr__(self) -> str:
        return f"DeferredReceiver({self._model!r} on {self._executor!r})"
