#!/usr/bin/env bash
# Runs one CLI golden test: the `RUN:` line of TEST (a shell command in which
# `tessera` is the binary under test and %s is TEST itself), from the project
# root, then checks its output with FileCheck against TEST's CHECK lines and
# its exit status against the `EXIT:` line (default 0).
#
#   run_filecheck.sh TESSERA FILECHECK SOURCE_ROOT TEST
#
# `RUN:` and `EXIT:` may follow `#` or `//`; stderr is checked only when the
# RUN line redirects it (2>&1). An empty FILECHECK (meson found none) makes
# the test report SKIP (exit status 77) rather than pass unchecked.
set -u
TESSERA=$(realpath "$1") FILECHECK=$2 ROOT=$3 TEST=$(realpath "$4")
if [ -z "$FILECHECK" ]; then
  echo "$TEST: skipped: FileCheck not found (install llvm-19-tools and reconfigure)" >&2
  exit 77
fi
tessera() { "$TESSERA" "$@"; }
export -f tessera 2>/dev/null || true
run=$(sed -n 's@^[#/ ]*RUN: *@@p' "$TEST")
want=$(sed -n 's@^[#/ ]*EXIT: *@@p' "$TEST")
want=${want:-0}
if [ -z "$run" ]; then
  echo "$TEST: no RUN: line" >&2
  exit 2
fi
cd "$ROOT" || exit 2
out=$(eval "${run//%s/$TEST}")
rc=$?
printf '%s\n' "$out" | "$FILECHECK" --dump-input=fail "$TEST" || {
  echo "---- command: ${run//%s/$TEST}" >&2
  exit 1
}
if [ "$rc" != "$want" ]; then
  echo "$TEST: exit status $rc, expected $want" >&2
  printf '%s\n' "$out" >&2
  exit 1
fi
