#!/bin/sh
# run_emulated_avx2.sh PROGRAM [ARGS...]: runs a kernel test under QEMU's user-mode emulator with
# `-cpu max` (AVX2, FMA and F16C, no AVX-512), as on an AVX2-only CPU such as a Zen 3. Any AVX-512
# instruction reached from the Haswell class's code dies there of SIGILL. The emulator is QEMU 10,
# which scripts/install-deps.sh unpacks into /opt/uform/qemu (as for `make test-avx2`): Debian 12's
# own qemu-user 7.2 emulates AVX2 gathers wrongly. Passes when the program passes, ran the Haswell
# class, and ran no AVX-512 class (which would mean the emulator offered AVX-512 and proved nothing).
set -u
emulator=/opt/uform/qemu/usr/bin/qemu-x86_64
if [ ! -x "$emulator" ]; then
  echo "FAIL: $emulator is missing (scripts/install-deps.sh fetches QEMU 10 there)"
  exit 1
fi
output=$("$emulator" -cpu max "$@" 2>&1)
status=$?
# The emulated CPU's "not exercised on this CPU" line speaks of the emulator, not of the machine the
# suite runs on: reworded, so `make test`'s summary does not count it (scripts/test_summary.py).
printf '%s\n' "$output" | tail -n 5 | sed 's/^not exercised on this CPU: /not exercised on the emulated AVX2 CPU: /'
if [ $status -ne 0 ]; then echo "FAIL: exit status $status under $emulator -cpu max"; exit 1; fi
printf '%s\n' "$output" | grep -q '^exercised: intel_haswell$' || { echo "FAIL: the Haswell class did not run"; exit 1; }
if printf '%s\n' "$output" | grep -q -E '^exercised: (intel_skylake|intel_icelake|amd_genoa)$'; then
  echo "FAIL: the emulator offered AVX-512, so this run proves nothing about an AVX2-only CPU"; exit 1
fi
echo "PASS: the Haswell class ran under emulated AVX2 without AVX-512"
