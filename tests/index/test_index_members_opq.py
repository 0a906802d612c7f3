"""OPQ in front of an IVF built by K members (issue 35, part 3): the same bytes for K = 1 and 3.

Not in `make test`: FAISS's OPQ training wants at least 9,984 rows and takes 10–35 s on two shared
cores even at 8 dims. Run by `make test-ann-members-opq` (UFORM_PYTEST_CLI set; loopback only).
The file is also opened and searched with Debian's python3-faiss against NumPy's exact best item.
(Run time: 24 to 81 s on the shared 2-core machine under load, 2026-12-06.)
"""

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_index_members_ivf import build, clustered  # noqa: E402


def test_members_build_the_same_opq_structure(tmp_path):
    """The rotation is trained on member 0 and travels in the trained bytes; the lists merge beneath it."""
    import faiss

    rows, queries = clustered(36, 9984, 8, 30)
    np.save(tmp_path / "rows8.npy", rows)
    recipe = "OPQ2_8,IVF16,PQ2np"
    files = [build(tmp_path, "opq", k, recipe, "rows8.npy") for k in (1, 3)]
    one, three = (f.with_suffix(".faiss").read_bytes() for f in files)
    assert len(one) > 9984 and three == one
    structure = faiss.read_index(str(files[1].with_suffix(".faiss")))
    assert structure.ntotal == 9984
    faiss.extract_index_ivf(structure).nprobe = 16
    _, ids = structure.search(queries, 10)
    # Two code bytes per vector are coarse: NumPy's exact best item is among the ten for a quarter of
    # the queries at least — chance would be 10 in 9,984 — so the structure answers for these rows.
    exact_best = (queries.astype(np.float64) @ rows.astype(np.float64).T).argmax(axis=1)
    assert np.mean([exact_best[q] in ids[q] for q in range(len(queries))]) >= 0.25
