#!/usr/bin/env bash
# The README's second command: build and run every test. The last line is
# "N passed, N failed" (doctest cases plus one per FileCheck/CLI test).
# BUILD_DIR and MESON_ARGS pick another build (the sanitizer build in .ci/run).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  # llvm19.ini: LLVM 19's llvm-config for the ptx/llvm backend (Debian's llvm-config is LLVM 14).
  meson setup "$BUILD" --native-file llvm19.ini ${MESON_ARGS:-} || { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$BUILD" -j2 || { echo "0 passed, 1 failed"; exit 1; }
meson test -C "$BUILD" --print-errorlogs --num-processes 2 --timeout-multiplier 3 >"$BUILD/test-output.txt" 2>&1
rc=$?
grep -E "^ *[0-9]+/[0-9]+ |FAIL|ERROR" "$BUILD/test-output.txt" | grep -v " OK " | head -40
/usr/bin/python3 scripts/summarize_tests.py "$BUILD/meson-logs/testlog.json"
sum=$?
[ $rc -eq 0 ] && [ $sum -eq 0 ]
