"""The trainer (docs/training.md): a model's F32 master weights, AdamW state and step scratch.

A trainer is made over one executor and every verb of it runs there, so it has only executor
receivers: ``trainer.on(executor).step(...)`` blocks, ``trainer.deferred(executor).step(...)``
answers a ``Deferred``; ``executor`` must be the trainer's own.

    trainer = uform.Trainer.init_ram(executor, seed=1, total_steps=1000)
    result = trainer.on(executor).step(
        ["a red square", "red.png"], ["text", "image"], relations=[(0, 1)])
    print(result.loss, result.grad_norm)
    trainer.on(executor).save("model.safetensors")      # uform.Model.load_ram loads it
"""

import os
import weakref
from ctypes import addressof, byref, c_void_p
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _batch, _inputs, _structs as S
from ._closing import Closing
from ._library import lib
from ._progress import Relay, trampoline
from ._verbs import _SCALAR_NAMES, _check_common
from .deferred import Deferred
from .enums import Compute, CpuClass, Modality, Scalar, parse_cpu_class, parse_enum
from .errors import Status, from_outcome, invalid
from .executor import Executor, calling_thread
from .mesh import Mesh
from .model import Description, Model, description_of
from .results import _Guard, _matrix

_INTEGER_FIELDS = (
    "hidden", "depth", "heads", "mlp", "embedding", "temperature_groups", "text_bytes", "image_size",
    "image_patch", "video_size", "video_patch", "video_frames", "video_tubelet", "audio_seconds", "audio_mels",
    "warmup_steps", "total_steps", "seed",
)
_FLOAT_FIELDS = (
    "learning_rate", "beta1", "beta2", "epsilon", "weight_decay", "clip_norm", "contrastive_weight", "choice_weight",
)
CONFIG_KEYS = ("size", "matryoshka", "modalities", "compute", "cpu_class", "resume") + _INTEGER_FIELDS + _FLOAT_FIELDS


@dataclass(frozen=True)
class TrainerDescription:
    """What ``Trainer.describe()`` answers: the model it trains, the steps so far and the resolved
    optimizer (``uform_trainer_description_t``)."""

    model: Description
    steps: int
    learning_rate: float
    beta1: float
    beta2: float
    epsilon: float
    weight_decay: float
    clip_norm: float
    warmup_steps: int
    total_steps: int
    contrastive_weight: float
    choice_weight: float
    seed: int


@dataclass(frozen=True)
class TrainerStats:
    """What a step measured (``uform_trainer_stats_t``), asked for with ``stats=True``."""

    items: int
    sequences: int
    tokens: int
    decode_seconds: float
    forward_seconds: float
    backward_seconds: float
    optimizer_seconds: float
    flops: float
    exchange_wait_seconds: float  # over a mesh: the step's wait for the gradients' all-reduce
    exchange_seconds: float       # over a mesh: the all-reduce's own time, overlapped or not
    chunks: int                   # the chunks the batch ran in (accumulate)


class StepResult:
    """What a step answers: the losses, the rate it used, the gradient norm before clipping, the
    step number, the temperatures' log-scales (``[G]`` float32) and the bag embeddings (``[bags,
    E]`` in the requested scalar), both from the weights before the update."""

    __slots__ = ("loss", "contrastive", "choice", "learning_rate", "grad_norm", "step", "stats",
                 "_temperatures", "_bag_embeddings", "_guard")

    def __init__(self, request: S.TrainerStep, stats: Optional[TrainerStats], arena, generation: int):
        self.loss: float = request.loss
        self.contrastive: float = request.contrastive
        self.choice: float = request.choice
        self.learning_rate: float = request.learning_rate
        self.grad_norm: float = request.grad_norm
        self.step: int = request.step
        self.stats: Optional[TrainerStats] = stats
        view = arena is not None
        self._guard = _Guard(arena, generation) if view else None
        self._temperatures = _matrix(request.temperatures, view, arena).reshape(-1)
        self._bag_embeddings = _matrix(request.bag_embeddings, view, arena)

    @property
    def temperatures(self) -> np.ndarray:
        """``[G]`` float32: the temperature groups' log-scales the losses used."""
        if self._guard is not None:
            self._guard.check("StepResult.temperatures")
        return self._temperatures

    @property
    def bag_embeddings(self) -> np.ndarray:
        """``[bags, E]``: the bags' embeddings before the update (the requested scalar)."""
        if self._guard is not None:
            self._guard.check("StepResult.bag_embeddings")
        return self._bag_embeddings

    def __repr__(self) -> str:
        return f"StepResult(step {self.step}, loss {self.loss:.6g}, grad_norm {self.grad_norm:.6g})"


def _config(values: dict, function: str) -> Tuple[S.TrainerConfig, tuple]:
    """``uform_trainer_config_t`` from keyword arguments named like its fields."""
    config, keep = S.TrainerConfig(), []
    for key, value in values.items():
        if key not in CONFIG_KEYS:
            raise invalid(function, f"{key}: not a trainer setting (settings: {', '.join(sorted(CONFIG_KEYS))})")
        if value is None:
            continue
        if key in _INTEGER_FIELDS:
            setattr(config, key, _inputs.non_negative(value, function, key))
        elif key in _FLOAT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise invalid(function, f"{key}: expected a number, got {type(value).__name__}")
            setattr(config, key, float(value))
        elif key == "size":
            if not isinstance(value, str) or not value.isascii() or len(value) > 15 or "\0" in value:
                raise invalid(function, f"size = {value!r}: expected 'tiny', 'small' or 'base'")
            config.size = value.encode("ascii")
        elif key == "matryoshka":
            if not isinstance(value, (list, tuple)) or len(value) > 8:
                raise invalid(function, "matryoshka: expected a list of at most 8 prefixes")
            for i, prefix in enumerate(value):
                config.matryoshka[i] = _inputs.non_negative(prefix, function, f"matryoshka[{i}]")
            config.matryoshka_count = len(value)
        elif key == "modalities":
            if not isinstance(value, (list, tuple)):
                raise invalid(function, f"modalities: expected a list of names, got {type(value).__name__}")
            mask = 0
            for i, name in enumerate(value):
                mask |= 1 << int(parse_enum(Modality, name, function, f"modalities[{i}]"))
            config.modalities = mask
        elif key == "compute":
            config.compute = parse_enum(Compute, value, function, "compute")
        elif key == "cpu_class":
            config.cpu_class = parse_cpu_class(value, function)
        elif key == "resume":
            path = _inputs.path_bytes(value, function, "resume")
            config.resume = path
            keep.append(path)
    return config, tuple(keep)


class Trainer(Closing):
    """A trainer over one executor. Make it with ``Trainer.init_ram``; run its verbs through
    ``on(executor)`` or ``deferred(executor)``; ``close()`` waits for its Deferred calls and frees it."""

    def __init__(self) -> None:
        raise TypeError("use uform.Trainer.init_ram(executor, **config)")

    @classmethod
    def init_ram(cls, executor: Optional[Executor], **config: Any) -> "Trainer":
        """A trainer with host memory, made over ``executor`` (None: the calling thread). Settings
        are ``uform_trainer_config_t``'s fields by name (zero or absent: the default): size,
        hidden … audio_mels, matryoshka (a list), modalities (a list of names), learning_rate,
        beta1, beta2, epsilon, weight_decay, clip_norm, warmup_steps, total_steps,
        contrastive_weight, choice_weight, seed, compute ("f32" or "bf16"), cpu_class, resume (a
        checkpoint path), mesh (a ``uform.Mesh``: a data-parallel run with its other members). Raises ``InvalidArgument`` naming a bad setting, ``ConfigMismatch`` when
        ``resume`` disagrees with one, ``IoError`` or ``FormatError`` for the resume checkpoint."""
        function = "Trainer.init_ram"
        if executor is not None and not isinstance(executor, Executor):
            raise invalid(function, f"executor: expected a uform.Executor or None, got {type(executor).__name__}")
        runner = calling_thread if executor is None else executor
        mesh = config.pop("mesh", None)
        if mesh is not None and not isinstance(mesh, Mesh):
            raise invalid(function, f"mesh: expected a uform.Mesh or None, got {type(mesh).__name__}")
        raw, keep = _config(config, function)
        if mesh is not None:
            raw.mesh = mesh._use(function)
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_trainer_init_ram(runner._use(function), addressof(raw), byref(handle), byref(outcome)) != 0:
            raise from_outcome(outcome)
        del keep
        trainer = object.__new__(cls)
        trainer._handle, trainer._executor, trainer._pending = handle.value, runner, weakref.WeakSet()
        trainer._mesh = mesh  # a mesh outlives the trainers made over it
        if mesh is not None:
            mesh._trainers.add(trainer)
        return trainer

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the trainer is closed")
        return self._handle

    @property
    def executor(self) -> Executor:
        """The executor the trainer was made over; its verbs run there."""
        return self._executor

    def _receiver(self, executor: Any, function: str) -> None:
        if not isinstance(executor, Executor):
            raise invalid(function, f"executor: expected a uform.Executor, got {type(executor).__name__}")
        same = executor is self._executor or (executor.is_calling_thread and self._executor.is_calling_thread)
        if not same:
            raise invalid(function, "executor: a trainer runs on the executor it was made over (Trainer.executor)")

    def on(self, executor: Executor) -> "TrainerReceiver":
        """The trainer's verbs, blocking while they run on ``executor`` (the trainer's own)."""
        self._receiver(executor, "Trainer.on")
        return TrainerReceiver(self, 0)

    def deferred(self, executor: Executor) -> "TrainerReceiver":
        """The trainer's verbs, each answering a ``Deferred`` once queued on ``executor`` (the trainer's own)."""
        self._receiver(executor, "Trainer.deferred")
        return TrainerReceiver(self, 1)

    def describe(self) -> TrainerDescription:
        """The model it trains, the steps taken so far and the resolved optimizer. Call it between steps."""
        raw = S.TrainerDescription()
        status = lib.uform_trainer_describe(self._use("Trainer.describe"), addressof(raw))
        if status != 0:
            raise invalid("Trainer.describe", f"uform_trainer_describe answered {status}")
        return TrainerDescription(
            description_of(raw.model), raw.steps, raw.learning_rate, raw.beta1, raw.beta2, raw.epsilon,
            raw.weight_decay, raw.clip_norm, raw.warmup_steps, raw.total_steps, raw.contrastive_weight,
            raw.choice_weight, raw.seed,
        )

    @property
    def user_metadata(self) -> Optional[str]:
        """What an earlier ``save(user_metadata=...)`` stored in the checkpoint this trainer resumed from."""
        raw = lib.uform_trainer_user_metadata(self._use("Trainer.user_metadata"))
        return None if raw is None else raw.decode("utf-8", errors="replace")

    def snapshot(self, compute: Union[str, int, Compute] = "f32", cpu_class: Union[None, str, int, CpuClass] = None) -> Model:
        """An inference ``Model`` of the current weights, as saving and loading would give, without
        the disk. Blocks on the trainer's executor (``Contended`` while a step runs there)."""
        function = "Trainer.snapshot"
        options = S.RamOptions()
        options.compute = parse_enum(Compute, compute, function, "compute")
        options.cpu_class = parse_cpu_class(cpu_class, function)
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_trainer_snapshot(self._use(function), addressof(options), byref(handle), byref(outcome)) != 0:
            raise from_outcome(outcome)
        return Model._adopt(handle.value, "snapshot")

    def fit(self, dataset: Any, steps: int, batch: int = 32, **options: Any) -> Any:
        """Trains on ``dataset`` (a ``uform.Dataset``) for ``steps`` steps of ``batch`` samples,
        decoding each batch ahead on a loader's thread, and answers a ``FitResult``. Options:
        ``eval`` (a Dataset or a list: held-out recall per modality), ``eval_every`` (steps; the
        end always evaluates), ``out`` (a checkpoint written at the end, with the data order's
        cursor), ``save_every`` (steps), ``resume`` (continue the data order stored in the checkpoint
        this trainer resumed from), ``log`` (``callable(StepResult)`` after every step), ``member``
        and ``members`` (a mesh member's share; 0 and 0 over a mesh: the trainer's), ``compute``
        (of the models evaluated). The loop is the library's ``uform_trainer_fit``
        (docs/training.md, "The loop"); ``steps`` must be at least 1."""
        from .data import fit

        return fit(self, dataset, steps, batch, **options)

    def schedule(self, step: float, total_steps: float = 0) -> float:
        """The learning rate of the trainer's schedule at ``step`` (fractional steps allowed)."""
        return lib.uform_trainer_schedule(self._use("Trainer.schedule"), float(step), float(total_steps))

    def close(self) -> None:
        """Waits for the trainer's unfinished Deferred calls, then frees it. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        for pending in list(self._pending):
            pending._settle()
        handle, self._handle = self._handle, None
        lib.uform_trainer_free(handle)


class TrainerReceiver:
    """``trainer.on(executor)`` (blocking) or ``trainer.deferred(executor)`` (answers Deferreds)."""

    def __init__(self, trainer: Trainer, completion: int) -> None:
        self._trainer, self._completion = trainer, completion

    def step(
        self,
        contents: Sequence[Any],
        modalities: Any,
        *,
        bags: Optional[Sequence[int]] = None,
        sides: Optional[Sequence[int]] = None,
        relations: Optional[Sequence[Sequence[int]]] = None,
        choices: Optional[Sequence[Any]] = None,
        targets: Optional[Sequence[Optional[int]]] = None,
        scalar: Union[str, int, Scalar] = "f32",
        learning_rate: Optional[float] = None,
        progress: Optional[Any] = None,
        stats: bool = False,
        arena: Any = None,
        accumulate: Optional[int] = None,
    ) -> Any:
        """One optimisation step over one batch (docs/training.md, "A batch"):

        - ``contents``: texts (str or bytes) and media (paths or file bytes), with ``modalities``
          one name per content (or one name for all);
        - ``bags``: ``bag_count + 1`` offsets into the contents (None: every content its own bag);
        - ``sides``: 0 or 1 per bag (None: all on side 0);
        - ``relations``: positive pairs ``(left, right)`` or ``(left, right, group)`` of bags;
        - ``choices`` and ``targets``: per content, its legal next bytes (empty for none) and the
          byte to choose (None where there are none): the text_choose loss;
        - ``scalar``: of the bag embeddings; ``learning_rate``: this step's rate instead of the schedule;
        - ``accumulate``: run the batch in that many chunks, the same step as the whole batch at once
          with the activations' memory of one chunk (the gradient cache: every chunk's embeddings,
          the loss over all of them, then each chunk's forward again and its backward).

        Answers a ``StepResult`` (or a ``Deferred`` of it). A refused batch leaves the trainer as it was."""
        function = "Trainer.step"
        handle = self._trainer._use(function)
        batch = _batch.build(contents, modalities, bags, sides, relations, choices, targets, function)
        kind = _SCALAR_NAMES.get(scalar) if type(scalar) is str else None
        kind = int(parse_enum(Scalar, scalar, function, "scalar")) if kind is None else kind
        rate = 0.0
        if learning_rate is not None:
            if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float, np.floating)):
                raise invalid(function, f"learning_rate: expected a number, got {type(learning_rate).__name__}")
            rate = float(learning_rate)
            if not rate > 0:
                raise invalid(function, f"learning_rate = {rate}: must be positive (None follows the schedule)")
        _check_common(function, progress, stats, arena)
        request = S.TrainerStep()
        request.trainer, request.completion = handle, self._completion
        request.modalities, request.contents = batch.modalities, batch.contents
        request.bags, request.bag_count, request.sides = batch.bags, batch.bag_count, batch.sides
        request.relations, request.choices, request.choice_targets = batch.relations, batch.choices, batch.targets
        request.outputs_scalar, request.learning_rate_override = kind, rate
        if accumulate is not None:
            request.accumulate = _inputs.non_negative(accumulate, function, "accumulate")
        raw_stats = S.TrainerStats() if stats else None
        if raw_stats is not None:
            request.stats = addressof(raw_stats)

        def collect(arena_handle):
            generation = lib.uform_arena_generation(arena_handle) if arena is not None else 0
            measured = None
            if raw_stats is not None:
                measured = TrainerStats(raw_stats.items, raw_stats.sequences, raw_stats.tokens, raw_stats.decode_seconds,
                                        raw_stats.forward_seconds, raw_stats.backward_seconds,
                                        raw_stats.optimizer_seconds, raw_stats.flops, raw_stats.exchange_wait_seconds,
                                        raw_stats.exchange_seconds, raw_stats.chunks)
            return StepResult(request, measured, arena, generation)

        return self._submit(lib.uform_trainer_step, request, function, progress, arena, collect,
                            (batch.keep, raw_stats))

    def save(
        self,
        path: Union[str, bytes, "os.PathLike[str]"],
        *,
        optimizer: bool = True,
        user_metadata: Optional[str] = None,
        progress: Optional[Any] = None,
    ) -> Any:
        """Writes the trainer's model to ``path`` atomically, as a checkpoint ``Model.load_ram``
        loads, with the optimizer's state (``optimizer=False``: weights only) and ``user_metadata``
        (text of your own, e.g. a data loader's position). Progress reports bytes written;
        cancelling leaves the old file. Answers None (or a ``Deferred`` of None)."""
        function = "Trainer.save"
        handle = self._trainer._use(function)
        name = _inputs.path_bytes(path, function, "path")
        if not isinstance(optimizer, bool):
            raise invalid(function, f"optimizer: expected True or False, got {type(optimizer).__name__}")
        metadata = None
        if user_metadata is not None:
            if not isinstance(user_metadata, str) or "\0" in user_metadata:
                raise invalid(function, "user_metadata: expected text without NUL characters")
            try:
                metadata = user_metadata.encode("utf-8")
            except UnicodeEncodeError as error:
                raise invalid(function, f"user_metadata: not encodable as UTF-8 ({error.reason})") from None
        _check_common(function, progress, False, None)
        request = S.TrainerSave()
        request.trainer, request.completion, request.path = handle, self._completion, name
        request.optimizer, request.user_metadata = 0 if optimizer else 1, metadata
        return self._submit(lib.uform_trainer_save, request, function, progress, None, lambda arena_handle: None,
                            (name, metadata), needs_arena=False)

    def _submit(self, verb, request, function: str, progress, arena, collect, keep, needs_arena: bool = True) -> Any:
        trainer = self._trainer
        executor = trainer._executor
        arena_handle = None
        if needs_arena:
            arena_handle = arena._use(function) if arena is not None else executor._acquire_arena(function)
            request.arena = arena_handle
        relay = None
        if progress is not None:
            relay = Relay(progress)
            request.progress = S.Progress(trampoline, relay.key, 0)

        def finish():
            try:
                if relay is not None:
                    relay.reraise()
                if request.outcome.status != Status.OK:
                    raise from_outcome(request.outcome)
                return collect(arena_handle)
            finally:
                if relay is not None:
                    relay.close()
                if needs_arena and arena is None:
                    executor._release_arena(arena_handle)

        try:
            status = verb(addressof(request))
        except BaseException:
            if relay is not None:
                relay.close()
            if needs_arena and arena is None:
                executor._release_arena(arena_handle)
            raise
        if self._completion == 0 or status not in (Status.OK, Status.DEFERRED):
            return finish()
        pending = Deferred(request, finish, (keep, relay, arena, trainer, executor))
        trainer._pending.add(pending)
        return pending
