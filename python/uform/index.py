"""Indexes (uform.h, "Indexes" and "Data"): a corpus's embeddings in one file, searched exactly
or through an approximate structure built by FAISS (X.faiss beside X.index).

    uform.Index.build(model, "photos/", "recordings/", out="corpus.index", executor=executor)
    index = uform.Index.open("corpus.index", model)              # refuses another checkpoint's index
    query = model.text_encode("a red star at the top").embeddings
    hits = index.search(query, top=5)
    for path, score in zip(hits.paths[0], hits.scores[0]):
        print(f"{score:.3f} {path}")

    index.build_ann(recipe="HNSW32")               # writes corpus.faiss and searches through it
    hits = index.search(query, top=5, ef=128, rerank=50)
"""

from ctypes import addressof, byref, c_char_p, c_int, c_size_t, c_void_p, string_at
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from . import _data_structs as D, _inputs, _structs as S
from ._closing import Closing
from ._library import lib
from .data import Dataset, DataError, _error_of, _raise, _run_blocking
from .enums import Scalar, parse_enum
from .errors import invalid

_MODALITY_NAMES = ("text", "image", "video", "audio")
_SCALAR_NAMES = ("f32", "f16", "bf16", "i8", "b1")
_RERANK_NONE = (1 << 64) - 1  # UFORM_INDEX_ANN_RERANK_NONE: (size_t)-1


def _modality_bits(modalities: Optional[Sequence[str]], function: str) -> int:
    if modalities is None:
        return 0
    bits = 0
    for name in [modalities] if isinstance(modalities, str) else modalities:
        if name not in _MODALITY_NAMES:
            raise invalid(function, f"modalities: {name!r} is not one of text, image, video, audio")
        bits |= 1 << _MODALITY_NAMES.index(name)
    return bits


@dataclass(frozen=True)
class IndexDescription:
    count: int
    counts: Dict[str, int]
    dimensions: int
    scalar: str
    fingerprint: str


@dataclass(frozen=True)
class AnnDescription:
    """An approximate structure: its vectors, inverted lists (IVF; 0 otherwise), bytes per vector,
    training rows, whether it has an HNSW graph, and the FAISS recipe it was built from."""

    count: int
    dimensions: int
    lists: int
    code_bytes: int
    train_rows: int
    graph: bool
    recipe: str


def ann_path(index_path: Any) -> str:
    """Where an index's approximate structure lies: X.index → X.faiss, other names + ".faiss"."""
    name = str(index_path)
    return (name[:-6] if name.endswith(".index") else name) + ".faiss"


_default_ann_path = ann_path  # Index.build's argument of the same name hides the function


@dataclass(frozen=True)
class Hits:
    """Search results, best first: ``items`` [queries, k] (item numbers), ``scores`` [queries, k],
    and per query the hits' ``paths`` and ``modalities``."""

    items: np.ndarray
    scores: np.ndarray
    paths: List[List[str]]
    modalities: List[List[str]]


@dataclass(frozen=True)
class BuildResult:
    """What ``Index.build`` did: items indexed, bad items listed in the errors file (the last one's
    place in ``error``), items of other modalities skipped, duplicate keys dropped, and items a
    resume found done."""

    indexed: int
    failed: int
    skipped: int
    duplicates: int
    resumed: int
    errors_path: str
    error: Optional[DataError]


def _leave_mesh(mesh: Any, vectors: bool = False) -> None:
    """A member that failed before its build still meets the others, with nothing, so they stop
    naming it instead of at the timeout: encoding, a request with no model (it fails at once after
    telling them); from vectors, the write of the members' blocks with none."""
    handle = getattr(mesh, "_handle", None)
    if handle is None:
        return
    if vectors:
        outcome = S.Outcome()
        lib.uform_index_builder_write_members(None, handle, None, None, 0, addressof(outcome))
        return
    nothing = D.IndexBuild()
    nothing.mesh = handle
    lib.uform_index_build(addressof(nothing))


class Index(Closing):
    """An open index file (``uform_index_t``); any number of threads may search it."""

    def __init__(self) -> None:
        raise TypeError("use uform.Index.open(path, model) or uform.Index.build(...)")

    @classmethod
    def open(cls, path: Any, model: Any = None) -> "Index":
        """Maps ``path`` read-only and checks it; with a ``model``, the index must be that
        checkpoint's (else ``ConfigMismatch``)."""
        function = "Index.open"
        name = _inputs.path_bytes(path, function, "path")
        handle, outcome = c_void_p(), S.Outcome()
        model_handle = model._handle if model is not None else None
        if lib.uform_index_open(name, model_handle, byref(handle), addressof(outcome)) != 0:
            _raise(outcome)
        index = object.__new__(cls)
        index._handle, index._path, index._ann = handle.value, name.decode(errors="surrogateescape"), None
        return index

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the index is closed")
        return self._handle

    def describe(self) -> IndexDescription:
        """Its items (per modality), width, scalar and the checkpoint's fingerprint."""
        raw = D.IndexDescription()
        if lib.uform_index_describe(self._use("Index.describe"), addressof(raw)) != 0:
            raise invalid("Index.describe", "uform_index_describe refused the index")
        return IndexDescription(raw.count, {_MODALITY_NAMES[m]: raw.counts[m] for m in range(4)}, raw.dimensions,
                                _SCALAR_NAMES[raw.scalar], raw.fingerprint.decode())

    def __len__(self) -> int:
        return self.describe().count

    def item(self, number: int) -> "tuple[str, str]":
        """Item ``number``'s modality and path (or key)."""
        modality, path, length = c_int(), c_void_p(), c_size_t()
        if lib.uform_index_item(self._use("Index.item"), number, addressof(modality), byref(path), byref(length)) != 0:
            raise invalid("Index.item", f"item {number} is out of range ({len(self)} items)")
        return _MODALITY_NAMES[modality.value], string_at(path.value, length.value).decode(errors="replace")

    def metadata(self, key: str) -> Optional[str]:
        """The value of the file's metadata ``key``, or None."""
        value = lib.uform_index_metadata(self._use("Index.metadata"), key.encode())
        return None if value is None else value.decode()

    def build_ann(self, path: Any = None, recipe: Optional[str] = None, *, train_rows: int = 0,
                  threads: int = 0, ondisk: bool = False) -> AnnDescription:
        """Builds an approximate structure over every item (``uform_index_ann_build``: a FAISS
        index_factory ``recipe``, None for the default rule), writes it to ``path`` (default: the
        index's .faiss) and searches through it from now on. ``ondisk=True`` keeps an IVF recipe's
        inverted lists in X.ivfdata beside X.faiss (docs/indexes.md, "On-disk lists")."""
        function = "Index.build_ann"
        target = _inputs.path_bytes(path if path is not None else ann_path(self._path), function, "path")
        options, outcome = D.IndexAnnOptions(), S.Outcome()
        options.recipe = recipe.encode() if recipe else None
        options.train_rows = _inputs.non_negative(train_rows, function, "train_rows")
        options.threads = _inputs.non_negative(threads, function, "threads")
        options.ondisk = 1 if ondisk else 0
        if lib.uform_index_ann_build(self._use(function), target, addressof(options), addressof(outcome)) != 0:
            _raise(outcome)
        return self.open_ann(target.decode(errors="surrogateescape"))

    def open_ann(self, path: Any = None) -> AnnDescription:
        """Attaches the approximate structure at ``path`` (default: the index's .faiss); refuses one
        built from another index (``ConfigMismatch``) or damaged (``FormatError``)."""
        function = "Index.open_ann"
        target = _inputs.path_bytes(path if path is not None else ann_path(self._path), function, "path")
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_index_ann_open(self._use(function), target, byref(handle), addressof(outcome)) != 0:
            _raise(outcome)
        self._drop_ann()
        self._ann = handle.value
        return self.describe_ann()

    def describe_ann(self) -> Optional[AnnDescription]:
        """The attached approximate structure, or None."""
        if self._ann is None:
            return None
        raw = D.IndexAnnDescription()
        if lib.uform_index_ann_describe(self._ann, addressof(raw)) != 0:
            raise invalid("Index.describe_ann", "uform_index_ann_describe refused the structure")
        return AnnDescription(raw.count, raw.dimensions, raw.lists, raw.code_bytes, raw.train_rows, bool(raw.graph),
                              raw.recipe.decode())

    def _drop_ann(self) -> None:
        handle, self._ann = getattr(self, "_ann", None), None
        if handle is not None:
            lib.uform_index_ann_free(handle)

    def search(self, queries: Any, top: int = 10, *, modalities: Optional[Sequence[str]] = None, candidates: int = 0,
               nprobe: int = 0, ef: int = 0, rerank: Optional[int] = None, exact: bool = False,
               executor: Any = None) -> Hits:
        """The ``top`` items closest to each query (float32 rows of the index's width, unit length:
        an ``Encoded.embeddings``, or a [queries, dims] matrix of query vectors, searched as one
        batch), best first, ties by item number. Through the attached approximate structure unless
        ``exact`` (knobs ``nprobe``, ``ef``, ``rerank``: uform_index_ann_search_t; ``rerank`` None is
        the structure's default, 0 FAISS's own scores), else by exact search (a matrix product for a
        batch; ``candidates``: B1's rescored candidates).
        ``Hits.items`` and ``Hits.scores`` are [queries, top] NumPy arrays."""
        function = "Index.search"
        from .executor import calling_thread

        approximate = self._ann is not None and not exact
        if not approximate and (nprobe or ef or rerank is not None):
            raise invalid(function, "nprobe, ef and rerank tune approximate search: build_ann or open_ann first")
        rows = np.ascontiguousarray(queries, dtype=np.float32)
        if rows.ndim == 1:
            rows = rows[None, :]
        runner = calling_thread if executor is None else executor
        arena = runner._acquire_arena(function)
        if approximate:
            request = D.IndexAnnSearch()
            request.ann = self._ann
            request.nprobe = _inputs.non_negative(nprobe, function, "nprobe")
            request.ef = _inputs.non_negative(ef, function, "ef")
            if rerank is not None:  # 0 asks for FAISS's scores: UFORM_INDEX_ANN_RERANK_NONE
                request.rerank = _inputs.non_negative(rerank, function, "rerank") or _RERANK_NONE
        else:
            request = D.IndexSearch()
            request.index = self._use(function)
            request.candidates = _inputs.non_negative(candidates, function, "candidates")
        request.executor = runner._use(function)
        request.queries, request.queries_count, request.queries_columns = rows.ctypes.data, rows.shape[0], rows.shape[1]
        request.top, request.modalities = _inputs.non_negative(top, function, "top"), _modality_bits(modalities, function)
        request.arena = arena
        try:
            verb = lib.uform_index_ann_search if approximate else lib.uform_index_search
            if verb(addressof(request)) != 0:
                _raise(request.outcome)
            k, count = request.hits_per_query, rows.shape[0]
            hits = np.ctypeslib.as_array((D.IndexHit * (count * k)).from_address(request.hits)) if k and count else \
                np.zeros(0, dtype=[("item", np.uint64), ("score", np.float32), ("modality", np.int32)])
            items = np.array(hits["item"], dtype=np.uint64).reshape(count, k)
            scores = np.array(hits["score"], dtype=np.float32).reshape(count, k)
            codes = np.array(hits["modality"]).reshape(count, k)
            kinds = [[_MODALITY_NAMES[m] for m in row] for row in codes.tolist()]
        finally:
            runner._release_arena(arena)
        missing = np.iinfo(np.uint64).max  # an approximate query that found fewer
        paths = [[self.item(int(n))[1] if n != missing else "" for n in row] for row in items]
        return Hits(items, scores, paths, kinds)

    @staticmethod
    def build(model: Any = None, *inputs: Any, out: Any, manifests: Sequence[Any] = (), shards: Optional[str] = None,
              datasets: Sequence[Dataset] = (), executor: Any = None, decoder: Any = None, dims: int = 0,
              scalar: Any = "f32", modalities: Optional[Sequence[str]] = None, batch: int = 32, checkpoint: int = 0,
              resume: bool = False, hidden: bool = False, errors_path: Any = None,
              progress: Optional[Callable[[int, int], Any]] = None, vectors: Any = None,
              paths: Optional[Sequence[Any]] = None, ids: Optional[Sequence[Any]] = None, normalize: bool = False,
              modality: str = "image", mesh: Any = None, ann: Any = None, ann_path: Any = None, ann_train: int = 0,
              ann_threads: int = 0, ann_ondisk: bool = False) -> BuildResult:
        """Embeds every item of the folders and files ``inputs``, the ``manifests``, the ``shards``
        and any ``datasets`` into ``out`` (``uform_index_build``: a reader thread, decoding on
        ``decoder`` a batch ahead, bad items listed in ``out.errors.jsonl``, a checkpoint every
        ``checkpoint`` items, ``resume`` to continue one).

        Or, with ``vectors`` (a 2-D float32 or float16 NumPy matrix, rows are items), writes an
        index of those rows with no encoding (docs/indexes.md, "Indexes from vectors"): named by
        ``paths`` (or ``ids``, the same: one string per row; default the row numbers), stored in
        ``scalar``, L2-normalised first when ``normalize``, all of ``modality``; with a ``model``,
        stamped with its fingerprint (the vectors are its embeddings), else with none.

        ``ann`` (True for the default recipe, or a FAISS recipe such as "IVF1024,PQ16np") also builds
        an approximate structure over the index into ``ann_path`` (default: ``out``'s .faiss), trained
        on ``ann_train`` rows (0: min(count, 256 per centroid)) with ``ann_threads`` OpenMP threads
        (0: OpenMP's; 1 builds the same file every time); open it with ``Index.open(out).open_ann()``.
        ``ann_ondisk=True`` keeps an IVF recipe's inverted lists on disk beside it (X.faiss's in
        X.ivfdata), as ``Index.build_ann(ondisk=True)`` and ``--ann-ondisk`` do; the name is
        ``build_ann``'s ``ondisk`` with the ``ann_`` prefix this call's other structure settings have.

        ``mesh`` (a ``uform.Mesh``) makes the call collective: every member of the mesh calls it with
        the same arguments and together they build the one index a single process would (the same
        bytes; docs/indexes.md, "Many members, one index"). Encoding: each member reads every item
        and encodes its share of the batches. ``vectors``: each member is given the whole matrix
        (``numpy.load(..., mmap_mode="r")`` maps it) and stores its block of rows [N·r/K, N·(r+1)/K).
        Member 0 writes ``out``; with ``ann``, IVF recipes are trained on member 0, every member adds
        the rows it holds, and member 0 merges the lists (other recipes: member 0 from every row);
        with ``ann_ondisk`` too, every member adds its rows 65,536 at a time and sends each batch's
        lists to member 0, which writes them to the lists file, so no member holds its whole share
        of the lists in memory.
        Not with ``resume``; no checkpoint is written before the end."""
        function = "Index.build"
        from ._index_members import ann_options
        from .executor import calling_thread

        try:
            structure = ann_options(ann, ann_train, ann_threads, function, ann_ondisk)
            if ann_path is not None and structure is None:
                raise invalid(function, "ann_path names where the approximate structure goes: give ann= too")
            if vectors is not None:
                if inputs or manifests or shards is not None or datasets or resume:
                    raise invalid(function, "vectors= builds from the matrix alone: no inputs, manifests, shards, "
                                            "datasets or resume")
                if paths is not None and ids is not None:
                    raise invalid(function, "paths= and ids= name the same thing: give one")
                name = _inputs.path_bytes(out, function, "out")
                target = _inputs.path_bytes(ann_path if ann_path is not None else _default_ann_path(out), function,
                                            "ann_path")
        except Exception:
            if mesh is not None:  # the other members are waiting in the build's first exchange
                _leave_mesh(mesh, vectors is not None)
            raise
        if vectors is not None:
            from ._index_members import build_members_from_vectors
            from ._index_vectors import build_from_vectors

            if mesh is not None:
                count = build_members_from_vectors(vectors, mesh=mesh, paths=paths if paths is not None else ids,
                                                   model=model, scalar=scalar, normalize=normalize, modality=modality,
                                                   out_bytes=name, ann=structure, ann_path_bytes=target,
                                                   function=function)
                return BuildResult(count, 0, 0, 0, 0, "", None)
            count = build_from_vectors(vectors, out, paths=paths if paths is not None else ids, model=model,
                                       scalar=scalar, normalize=normalize, modality=modality, function=function,
                                       out_bytes=name)
            if structure is not None:
                with Index.open(out) as written:
                    outcome = S.Outcome()
                    if lib.uform_index_ann_build(written._use(function), target, addressof(structure),
                                                 addressof(outcome)) != 0:
                        _raise(outcome)
            return BuildResult(count, 0, 0, 0, 0, "", None)
        attempted = False
        opened = []
        try:
            if model is None:
                raise invalid(function, "model is None: give the checkpoint that encodes the inputs, or vectors=")
            if inputs:
                opened.append(Dataset.open(list(inputs), source="folder", sequential=True, skip_bad=True, hidden=hidden))
            if manifests:
                opened.append(Dataset.open(list(manifests), source="manifest", sequential=True, skip_bad=True))
            if shards is not None:
                opened.append(Dataset.open(shards=shards, sequential=True, skip_bad=True))
            every = opened + list(datasets)
            if not every:
                raise invalid(function, "no inputs: give folders, files, manifests=, shards= or datasets=")
            handles = (c_void_p * len(every))(*[d._use(function) for d in every])
            runner = calling_thread if executor is None else executor
            name = _inputs.path_bytes(out, function, "out")
            errors = _inputs.path_bytes(errors_path, function, "errors_path") if errors_path is not None else None
            request = D.IndexBuild()
            request.model, request.executor = model._handle, runner._use(function)
            request.decoder = decoder._use(function) if decoder is not None else None
            request.datasets, request.dataset_count = addressof(handles), len(every)
            request.out, request.errors_path = name, errors
            request.dimensions = _inputs.non_negative(dims, function, "dims")
            request.scalar = int(parse_enum(Scalar, scalar, function, "scalar"))
            request.modalities = _modality_bits(modalities, function)
            request.batch, request.checkpoint, request.resume = batch, checkpoint, int(bool(resume))
            if mesh is not None:
                from ._index_members import mesh_place

                request.mesh = mesh_place(mesh, function)[0]
            if structure is not None:
                request.ann = addressof(structure)
                request.ann_path = _inputs.path_bytes(ann_path, function, "ann_path") if ann_path is not None else None
            attempted = True
            _run_blocking(lib.uform_index_build, request, progress)
            path = (errors or name + b".errors.jsonl").decode()
            return BuildResult(request.indexed, request.failed, request.skipped, request.duplicates, request.resumed, path,
                               _error_of(request.error) if request.failed else None)
        finally:
            if mesh is not None and not attempted:
                _leave_mesh(mesh)
            for dataset in opened:
                dataset.close()

    def close(self) -> None:
        """Unmaps and frees the index. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        self._drop_ann()
        handle, self._handle = self._handle, None
        lib.uform_index_free(handle)
