#!/bin/bash
# Peak memory of IVF builds with the inverted lists in memory and on disk (--ann-ondisk), the
# figures of docs/indexes.md ("On-disk lists", measured). Usage, from the repository root after
# building build-h: bench/ann_ondisk_memory.sh [ROWS] [RECIPE...] (default 200000 IVF256,Flat
# IVF1024,PQ16np). Needs /usr/bin/python3 with NumPy; writes into a temporary folder it removes.
# Each line: the run, then "/usr/bin/time -f %e_s_%M_KiB" of it. "build only" is the library call
# uform_index_ann_build alone from Python (its baseline, Python with the index open, is printed
# first); "--from" is `uform index --from` (the build, then the command line's open of the result);
# "--vectors K=k" the whole `uform index --vectors --ann` run with --processes k (0: no mesh), whose
# peak is the largest member's.
#
# bench/ann_ondisk_memory.sh members [ROWS] [RECIPE...] (default 400000 IVF256,Flat IVF1024,PQ16np)
# measures each member of a K = 2 build of the structure alone instead (bench/ann_members_memory.py:
# uform_index_ann_build_members with the peak resident size reset just before it, so the encoding
# and the all-gather of the rows, which hold the whole index on every member, do not hide it), with
# the lists in memory and on disk; the line for member 1 is a member other than 0's. BUILD=folder
# (default build-h) loads another build's library, such as one of an older commit (before/after).
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-h}
U=$build/tools/uform
export UFORM_LIBRARY=$build/libuform.so.4 PYTHONPATH=$root/python
members=0
if [ "${1:-}" = members ]; then members=1; shift; fi
rows=${1:-$([ $members = 1 ] && echo 400000 || echo 200000)}
shift || true
recipes=${*:-IVF256,Flat IVF1024,PQ16np}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
T="/usr/bin/time -f %e_s_%M_KiB"
/usr/bin/python3 -c "
import numpy as np
g = np.random.default_rng(7); c = g.standard_normal((500, 64)); x = c[g.integers(0, 500, $rows)] + 0.3 * g.standard_normal(($rows, 64))
x /= np.linalg.norm(x, axis=1, keepdims=True); np.save('big.npy', x.astype(np.float32))"
if [ $members = 1 ]; then
  "$U" index --vectors big.npy --out base.index --quiet
  echo "$rows x 64, K = 2 members, the structure's build alone (bench/ann_members_memory.py), $build"
  for recipe in $recipes; do
    for on in 0 1; do
      pids=""
      for r in 0 1; do
        /usr/bin/python3 "$root/bench/ann_members_memory.py" $r 2 "$work" "$recipe" $on > member$r.txt &
        pids="$pids $!"
      done
      wait $pids
      cat member0.txt member1.txt
    done
  done
  uptime
  exit 0
fi
cat > build_only.py <<'PY'
import sys
from ctypes import addressof
import uform
from uform import _data_structs as D, _structs as S
from uform._library import lib
index = uform.Index.open(sys.argv[1])
if sys.argv[3] != "none":
    options, outcome = D.IndexAnnOptions(), S.Outcome()
    options.recipe, options.train_rows, options.threads, options.ondisk = sys.argv[2].encode(), 32768, 1, int(sys.argv[3])
    if lib.uform_index_ann_build(index._use("build"), sys.argv[1].replace(".index", ".faiss").encode(),
                                 addressof(options), addressof(outcome)) != 0:
        sys.exit(outcome.message.decode())
PY
"$U" index --vectors big.npy --out base.index --quiet
echo "$rows x 64, Python with the index open (baseline): $( { $T /usr/bin/python3 build_only.py base.index x none; } 2>&1 | tail -1)"
for recipe in $recipes; do
  name=${recipe//,/_}
  for mode in mem disk; do
    flag=""; on=0
    if [ $mode = disk ]; then flag=--ann-ondisk; on=1; fi
    mkdir -p b$mode-$name f$mode-$name
    cp base.index b$mode-$name/X.index; cp base.index f$mode-$name/X.index
    echo "$recipe build only $mode: $( { $T /usr/bin/python3 build_only.py b$mode-$name/X.index "$recipe" $on; } 2>&1 | tail -1)"
    echo "$recipe --from $mode: $( { $T "$U" index --from f$mode-$name/X.index --ann="$recipe" --ann-threads 1 --ann-train 32768 $flag --quiet; } 2>&1 | tail -1)"
    for k in 0 1 2; do
      mesh=""; [ $k -gt 0 ] && mesh="--processes $k"
      mkdir -p v$k$mode-$name
      echo "$recipe --vectors K=$k $mode: $( { $T "$U" index --vectors big.npy --out v$k$mode-$name/X.index --ann="$recipe" --ann-threads 1 --ann-train 32768 $mesh $flag --quiet; } 2>&1 | tail -1)"
    done
  done
  cmp v0disk-$name/X.ivfdata v2disk-$name/X.ivfdata && cmp v0disk-$name/X.faiss v2disk-$name/X.faiss && echo "$recipe: K = 0 and 2 wrote the same on-disk pair"
done
uptime
