"""Datasets, loaders, recall and training loops (uform.h, "Data"; docs/data.md).

    dataset = uform.Dataset.open(shards="data/{00000..00099}.tar", seed=1)   # or a manifest, a folder
    heldout = uform.Dataset.open("heldout.jsonl", sequential=True)
    with uform.Executor.for_ram() as executor:
        trainer = uform.Trainer.init_ram(executor, seed=1, total_steps=1000, warmup_steps=100)
        result = trainer.fit(dataset, steps=1000, batch=128, eval=heldout, eval_every=500,
                             out="model.safetensors", save_every=500)
        print(result.evaluations[-1])                                        # recall per modality

A ``Dataset`` is a source of samples opened once: a JSON-lines manifest, a folder tree or WebDataset
shards (streamed; never loaded whole). ``dataset.items()`` reads it in stored order (what an index
is built from); ``dataset.loader(trainer, batch)`` draws training batches for a trainer, decoded on
a thread of its own while the trainer steps, reshuffled every epoch from the seed, and resumable
exactly from ``loader.cursor()``. Failures raise ``uform.Error`` with ``.where``: a ``DataError``
naming the manifest line, shard, sample key or batch content.
"""

import json
from ctypes import addressof, byref, c_char_p, c_int, c_size_t, c_void_p, create_string_buffer, string_at
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _data_structs as D, _inputs, _structs as S
from ._closing import Closing
from ._library import lib
from ._progress import Relay, trampoline
from .enums import Modality
from .errors import Status, from_outcome, invalid

_SOURCES = {"manifest": 0, "folder": 1, "shards": 2}
_MODALITY_NAMES = ("text", "image", "video", "audio")


@dataclass(frozen=True)
class DataError:
    """Where a sample failed (``uform_data_error_t``): ``line`` (a manifest's, 0 when none),
    ``shard`` (its index, None when none), ``content`` (a batch's content, None when none),
    ``source`` (the manifest, file or shard), ``key`` (the sample's) and ``message`` (why)."""

    status: int
    line: int
    shard: Optional[int]
    content: Optional[int]
    source: str
    key: str
    message: str


def _error_of(raw: D.DataError) -> DataError:
    none = (1 << 64) - 1
    return DataError(raw.status, raw.line, None if raw.shard == none else raw.shard,
                     None if raw.content == none else raw.content, raw.source.decode(errors="replace"),
                     raw.key.decode(errors="replace"), raw.message.decode(errors="replace"))


def _raise(outcome: S.Outcome, error: Optional[D.DataError] = None) -> None:
    exception = from_outcome(outcome)
    exception.where = _error_of(error) if error is not None and error.status else None
    raise exception


def _run_blocking(call: Callable[[int], int], request: Any, progress: Optional[Callable[[int, int], Any]]) -> None:
    """Runs `call(addressof(request))`, a blocking call whose request has progress, outcome and
    error fields, with `progress` relayed, and raises its failure (with the bad sample's place)."""
    relay = None
    if progress is not None:
        relay = Relay(progress)
        request.progress = S.Progress(trampoline, relay.key, 0)
    try:
        status = call(addressof(request))
        if relay is not None:
            relay.reraise()
        if status != 0:
            _raise(request.outcome, request.error)
    finally:
        if relay is not None:
            relay.close()


@dataclass(frozen=True)
class DatasetDescription:
    """What a dataset holds as far as it is known without reading shards."""

    source: str
    shards: int
    samples: int
    pairs: Dict[str, int]
    choices: int
    items: int
    bad: int
    fingerprint: str


@dataclass(frozen=True)
class Item:
    """One item in stored order: its modality, key (how an index names it), bytes, caption (or
    None), ordinal, and ``error`` (a ``DataError``) when it could not be read (then ``data`` is b"")."""

    modality: str
    key: str
    data: bytes
    text: Optional[str]
    ordinal: int
    error: Optional[DataError]


class Dataset(Closing):
    """A dataset: open it with ``Dataset.open``; ``close()`` (or ``with``) frees it."""

    def __init__(self) -> None:
        raise TypeError("use uform.Dataset.open(...)")

    @classmethod
    def open(
        cls,
        path: Any = None,
        *,
        shards: Optional[str] = None,
        source: Optional[str] = None,
        seed: int = 0,
        shuffle_buffer: int = 0,
        sequential: bool = False,
        partitions: int = 0,
        skip_bad: bool = False,
        hidden: bool = False,
        max_sample_bytes: int = 0,
    ) -> "Dataset":
        """Opens ``path`` (a manifest, a folder — or a list of either) or ``shards`` (a shard list:
        ``"data/{00000..00099}.tar"``, lists joined with ``"::"``). ``source`` forces the kind
        (``"manifest"``, ``"folder"``, ``"shards"``); by default a folder is a folder and anything
        else a manifest. ``seed`` orders every epoch; ``shuffle_buffer`` samples shuffle a shard
        stream (0: 2,000); ``sequential`` reads in stored order, one pass; ``partitions`` splits a
        shard stream (0: the loader's members); ``skip_bad`` lists and replaces bad samples."""
        function = "Dataset.open"
        import os

        if (path is None) == (shards is None):
            raise invalid(function, "give a path (manifest or folder) or shards=, one of them")
        if shards is not None:
            kind, paths = "shards", [shards]
        else:
            paths = list(path) if isinstance(path, (list, tuple)) else [path]
            kind = source or ("folder" if os.path.isdir(os.fspath(paths[0])) else "manifest")
        if kind not in _SOURCES:
            raise invalid(function, f"source = {kind!r}: expected 'manifest', 'folder' or 'shards'")
        keep = [_inputs.path_bytes(p, function, "path") for p in paths]
        pointers = (c_char_p * len(keep))(*keep)
        options = D.DatasetOptions()
        options.source = _SOURCES[kind]
        options.paths, options.path_count = addressof(pointers), len(keep)
        options.seed = _inputs.non_negative(seed, function, "seed")
        options.shuffle_buffer = _inputs.non_negative(shuffle_buffer, function, "shuffle_buffer")
        options.sequential, options.skip_bad, options.hidden = int(bool(sequential)), int(bool(skip_bad)), int(bool(hidden))
        options.partitions = _inputs.non_negative(partitions, function, "partitions")
        options.max_sample_bytes = _inputs.non_negative(max_sample_bytes, function, "max_sample_bytes")
        handle, error, outcome = c_void_p(), D.DataError(), S.Outcome()
        if lib.uform_dataset_open(addressof(options), byref(handle), addressof(error), addressof(outcome)) != 0:
            _raise(outcome, error)
        dataset = object.__new__(cls)
        dataset._handle, dataset._loaders = handle.value, []
        return dataset

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the dataset is closed")
        return self._handle

    def describe(self) -> DatasetDescription:
        """What the dataset holds as far as it is known without reading shards."""
        raw = D.DatasetDescription()
        if lib.uform_dataset_describe(self._use("Dataset.describe"), addressof(raw)) != 0:
            raise invalid("Dataset.describe", "uform_dataset_describe refused the dataset")
        return DatasetDescription(("manifest", "folder", "shards")[raw.source], raw.shards, raw.samples,
                                  {_MODALITY_NAMES[m]: raw.pairs[m] for m in range(1, 4)}, raw.choices, raw.items, raw.bad,
                                  raw.fingerprint.decode())

    def items(self, skip: int = 0) -> Iterator[Item]:
        """Every item in stored order from the start (``skip`` passed over without reading them).
        An item that cannot be read comes with its ``error``; reading goes on after it."""
        function = "Dataset.items"
        handle = self._use(function)
        request = D.DatasetRead()
        request.dataset, request.rewind = handle, 1
        request.skip = _inputs.non_negative(skip, function, "skip")
        while True:
            status = lib.uform_dataset_read(addressof(request))
            request.skip, request.rewind = 0, 0
            if request.done:
                return
            if status == Status.OUT_OF_MEMORY or status == Status.INVALID_ARGUMENT:
                _raise(request.outcome, request.error)
            item = request.item
            key = string_at(item.key, item.key_length).decode(errors="replace") if item.key else ""
            if status != 0:
                yield Item("", key, b"", None, item.ordinal, _error_of(request.error))
                continue
            text = string_at(item.text, item.text_length).decode(errors="replace") if item.text else None
            yield Item(_MODALITY_NAMES[item.modality], key, string_at(item.bytes, item.size) if item.size else b"", text,
                       item.ordinal, None)

    def loader(self, trainer: Any, batch: int, *, member: int = 0, members: int = 0, ahead: int = 1,
               decode_threads: int = 1, cursor: Optional[str] = None) -> "Loader":
        """Training batches of ``batch`` samples for ``trainer`` (see ``Loader``)."""
        return Loader(self, trainer, batch, member, members, ahead, decode_threads, cursor)

    def close(self) -> None:
        """Frees the dataset (after closing its loaders). Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        for loader in list(self._loaders):
            loader.close()
        handle, self._handle = self._handle, None
        lib.uform_dataset_free(handle)


@dataclass(frozen=True)
class LoaderStats:
    """What a loader did: batches, samples, the epoch, bad samples skipped, and seconds spent
    waiting for batches (the step's wait on data), reading and decoding ahead."""

    batches: int
    samples: int
    epoch: int
    skipped: int
    wait_seconds: float
    read_seconds: float
    decode_seconds: float
    bytes_read: int
    errors: List[DataError]


@dataclass(frozen=True)
class Batch:
    """A batch as handed to a step: its samples' captions and media modalities, and whether two
    samples share a text (``twins``)."""

    texts: List[str]
    modalities: List[str]
    twins: bool


class Loader(Closing):
    """Training batches of a dataset for a trainer (``uform_loader_t``): iterate it for ``Batch``
    summaries, or let ``Trainer.fit`` step on it. ``cursor()`` answers the text that resumes the
    data order exactly (``Dataset.loader(..., cursor=...)``)."""

    def __init__(self, dataset: Dataset, trainer: Any, batch: int, member: int, members: int, ahead: int,
                 decode_threads: int, cursor: Optional[str]) -> None:
        function = "Dataset.loader"
        options = D.LoaderOptions()
        options.dataset = dataset._use(function)
        options.trainer = trainer._use(function)
        options.batch = _inputs.non_negative(batch, function, "batch")
        options.member, options.members = _inputs.non_negative(member, function, "member"), _inputs.non_negative(members, function, "members")
        options.ahead, options.decode_threads = _inputs.non_negative(ahead, function, "ahead"), _inputs.non_negative(decode_threads, function, "decode_threads")
        text = cursor.encode() if cursor is not None else None
        options.cursor = text
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_loader_open(addressof(options), byref(handle), addressof(outcome)) != 0:
            _raise(outcome)
        self._handle, self._dataset, self._trainer = handle.value, dataset, trainer
        dataset._loaders.append(self)

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the loader is closed")
        return self._handle

    def next_into(self, request: S.TrainerStep) -> Optional[D.LoaderNext]:
        """Fills a trainer step request with the next batch; None when a sequential pass ended."""
        call = D.LoaderNext()
        call.loader, call.step = self._use("Loader.next"), addressof(request)
        if lib.uform_loader_next(addressof(call)) != 0:
            _raise(call.outcome, call.error)
        return None if call.done else call

    def __iter__(self) -> Iterator[Batch]:
        while True:
            request = S.TrainerStep()
            call = self.next_into(request)
            if call is None:
                return
            texts, modalities = [], []
            count = request.contents.count
            offsets = (c_size_t * (count + 1)).from_address(request.contents.offsets)
            codes = (c_int * count).from_address(request.modalities)
            data = c_void_p.from_buffer(request.contents, S.Tape.data.offset).value
            for c in range(count):
                if codes[c] == 0:
                    texts.append(string_at(data + offsets[c], offsets[c + 1] - offsets[c]).decode(errors="replace"))
                else:
                    modalities.append(_MODALITY_NAMES[codes[c]])
            yield Batch(texts, modalities, bool(call.twins))

    def cursor(self) -> str:
        """The data order after the batches handed over so far, as JSON text (collective over a mesh
        whose members read their own shards: every member calls it at the same point)."""
        function = "Loader.cursor"
        length, outcome = c_size_t(), S.Outcome()
        if lib.uform_loader_cursor(self._use(function), None, 0, byref(length), addressof(outcome)) != 0:
            _raise(outcome)
        buffer = create_string_buffer(length.value + 1)
        if lib.uform_loader_cursor(self._handle, buffer, length.value + 1, byref(length), addressof(outcome)) != 0:
            _raise(outcome)
        return buffer.value.decode()

    def stats(self) -> LoaderStats:
        """What the loader did so far, with the bad samples it listed."""
        raw, count = D.LoaderStats(), c_size_t()
        lib.uform_loader_stats(self._use("Loader.stats"), addressof(raw), None, 0, byref(count))
        errors = (D.DataError * count.value)()
        if count.value:
            lib.uform_loader_stats(self._handle, None, addressof(errors), count.value, byref(count))
        return LoaderStats(raw.batches, raw.samples, raw.epoch, raw.skipped, raw.wait_seconds, raw.read_seconds,
                           raw.decode_seconds, raw.bytes_read, [_error_of(e) for e in errors])

    def close(self) -> None:
        """Stops the loader's thread and frees it. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        handle, self._handle = self._handle, None
        lib.uform_loader_free(handle)
        if self in self._dataset._loaders:
            self._dataset._loaders.remove(self)


# ---- recall ----

def recall(queries: Any, candidates: Any, query_labels: Any, candidate_labels: Any, ks: Sequence[int] = (1, 5)) -> np.ndarray:
    """Recall@k (``uform_recall``): the fraction of queries whose best-ranked right answer (any
    candidate with the query's label) is among the first k by dot product, ties by index.
    ``queries`` [n, E] and ``candidates`` [m, E] float32; labels [n] and [m] integers."""
    function = "recall"
    q = np.ascontiguousarray(queries, dtype=np.float32)
    c = np.ascontiguousarray(candidates, dtype=np.float32)
    ql = np.ascontiguousarray(query_labels, dtype=np.uint64)
    cl = np.ascontiguousarray(candidate_labels, dtype=np.uint64)
    if q.ndim != 2 or c.ndim != 2 or q.shape[1] != c.shape[1] or ql.shape != (q.shape[0],) or cl.shape != (c.shape[0],):
        raise invalid(function, "expected queries [n, E], candidates [m, E], labels [n] and [m]")
    cut = np.ascontiguousarray(list(ks), dtype=np.uintp)
    request = D.Recall()
    request.queries, request.queries_count, request.columns = q.ctypes.data, q.shape[0], q.shape[1]
    request.candidates, request.candidates_count = c.ctypes.data, c.shape[0]
    request.query_labels, request.candidate_labels = ql.ctypes.data, cl.ctypes.data
    request.ks, request.ks_count = cut.ctypes.data, len(cut)
    if lib.uform_recall(addressof(request)) != 0:
        _raise(request.outcome)
    return np.array(request.recall[:len(cut)])


@dataclass(frozen=True)
class Evaluation:
    """Held-out recall of one modality: its pairs, and recall@ks[i] text→media and media→text."""

    pairs: int
    text_to_media: List[float]
    media_to_text: List[float]


def evaluate(model: Any, dataset: Dataset, executor: Any = None, ks: Sequence[int] = (1, 5), batch: int = 32,
             progress: Optional[Callable[[int, int], Any]] = None) -> Dict[str, Evaluation]:
    """Held-out recall per modality of ``model`` on the pairs of ``dataset`` (``uform_evaluate``):
    a hit is any item whose caption equals the query's. Answers {"image": Evaluation, ...}."""
    function = "evaluate"
    from .executor import calling_thread

    runner = calling_thread if executor is None else executor
    arena = runner._acquire_arena(function)
    cut = np.ascontiguousarray(list(ks), dtype=np.uintp)
    request = D.Evaluate()
    request.model, request.executor, request.dataset, request.arena = model._handle, runner._use(function), dataset._use(function), arena
    request.batch, request.ks, request.ks_count = batch, cut.ctypes.data, len(cut)
    try:
        _run_blocking(lib.uform_evaluate, request, progress)
    finally:
        runner._release_arena(arena)
    results = {}
    for m in range(1, 4):
        result = request.results[m]
        if result.pairs:
            results[_MODALITY_NAMES[m]] = Evaluation(result.pairs, list(result.text_to_media[:len(cut)]),
                                                     list(result.media_to_text[:len(cut)]))
    return results


# ---- the training loop ----

@dataclass(frozen=True)
class FitResult:
    """What ``Trainer.fit`` did: the steps taken, the last loss, every evaluation (step, set,
    {modality: Evaluation}), the cursor after the last batch, and the loader's stats."""

    steps: int
    loss: float
    evaluations: List[Any]
    cursor: str
    stats: LoaderStats


def fit(trainer: Any, dataset: Dataset, steps: int, batch: int = 32, *, eval: Any = None, eval_every: int = 0,
        out: Any = None, save_every: int = 0, resume: bool = False, log: Optional[Callable[[Any], Any]] = None,
        member: int = 0, members: int = 0, compute: str = "f32") -> FitResult:
    """``Trainer.fit``: ``steps`` steps of ``batch`` samples from ``dataset`` (see the method)."""
    function = "Trainer.fit"
    from .trainer import StepResult

    executor = trainer._executor
    cursor = trainer.user_metadata if resume else None
    if cursor is not None and not cursor.startswith('{"format":"uform.data.cursor/'):
        cursor = None
    sets = [] if eval is None else (list(eval) if isinstance(eval, (list, tuple)) else [eval])
    loader = dataset.loader(trainer, batch, member=member, members=members, cursor=cursor)
    arena = executor._acquire_arena(function)
    evaluations, loss, done = [], 0.0, 0
    handle = trainer._use(function)

    def evaluate_now(step_number: int) -> None:
        model = trainer.snapshot(compute=compute)
        try:
            for index, heldout in enumerate(sets):
                evaluations.append((step_number, index, evaluate(model, heldout, executor if not executor.is_calling_thread else None)))
        finally:
            model.close()

    def save() -> None:
        text = loader.cursor()
        trainer.on(executor).save(out, user_metadata=text)

    try:
        for _ in range(_inputs.non_negative(steps, function, "steps")):
            request = S.TrainerStep()
            request.trainer, request.arena = handle, arena
            if loader.next_into(request) is None:
                break
            if lib.uform_trainer_step(addressof(request)) != 0:
                raise from_outcome(request.outcome)
            done += 1
            loss = request.loss
            if log is not None:
                log(StepResult(request, None, None, 0))
            if out is not None and save_every and done % save_every == 0:
                save()
            if sets and eval_every and done % eval_every == 0:
                evaluate_now(request.step)
        if out is not None:
            save()
        if sets and not (eval_every and done and done % eval_every == 0):
            evaluate_now(trainer.describe().steps)
        return FitResult(done, loss, evaluations, loader.cursor(), loader.stats())
    finally:
        executor._release_arena(arena)
        loader.close()
