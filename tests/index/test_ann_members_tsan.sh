#!/usr/bin/env bash
# FAISS's merge of the members' lists under ThreadSanitizer, with an OpenMP runtime TSan can see.
# With GNU libgomp, TSan reports a race inside FAISS's merge_from on member 0 (add_entries' memcpy on a
# libgomp worker against the lists' destructor on the calling thread): libgomp is not instrumented, so
# TSan never sees the barrier that ends the parallel region. Here the same build runs on LLVM's OpenMP
# runtime (libomp, which also answers libgomp's GOMP_* entry points) with Archer, its tool that hands
# TSan OpenMP's synchronization; ignore_noninstrumented_modules keeps reports out of the runtime itself.
# Then the build must pass with no report at all. First the same run on libgomp must report at least
# once: that shows the scenario runs FAISS's parallel regions on more than one thread (a run that
# never formed a team would pass on either runtime and prove nothing). Only in a TSan build.
#   test_ann_members_tsan.sh UFORM_CLI PYTHON WORK_DIR
set -uo pipefail
cli=$1 python=$2 work=$3
libomp=/usr/lib/llvm-14/lib/libomp.so.5 archer=/usr/lib/llvm-14/lib/libarcher.so
passed=0 failed=0
for file in "$libomp" "$archer"; do
  [ -f "$file" ] || { echo "missing $file (scripts/install-deps.sh installs libomp-14-dev)"; echo "0 passed, 1 failed"; exit 1; }
done
mkdir -p "$work" && rm -f "$work"/members.index "$work"/members.faiss
"$python" -c "
import numpy as np
rng = np.random.default_rng(1)
v = rng.standard_normal((2000, 16)).astype(np.float32)
np.save('$work/vectors.npy', v / np.linalg.norm(v, axis=1, keepdims=True))" || { echo "0 passed, 1 failed"; exit 1; }
OMP_NUM_THREADS=2 timeout 300 "$cli" index --vectors "$work/vectors.npy" --out "$work/members.index" \
  --ann=IVF4,Flat --processes 2 > "$work/gomp.txt" 2>&1
gomp=$(grep -c "WARNING: ThreadSanitizer" "$work/gomp.txt")
if [ "$gomp" -ge 1 ]; then passed=$((passed + 1)); else
  echo "on libgomp the run reported nothing: no OpenMP team formed, or TSan now sees libgomp's barrier"; failed=$((failed + 1)); fi
rm -f "$work"/members.index "$work"/members.faiss
TSAN_OPTIONS="${TSAN_OPTIONS:-} ignore_noninstrumented_modules=1" LD_PRELOAD="$libomp" OMP_TOOL_LIBRARIES="$archer" ARCHER_OPTIONS=verbose=1 \
  OMP_NUM_THREADS=2 timeout 300 "$cli" index --vectors "$work/vectors.npy" --out "$work/members.index" \
  --ann=IVF4,Flat --processes 2 > "$work/log.txt" 2>&1
status=$?
reports=$(grep -c "WARNING: ThreadSanitizer" "$work/log.txt")
if grep -q "Archer detected OpenMP application with TSan" "$work/log.txt"; then passed=$((passed + 1)); else
  echo "Archer did not attach (its line is missing): the run proves nothing"; failed=$((failed + 1)); fi
if [ "$status" -eq 0 ] && [ "$reports" -eq 0 ] && [ -s "$work/members.faiss" ]; then passed=$((passed + 1)); else
  echo "the two-member build exited $status with $reports ThreadSanitizer reports:"; tail -40 "$work/log.txt"; failed=$((failed + 1)); fi
echo "two members, IVF4,Flat: $gomp ThreadSanitizer reports on libgomp; on LLVM's OpenMP with Archer exit $status, $reports reports"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
