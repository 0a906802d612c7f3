"""One member of a K-member IVF build, for bench/ann_ondisk_memory.sh's "members" mode: measures the
memory of the approximate structure's build alone (uform_index_ann_build_members), apart from the
encoding or the all-gather of the rows that come before it in `uform index --processes K`.

Usage: ann_members_memory.py RANK COUNT FOLDER RECIPE ONDISK. FOLDER holds big.npy (the rows) and
base.index (the whole index, written without a structure: member 0 passes it). Every member makes
the builder of its block of rows [N·r/K, N·(r+1)/K), then resets its peak resident size (Linux's
/proc/self/clear_refs, "5") and builds the structure; it prints one line: its resident size just
before (the rows of its block and the libraries), the peak during the build, and the difference,
which is what the build itself held at most.
"""

import sys
from ctypes import addressof, c_void_p, byref

import numpy as np

import uform
from uform import _structs as S
from uform._index_members import ann_options, mesh_place
from uform._index_vectors import fill_builder
from uform._library import lib


def status_kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def main(rank, count, folder, recipe, ondisk):
    matrix = np.load(f"{folder}/big.npy")
    rows = matrix.shape[0]
    first, end = rows * rank // count, rows * (rank + 1) // count
    own = fill_builder(matrix[first:end], paths=[str(row) for row in range(first, end)], model=None, scalar="f32",
                       normalize=False, modality="image", function="bench")
    del matrix  # only the builder's copy of the block stays
    options = ann_options(recipe, 32768, 1, "bench", ondisk == "1")
    with uform.Executor.for_ram(threads=1) as executor:
        with uform.Mesh.bootstrap(executor, rank, count, directory=folder, job=f"{recipe.replace(',', '_')}-{ondisk}", timeout=120,
                                  address="127.0.0.1") as mesh:
            handle = mesh_place(mesh, "bench")[0]
            whole = c_void_p()
            outcome = S.Outcome()
            if rank == 0 and lib.uform_index_open(f"{folder}/base.index".encode(), None, byref(whole), addressof(outcome)):
                sys.exit(outcome.message.decode())
            target = f"{folder}/{recipe.replace(',', '_')}-{ondisk}.faiss".encode()
            before = status_kib("VmRSS")
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")
            status = lib.uform_index_ann_build_members(whole.value, own, handle, target, addressof(options),
                                                       addressof(outcome))
            peak = status_kib("VmHWM")
            lib.uform_index_free(whole.value)
    lib.uform_index_builder_free(own)
    if status:
        sys.exit(outcome.message.decode())
    print(f"{recipe} {'disk' if ondisk == '1' else 'mem'} member {rank} of {count}: {end - first} rows, "
          f"resident before {before / 1024:.0f} MiB, peak during the build {peak / 1024:.0f} MiB, "
          f"added {(peak - before) / 1024:.0f} MiB")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
