#!/usr/bin/env bash
# Installs the Debian packages tessera needs, only those missing.
set -euo pipefail
# clang (clang++ 14) is the second compiler CI builds with (.ci/run), and with
# libclang-rt-14-dev (libFuzzer, the sanitizers' runtimes) it builds the fuzz targets.
# graphviz draws `tessera graph`'s DOT output (dot -Tsvg), as README.md and the
# tutorial show and the docs check runs.
PKGS="meson ninja-build g++ clang libclang-rt-14-dev pkg-config libz3-dev libboost-graph-dev librange-v3-dev doctest-dev libbenchmark-dev
      libmimalloc-dev llvm-19-dev llvm-19-tools mlir-19-tools libmlir-19 python3-numpy
      pybind11-dev python3-dev ccache graphviz"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
