#!/usr/bin/env bash
# Runs one zoo golden (zoo/NAME.test) through tests/cli/run_filecheck.sh.
#
#   run_zoo_golden.sh TESSERA FILECHECK ROOT TEST [--allow-pending]
#
# --allow-pending: when the kernel stops at a primitive whose rule is still
# pending ("not lowered yet (issue 12)": the value rules of
# backends/mosaic/vector_rules.cpp), report SKIP (77) naming it instead of failing.
set -u
TESSERA=$(realpath "$1") FILECHECK=$2 ROOT=$3 TEST=$4 ALLOW_PENDING=${5:-}
here=$(dirname "$(realpath "$0")")
example=$(sed -n 's@^# RUN: tessera emit mosaic \([^ ]*\).*@\1@p' "$TEST")
if [ "$ALLOW_PENDING" = --allow-pending ]; then
  err=$(cd "$ROOT" && "$TESSERA" emit mosaic "$example" 2>&1 >/dev/null)
  if [[ $err == *"not lowered yet (issue 12)"* ]]; then
    echo "skipped: $example waits for the value rules: $err" >&2
    exit 77
  fi
fi
exec "$here/../../cli/run_filecheck.sh" "$TESSERA" "$FILECHECK" "$ROOT" "$TEST"
