"""The reference for tests/index/test_index_ann.c: Debian's python3-faiss opens the .faiss file UForm
wrote (FAISS's reader ignores UForm's pairing record after its own bytes) and searches the same
queries with the same knobs, one OpenMP thread.

    ann_faiss_reference.py FILE.faiss QUERIES.f32 DIMS K NPROBE EF OUT.i64

Writes the ids [queries, K] as little-endian int64, equal scores ordered by id as UForm orders them. NPROBE / EF 0 leave FAISS's value.
"""

import sys

import faiss
import numpy as np


def main() -> int:
    path, queries_path, dims, k, nprobe, ef, out = sys.argv[1:8]
    dims, k, nprobe, ef = int(dims), int(k), int(nprobe), int(ef)
    faiss.omp_set_num_threads(1)
    index = faiss.read_index(path)
    queries = np.fromfile(queries_path, dtype=np.float32).reshape(-1, dims)
    core = faiss.downcast_index(index)
    if isinstance(core, faiss.IndexPreTransform):
        core = faiss.downcast_index(core.index)
    if isinstance(core, faiss.IndexHNSW):
        # FAISS 1.7.3 sizes HNSW's candidate queue by the graph's own efSearch and ignores
        # SearchParametersHNSW's there, so the reference sets the graph's value: the knob that works.
        if ef:
            core.hnsw.efSearch = ef
        params = None
    elif isinstance(core, faiss.IndexIVF):
        params = faiss.SearchParametersIVF(nprobe=nprobe or core.nprobe)
    else:
        params = None
    scores, ids = index.search(queries, k, params=params)
    # FAISS leaves equal scores (equal codes) in heap order; UForm orders them by item.
    order = np.lexsort((ids, -scores), axis=1)
    np.take_along_axis(ids, order, 1).astype("<i8").tofile(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
