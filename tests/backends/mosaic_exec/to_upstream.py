#!/usr/bin/python3
"""Prints MLIR text with every `tpu` op replaced through upstream_table.py.

  to_upstream.py [FILE]      (FILE, or stdin when absent or `-`)

For plain functions (not Pallas kernels: `func.func` over vectors, such as the
single lowered value ops of tests/backends/test_mosaic_vector.cpp), so that
those tests trust the same one table as mosaic_exec.py. The text is first
re-printed by `mlir-opt-19 --allow-unregistered-dialect` (after
`#tpu.memory_space<X>` -> `"X"`), which verifies it and puts one op per line,
`tpu` ops in generic form, as the table reads them. The upstream module goes
to stdout.

Exit status: 0; 1 with a message on stderr (a `tpu` op without a row is named:
"`tpu.reciprocal` has no upstream replacement"); 77 when mlir-opt-19 is missing.
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upstream_module  # noqa: E402
from mlir_text import TextError  # noqa: E402

SKIP = 77


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ('-h', '--help')):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = argv[1] if len(argv) == 2 and argv[1] != '-' else None
    where = path or '<stdin>'
    if shutil.which('mlir-opt-19') is None:
        print('SKIP: mlir-opt-19 is missing (scripts/install-deps.sh installs mlir-19-tools)', file=sys.stderr)
        return SKIP
    try:
        text = open(path, encoding='utf-8').read() if path else sys.stdin.read()
    except OSError as e:
        print(f'to_upstream: {where}: error: {e}', file=sys.stderr)
        return 1
    text = re.sub(r'#tpu\.memory_space<([a-z_]+)>', r'"\1"', text)
    p = subprocess.run(['mlir-opt-19', '--allow-unregistered-dialect', '-'], input=text,
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f'to_upstream: {where}: error: mlir-opt-19 rejects the text:\n{p.stderr.strip()}', file=sys.stderr)
        return 1
    try:
        upstream = upstream_module.convert_functions(p.stdout)
    except TextError as e:
        print(f'to_upstream: {where}: error: {e}', file=sys.stderr)
        return 1
    sys.stdout.write('module {\n' + upstream + '\n}\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
