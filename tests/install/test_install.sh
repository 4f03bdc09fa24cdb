#!/usr/bin/env bash
# The installed library (docs/embedding.md): `meson install` into a temporary
# --destdir, then check what was installed and build and run the programs of
# examples/embedding/ against it with the system c++ and pkg-config only.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR SANITIZE   (SANITIZE: b_sanitize)
set -eu -o pipefail
build=$1 src=$2 sanitize=$3
# A sanitized libtessera.so needs its runtime loaded before the program's
# own: linking the programs as the build does is not what the test checks.
if [ "$sanitize" != none ]; then
  echo "SKIP: the sanitizer build (-Db_sanitize=$sanitize) installs an instrumented library"
  exit 77
fi
for tool in c++ pkg-config; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done

tmp=$(mktemp -d /tmp/tessera-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
meson install -C "$build" --destdir "$root" --no-rebuild --quiet

fail() { echo "FAIL: $*"; exit 1; }
pc=$(find "$root" -name tessera.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || fail "no tessera.pc installed"
export PKG_CONFIG_PATH=${pc%/*} PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs tessera)
# pkg-config puts the sysroot before the paths it prints, variables included.
libdir=$(pkg-config --variable=libdir tessera)
include=$(pkg-config --variable=includedir tessera)/tessera
case $libdir in "$root"/*) ;; *) fail "pkg-config's libdir $libdir is outside the destdir" ;; esac
echo "pkg-config --cflags --libs tessera: $flags"

# Every header of the library folders is installed, except the internal ones
# and the LLVM backend's (backends/llvm/, built only with LLVM 19).
internal='verify/check.h runtime/kernels/util.h transforms/discharge_internal.h analysis/cost/walk.h '\
'frontends/mosaic/mlir_lexer.h frontends/mosaic/mlir_parser.h frontends/mosaic/pretty_forms.h '\
'frontends/mosaic/body_translator.h frontends/mosaic/signature_import.h frontends/mosaic/value_rules_util.h'
missing=0
while read -r h; do
  case " $internal " in *" $h "*) continue ;; esac
  case $h in backends/llvm/*) continue ;; esac  # needs LLVM 19's headers: not the installed API
  [ -f "$include/$h" ] || { echo "not installed: $h"; missing=1; }
done < <(cd "$src" && find ir verify runtime analysis transforms interpreter backends frontends -name '*.h' | sort)
[ $missing = 0 ] || fail "public headers missing from the install"
for h in $internal; do [ ! -e "$include/$h" ] || fail "internal header $h installed"; done
[ -x "$root"/*/bin/tessera ] || [ -n "$(find "$root" -path '*/bin/tessera' -type f)" ] || fail "no tessera executable"
[ -z "$(find "$root" -name 'test_*' -o -name 'bench_*' -o -name 'libdoctest*')" ] || fail "tests or benchmarks installed"

# Each installed header compiles on its own against the install: none
# includes a header that was left out.
(cd "$include" && find . -name '*.h' | sed 's|^\./||' | sort) | while read -r h; do
  echo "#include <tessera/$h>"
done > "$tmp/all_headers.cpp"
c++ -std=c++20 -fsyntax-only $(pkg-config --cflags tessera) "$tmp/all_headers.cpp"

# Every ```cpp block of docs/embedding.md is a verbatim part of the programs.
python3 - "$src" <<'PY'
import pathlib, re, sys
src = pathlib.Path(sys.argv[1])
code = "".join(p.read_text() for p in sorted((src / "examples/embedding").glob("*.cpp")))
blocks = re.findall(r"^```cpp\n(.*?)^```", (src / "docs/embedding.md").read_text(), re.S | re.M)
stale = [b for b in blocks if b not in code]
for b in stale:
    print("docs/embedding.md: this cpp block is not part of examples/embedding/*.cpp:\n" + b)
sys.exit(1 if stale or not blocks else 0)
PY

# The installed executable runs.
tessera=$(find "$root" -path '*/bin/tessera' -type f)
"$tessera" verify "$src/examples/add.tsr"

# The programs of docs/embedding.md, built against the install only.
cd "$tmp"
for prog in hello register; do
  c++ -std=c++20 -Wall -Wextra -Werror -o "$prog" "$src/examples/embedding/$prog.cpp" $flags
done
out=$(LD_LIBRARY_PATH=$libdir ./hello "$src/examples/add.tsr")
echo "$out"
[ "$out" = "out = 3, tangent = 7" ] || fail "hello printed '$out'"
out=$(LD_LIBRARY_PATH=$libdir ./register)
echo "$out"
grep -q "log1p" <<<"$out" || fail "expand_softplus did not rewrite softplus"
grep -q "^bad.tsr:2:3: error: softplus: expects a floating dtype, got i32\[4\]$" <<<"$out" || fail "no located shape-rule error"
[ "$(tail -n 1 <<<"$out")" = ok ] || fail "register's results differ from the expected ones"
echo "installed library: ok"
