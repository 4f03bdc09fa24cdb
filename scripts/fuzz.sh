#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++, ASan + UBSan, -Dfuzz=true) and runs
# each for a while (docs/fuzzing.md). Prints one line per target (executions,
# exec/s, corpus size, outcome) and ends with "N passed, N failed" (one entry
# per target). Exits non-zero if any target found a bug.
#
#   scripts/fuzz.sh                    # every target for 60 s (the CI smoke run)
#   scripts/fuzz.sh --seconds 3600 run # one target for an hour
#   scripts/fuzz.sh --runs 1000000     # every target for 10^6 executions
#   scripts/fuzz.sh --setup            # only configure the build (CI then builds it with scripts/test.sh)
#
# Options: --seconds N | --runs N, --jobs J (targets run at once; default: the
# number of cores), --timeout S (one input; default 20), --rss-mb M (default 2048).
# BUILD_DIR picks the build (default build-fuzz). The corpora grow in
# BUILD_DIR/fuzz-corpus/TARGET across runs; seeds (examples/, the .tsr files of
# tests/ and what jvp, vmap and discharge make of the examples) are collected
# into BUILD_DIR/fuzz-seeds; crashing inputs land in BUILD_DIR/fuzz-artifacts,
# logs in BUILD_DIR/fuzz-logs.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-fuzz}
ALL_TARGETS="parse passes run prove import"
# The fuzz build: every library instrumented for coverage, under ASan + UBSan
# (-O1 keeps the build short; warnings stay errors, as in every build).
MESON_ARGS="-Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 -Ddebug=true -Dbench=false"

seconds=60 runs="" jobs=$(nproc) timeout=20 rss_mb=2048 setup_only=0 targets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; runs=""; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --rss-mb) rss_mb=$2; shift 2 ;;
    --setup) setup_only=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scripts/fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      case " $ALL_TARGETS " in *" $1 "*) ;; *) echo "scripts/fuzz.sh: no target $1 (targets: $ALL_TARGETS)" >&2; exit 2 ;; esac
      targets="$targets $1"; shift ;;
  esac
done
targets=${targets:-$ALL_TARGETS}

if [ ! -f "$BUILD/build.ninja" ]; then
  CXX=clang++ meson setup "$BUILD" --native-file llvm19.ini $MESON_ARGS || { echo "0 passed, 1 failed"; exit 1; }
fi
if ! meson configure "$BUILD" | grep -Eq '^ *fuzz +true'; then
  echo "scripts/fuzz.sh: $BUILD is not a fuzz build (-Dfuzz=true); pick another BUILD_DIR" >&2
  echo "0 passed, 1 failed"; exit 1
fi
[ $setup_only -eq 1 ] && exit 0
ninja -C "$BUILD" -j2 tools/tessera $(for t in $targets; do echo "fuzz/fuzz_$t"; done) >"$BUILD/fuzz-build.log" 2>&1 ||
  { tail -30 "$BUILD/fuzz-build.log"; echo "0 passed, 1 failed"; exit 1; }

# Seeds: the modules in git, and what the passes make of the examples (IR the
# examples alone do not have: tangents, a batch axis, grid loops).
seeds="$BUILD/fuzz-seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
for f in examples/*.tsr $(find tests -name '*.tsr' | sort); do
  cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"
done
for f in examples/*.tsr; do
  for p in jvp "vmap{axis_size=2}" "discharge,dce" vjp; do
    "$BUILD/tools/tessera" opt --passes="$p" "$f" >"$seeds/$(basename "$f" .tsr).$(echo "$p" | tr -cd 'a-z').tsr" 2>/dev/null ||
      rm -f "$seeds/$(basename "$f" .tsr).$(echo "$p" | tr -cd 'a-z').tsr"
  done
done

# The import target's seeds: Mosaic text, as JAX prints it (the corpus under
# tests/frontends/corpus/) and as `tessera emit mosaic` writes it.
mosaic_seeds="$BUILD/fuzz-seeds-mosaic"
rm -rf "$mosaic_seeds" && mkdir -p "$mosaic_seeds"
for f in $(find tests/frontends/corpus -name '*.mlir' -o -name '*.txt' | sort); do
  cp "$f" "$mosaic_seeds/$(echo "$f" | tr '/' '_')"
done
for f in examples/*.tsr; do
  "$BUILD/tools/tessera" emit mosaic "$f" >"$mosaic_seeds/$(basename "$f" .tsr).mlir" 2>/dev/null ||
    rm -f "$mosaic_seeds/$(basename "$f" .tsr).mlir"
done

mkdir -p "$BUILD/fuzz-artifacts" "$BUILD/fuzz-logs"
budget="-max_total_time=$seconds"
[ -n "$runs" ] && budget="-runs=$runs"
# UBSan stops at its first report, so that libFuzzer records the input.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
fuzz_one() {
  local t=$1
  local t_seeds=$seeds dict=fuzz/tsr.dict
  [ "$t" = import ] && t_seeds=$mosaic_seeds dict=fuzz/mlir.dict
  mkdir -p "$BUILD/fuzz-corpus/$t"
  "$BUILD/fuzz/fuzz_$t" "$BUILD/fuzz-corpus/$t" "$t_seeds" -dict=$dict $budget \
    -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
    -artifact_prefix="$BUILD/fuzz-artifacts/$t-" >"$BUILD/fuzz-logs/$t.log" 2>&1
  echo $? >"$BUILD/fuzz-logs/$t.rc"
}
running=0
for t in $targets; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

passed=0 failed=0
for t in $targets; do
  log="$BUILD/fuzz-logs/$t.log"
  rc=$(cat "$BUILD/fuzz-logs/$t.rc" 2>/dev/null || echo 1)
  execs=$(grep -oE 'stat::number_of_executed_units: +[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  rate=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  corpus=$(ls "$BUILD/fuzz-corpus/$t" | wc -l)
  line="fuzz_$t: ${execs:-?} executions, ${rate:-?}/s, corpus $corpus inputs"
  if [ "$rc" -eq 0 ]; then
    echo "$line: ok"
    passed=$((passed + 1))
  else
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    echo "$line: FAILED (exit $rc): $(grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error|tessera fuzz_' "$log")"
    echo "  input: ${artifact:-none}; log: $log"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
