#!/usr/bin/env bash
# `make test-avx2`: the C tests that dispatch by CPU class, on an emulated AVX2-only CPU. QEMU's user-mode emulator
# (`-cpu max`: AVX2, FMA and F16C, no AVX-512; fetched by scripts/install-deps.sh) runs every test
# executable through CTest's emulator hook, so CPU detection answers the Haswell class and any
# AVX-512 instruction dies of SIGILL, as on an AMD Zen 3. The list below holds the tests that walk the
# classes or dispatch through the library's kernels (kernels, signal, search, session, model, index,
# media, the executor); tests that are Python or shell scripts would run natively and are not in it
# (CTest adds the fixtures they need). About 20 minutes on the two cores of
# an AVX-512 machine (2026-12-06: test_gemm_gelu 6, test_nn_attention 5, test_nn_attention_backward_bf16 5,
# test_model 4, two at a time), before those three tests thinned what the native run covers (UFORM_TEST_EMULATED,
# docs/testing.md): 218, 267 and 247 s alone, at a load of 3.7 on 2 cores. On a CPU without
# AVX-512 the stage has nothing to emulate: `make test` already ran everything on the real thing.
#
# The binaries are `make test`'s own (BUILD_DIR, normally build/): the emulated run needs no build of
# its own, only CTest files that name the emulator, so the script configures BUILD_DIR with the
# emulator hook and the scaled timeouts, and configures it back on exit, however it exits (the
# Makefile's `configure` also clears both, so an interrupted run cannot leave `make test` emulated).
# Afterwards it checks the classes the tests say they ran ("exercised: CLASS"): the Haswell class
# must have run and no AVX-512 class, or the emulator offered AVX-512 and the stage proved nothing.
# Usage: scripts/test-avx2.sh BUILD_DIR [JOBS]
set -euo pipefail
build=$1 jobs=${2:-2}
qemu=/opt/uform/qemu/usr/bin/qemu-x86_64
if ! grep -q avx512f /proc/cpuinfo; then
  echo "test-avx2: this CPU has no AVX-512: make test ran every test on an AVX2-class CPU already"
  exit 0
fi
[ -x "$qemu" ] || { echo "test-avx2: $qemu is missing (scripts/install-deps.sh fetches it)" >&2; exit 1; }
[ -f "$build/CMakeCache.txt" ] || { echo "test-avx2: $build is not configured (make build first)" >&2; exit 1; }
restore() { cmake -S . -B "$build" -UCMAKE_CROSSCOMPILING_EMULATOR -UUFORM_TEST_TIMEOUT_SCALE > /dev/null; }
trap restore EXIT
cmake -S . -B "$build" "-DCMAKE_CROSSCOMPILING_EMULATOR=$qemu;-cpu;max" -DUFORM_TEST_TIMEOUT_SCALE=15 > /dev/null
cmake --build "$build" -j"$jobs"
echo "test-avx2: $("$qemu" --version | head -1) -cpu max (the summary names the classes it lacks)"
tests='test_core|test_arena|test_executor|test_gemm|test_gemm_gelu|test_gemm_output|test_gemm_pack|test_gemm_accumulate|test_gemm_rounding|test_gemm_i8'
tests+='|test_nn_attention|test_nn_attention_bf16|test_nn_attention_backward_bf16|test_nn_ops|test_nn_convert'
tests+='|test_nn_softmax|test_nn_exp|test_search_kernels|test_signal_resize|test_signal_fft|test_signal_mel'
tests+='|test_signal_resample|media_image|media_audio|test_model|test_session_random_serial|test_session_random_haswell'
tests+='|test_session_random_skylake|test_session_random_genoa|test_index_api|test_index_search_b1'
tests+='|test_signal_pil|test_gemm_activation|test_published_errors|test_index_vectors|test_index_search_screen'
# Not here: test_serve_batcher. Its batching logic does not depend on the class and its encodes are
# test_model's; under the emulator, where every multiply-add is a QEMU helper call, it took over
# 7 minutes of the stage even with a sixth of its jobs (2026-12-06).
# Tests with dense numeric sweeps thin them out under the emulator (test_gemm_gelu: every 8th value).
# Every name in the list must select its test: a renamed or removed test fails the stage here
# instead of leaving it green with less in it (and --no-tests=error refuses an empty selection).
missing=()
for name in ${tests//|/ }; do
  # grep -c reads all of ctest's output: grep -q would stop early, and pipefail would then count
  # ctest's SIGPIPE as a missing test.
  [ "$(ctest --test-dir "$build" -N -R "^$name\$" | grep -c '^ *Test *#')" -ge 1 ] || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-avx2: the list names tests CTest does not have: ${missing[*]}" >&2
  exit 1
fi
export UFORM_TEST_EMULATED=1
scripts/run-tests.sh "$build" -R "^($tests)\$" --no-tests=error -j"$jobs"
# The classes the tests ran, from CTest's JUnit file (run-tests.sh writes it).
/usr/bin/python3 - "$build/junit.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ElementTree
ran = set()
for case in ElementTree.parse(sys.argv[1]).getroot().iter("testcase"):
    out = case.find("system-out")
    for line in ("".join(out.itertext()) if out is not None else "").splitlines():
        if line.startswith("exercised: "):
            ran.add(line[len("exercised: "):].strip())
wide = sorted(ran & {"intel_skylake", "intel_icelake", "amd_genoa", "intel_sapphire", "intel_granite", "intel_diamond"})
if "intel_haswell" not in ran or wide:
    print(f"test-avx2: the emulated tests ran {sorted(ran) or 'no class they named'}: the Haswell class must "
          "run and no AVX-512 class (else the emulator offered AVX-512 and this stage proved nothing)", file=sys.stderr)
    sys.exit(1)
print(f"test-avx2: classes the tests ran under the emulator: {', '.join(sorted(ran))}")
EOF
