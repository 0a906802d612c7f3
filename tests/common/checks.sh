# Sourced by the command-line tests: a temporary folder $work (removed on exit), and
#   check COMMAND...           runs it, counting a pass or a failure (named on stderr)
#   contains FILE PATTERN      grep -q, for check
#   status_is WANT COMMAND...  runs it: true when it exits WANT (else says what it got)
#   finish                     prints the tally; its status is the test's (0 when nothing failed)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }
contains() { grep -q -- "$2" "$1"; }
status_is() { local want=$1; shift; "$@"; local got=$?; [ "$got" -eq "$want" ] || { echo "exit $got, expected $want: $*" >&2; return 1; }; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; }
