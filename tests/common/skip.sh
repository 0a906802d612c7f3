# How a shell test says it did not run (the shell side of tests/common/skip.h; source this file).
# skip_missing REASON: a dependency scripts/install-deps.sh installs is missing: exit 77 (skipped),
# or 1 under CI=true, where a skip would hide a broken install step.
# skip_class NAME: the CPU lacks the class the test is about: exit 77 everywhere.
skip_missing() {
  echo "skipped: $* (scripts/install-deps.sh installs it)"
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "CI=true: a missing dependency fails the test instead of skipping it"
    exit 1
  fi
  exit 77
}
skip_class() {
  echo "not exercised on this CPU: $1"
  exit 77
}
