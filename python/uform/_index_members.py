"""Many members, one index, from Python (docs/indexes.md, "Many members, one index"): the body of
``Index.build(vectors=..., mesh=...)`` and the approximate-structure settings that ``Index.build``
passes to the library.

Vectors over a mesh mirror ``uform index --vectors V.npy --processes K``: every member is given the
whole matrix (``numpy.load(path, mmap_mode="r")`` maps it, so only the member's block is read),
member r of K takes the contiguous block of rows [N·r/K, N·(r+1)/K) and names each by its number in
the whole matrix (or by its entry of ``paths``); ``uform_index_builder_write_members`` streams the
blocks to member 0 in member order, which writes the file (no member holds the whole index), and
with ``ann`` every member adds its own block to
the structure (``uform_index_ann_build_members``). Every member takes part in every exchange, also
one whose own part failed (with nothing), so the others fail at once naming it instead of waiting
out the mesh's timeout.
"""

from ctypes import addressof, byref, c_void_p
from typing import Any, Optional, Sequence, Tuple

from . import _data_structs as D, _inputs, _structs as S
from ._index_vectors import checked_matrix, fill_builder
from ._library import lib
from .errors import from_outcome, invalid


def ann_options(ann: Any, ann_train: int, ann_threads: int, function: str,
                ann_ondisk: bool = False) -> Optional[D.IndexAnnOptions]:
    """``uform_index_ann_options_t`` for ``ann`` (True: the default recipe; a str: a FAISS
    index_factory recipe), or None for no structure (None or False). ``ann_ondisk`` is the struct's
    ``ondisk`` (``Index.build_ann``'s ``ondisk``, the command line's ``--ann-ondisk``)."""
    if ann is None or ann is False:
        if ann_train or ann_threads or ann_ondisk:
            raise invalid(function, "ann_train, ann_threads and ann_ondisk tune the approximate structure: give ann= too")
        return None
    if not isinstance(ann_ondisk, bool):
        raise invalid(function, f"ann_ondisk = {ann_ondisk!r}: expected True or False")
    options = D.IndexAnnOptions()
    if ann is True:
        options.recipe = None
    elif isinstance(ann, str) and "\0" not in ann:
        options.recipe = ann.encode() if ann else None
    else:
        raise invalid(function, f"ann = {ann!r}: expected True (the default recipe) or a FAISS recipe such as 'IVF1024,PQ16np'")
    options.train_rows = _inputs.non_negative(ann_train, function, "ann_train")
    options.threads = _inputs.non_negative(ann_threads, function, "ann_threads")
    options.ondisk = 1 if ann_ondisk else 0
    return options


def mesh_place(mesh: Any, function: str) -> Tuple[int, int, int]:
    """The mesh's handle, this member's index and the number of members."""
    from .mesh import Mesh

    if not isinstance(mesh, Mesh):
        raise invalid(function, f"mesh: expected a uform.Mesh, got {type(mesh).__name__}")
    handle = mesh._use(function)
    shape = mesh.describe()
    return handle, shape.host_domain_index, shape.members_total


def build_members_from_vectors(vectors: Any, *, mesh: Any, paths: Optional[Sequence[Any]], model: Any, scalar: Any,
                               normalize: bool, modality: str, out_bytes: bytes, ann: Optional[D.IndexAnnOptions],
                               ann_path_bytes: Optional[bytes], function: str) -> int:
    """This member's part of one index built by every member of ``mesh`` (collective); member 0
    writes ``out`` (and the structure). Answers the whole matrix's row count."""
    handle, rank, count = mesh_place(mesh, function)
    failure: Optional[BaseException] = None
    own = None
    rows = 0
    try:
        matrix = checked_matrix(vectors, modality, function)
        rows = matrix.shape[0]
        first, end = rows * rank // count, rows * (rank + 1) // count
        if paths is not None:
            if isinstance(paths, (str, bytes)):
                raise invalid(function, "paths: give a sequence of names, one per row, not one string")
            paths = list(paths)
            if len(paths) != rows:
                raise invalid(function, f"paths: {len(paths)} names for {rows} rows of vectors: one per row")
            names = paths[first:end]
        else:  # a member names its rows by their numbers in the whole matrix
            names = [str(row) for row in range(first, end)]
        own = fill_builder(matrix[first:end], paths=names, model=model, scalar=scalar, normalize=normalize,
                           modality=modality, function=function)
    except Exception as error:  # still takes part below, with nothing, so the others stop at once
        failure = error
    outcome = S.Outcome()
    try:
        # Member 0 writes; the others stream their rows to it (no member holds the whole index).
        if lib.uform_index_builder_write_members(own if failure is None else None, handle, out_bytes, None, 0,
                                                 addressof(outcome)) != 0 and failure is None:
            failure = from_outcome(outcome)
        if ann is not None:
            whole, opened = c_void_p(), S.Outcome()
            if failure is None and rank == 0 and lib.uform_index_open(out_bytes, None, byref(whole),
                                                                       addressof(opened)) != 0:
                failure = from_outcome(opened)
            made = S.Outcome()
            try:
                if lib.uform_index_ann_build_members(whole.value, own if failure is None else None, handle,
                                                     ann_path_bytes, addressof(ann), addressof(made)) != 0 and \
                        failure is None:
                    failure = from_outcome(made)
            finally:
                lib.uform_index_free(whole.value)
    finally:
        lib.uform_index_builder_free(own)
    if failure is not None:
        raise failure
    return rows
