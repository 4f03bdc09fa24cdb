#!/usr/bin/env bash
# One meson test of the Mosaic execution harness (mosaic_exec.py); see README.md.
#
#   run_test.sh emitted  TESSERA ROOT KERNEL                   tessera emit mosaic examples/KERNEL.tsr, run, compare
#   run_test.sh fixture  TESSERA ROOT KERNEL FIXTURE           run the checked-in Mosaic text FIXTURE instead
#   run_test.sh mutated  TESSERA ROOT KERNEL FIXTURE FROM TO   FIXTURE with the text FROM replaced by TO must
#                                                              run and MISMATCH (the harness catches a wrong kernel)
#   run_test.sh refused  TESSERA ROOT KERNEL FIXTURE FROM TO MESSAGE
#                                                              the mutated FIXTURE must be refused with MESSAGE
#
# Exit 77 (meson's skip) when mlir-opt-19, mlir-cpu-runner-19, their runner
# libraries or numpy are missing; a failing `tessera emit mosaic` is a failure.
set -u
MODE=$1 TESSERA=$(realpath "$2") ROOT=$3 KERNEL=$4
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: numpy is missing for $PY (apt-get install python3-numpy)" >&2
  exit 77
fi
for tool in mlir-opt-19 mlir-cpu-runner-19; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is missing (scripts/install-deps.sh installs mlir-19-tools and libmlir-19)" >&2
    exit 77
  fi
done
cd "$ROOT" || exit 2
TSR=examples/$KERNEL.tsr
# A kernel written only for the harness (fixtures/table_rows.tsr) lives next to its fixture.
[ -f "$HERE/fixtures/$KERNEL.tsr" ] && TSR=$HERE/fixtures/$KERNEL.tsr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
harness() { "$PY" "$HERE/mosaic_exec.py" --tessera "$TESSERA" --tsr "$TSR" "$@"; }

case $MODE in
  emitted)
    if ! "$TESSERA" emit mosaic "$TSR" > "$work/$KERNEL.mlir"; then
      echo "FAIL: tessera emit mosaic $TSR failed" >&2
      exit 1
    fi
    harness --mosaic "$work/$KERNEL.mlir" ;;
  fixture)
    harness --mosaic "$HERE/fixtures/$5" ;;
  mutated|refused)
    FROM=$6 TO=$7
    if ! grep -qF -- "$FROM" "$HERE/fixtures/$5"; then
      echo "FAIL: fixtures/$5 does not contain '$FROM'" >&2
      exit 1
    fi
    "$PY" -c 'import sys; t = open(sys.argv[1]).read(); open(sys.argv[2], "w").write(t.replace(sys.argv[3], sys.argv[4]))' \
      "$HERE/fixtures/$5" "$work/$5" "$FROM" "$TO"
    if [ "$MODE" = mutated ]; then
      harness --mosaic "$work/$5" --expect-mismatch
    else
      out=$(harness --mosaic "$work/$5" 2>&1)
      rc=$?
      printf '%s\n' "$out"
      if [ $rc -ne 1 ] || ! grep -qF -- "$8" <<< "$out"; then
        echo "FAIL: expected exit 1 and the message '$8' (got exit $rc)" >&2
        exit 1
      fi
    fi ;;
  *)
    echo "run_test.sh: unknown mode $MODE" >&2
    exit 2 ;;
esac
