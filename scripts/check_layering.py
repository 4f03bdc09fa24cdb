#!/usr/bin/env python3
"""Checks that the code's includes and meson's libraries follow the layering.

The graph is the table in docs/architecture.md ("The library graph", the
```text block after the `layering-table` marker): one line per library folder,
`FOLDER  DEP DEP ...`, its direct dependencies. Two checks:

- includes: every `#include "FOLDER/..."` line of every .h / .cpp file in a
  library folder names a header of its own library or of one the table lets
  it reach (its dependencies, theirs, and so on). A file belongs to the
  longest table folder its path starts with (analysis/cost/ before
  analysis/). A library may not include the folders above every library
  (tools/, python/, fuzz/, bench/, tests/, examples/), which may include any.
- meson: each library folder's meson.build declares `NAME_dep =
  declare_dependency(... dependencies : [...])`; the tessera `*_dep`s listed
  there are exactly the table's dependencies of that folder.

So a wrong-way include, a dependency meson does not declare, or a table the
code no longer matches fails the meson test `layering`. Before the real tree,
the checker runs on a small made-up tree with a wrong-way include and must
report it (so a checker that finds nothing fails too).

Usage: check_layering.py [SOURCE_ROOT]   (default: the repository of this script)
Prints one line per problem, `FILE:LINE: ...`; exits 1 if there is any.
"""
import os
import pathlib
import re
import sys

MARKER = "<!-- layering-table"
# The folders above every library: they may include any library.
TOP = {"tools", "python", "fuzz", "bench", "tests", "examples"}
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def read_table(architecture_md):
    """{folder: [direct dependencies]} from the page's layering table."""
    lines = architecture_md.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    table = {}
    for line in lines[fence + 1:]:
        if line.startswith("```"):
            break
        words = line.split()
        if not words or words[0] == "library":
            continue
        table[words[0]] = [w for w in words[1:] if w != "-"]
    return table


def reachable(table):
    """{folder: the folders it may include}: itself and everything below it."""
    out = {}

    def walk(f):
        if f not in out:
            out[f] = {f}
            for d in table[f]:
                out[f] |= walk(d)
        return out[f]

    for f in table:
        walk(f)
    return out


def library_of(path, table):
    """The table folder `path` belongs to (longest prefix), a TOP folder, or None."""
    best = None
    for f in table:
        if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    if best is None and path.split("/", 1)[0] in TOP:
        return path.split("/", 1)[0]
    return best


def check_includes(files, table):
    """files: {relative path: text}. Problems as 'FILE:LINE: ...' strings."""
    allowed = reachable(table)
    problems = []
    for path, text in sorted(files.items()):
        src = library_of(path, table)
        if src is None or src in TOP:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            dst = library_of(m.group(1), table)
            if dst is None:
                continue
            if dst in TOP or dst not in allowed[src]:
                problems.append(f"{path}:{n}: {src}/ includes {m.group(1)}, but {src} may include only "
                                f"{', '.join(sorted(allowed[src]))} (docs/architecture.md, the library graph)")
    return problems


def declared_dependencies(root, table):
    """{folder: the tessera *_dep names its declare_dependency lists}, and {dep name: folder}."""
    dep_folder, deps_text = {}, {}
    for f in table:
        text = (root / f / "meson.build").read_text()
        m = re.search(r"^(\w+_dep)\s*=\s*declare_dependency\(", text, re.M)
        if not m:
            raise SystemExit(f"{f}/meson.build: no `NAME_dep = declare_dependency(...)`")
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        dep_folder[m.group(1)] = f
        listed = re.search(r"dependencies\s*:\s*\[([^\]]*)\]", text[m.end():end])
        deps_text[f] = re.findall(r"\w+_dep", listed.group(1)) if listed else []
    return {f: [dep_folder[d] for d in ds if d in dep_folder] for f, ds in deps_text.items()}


def check_meson(root, table):
    problems = []
    for f, declared in sorted(declared_dependencies(root, table).items()):
        if sorted(declared) != sorted(table[f]):
            problems.append(f"{f}/meson.build:1: declares dependencies on {' '.join(sorted(declared)) or '-'}, "
                            f"the table in docs/architecture.md {' '.join(sorted(table[f])) or '-'}")
    return problems


def self_test():
    """The checker must catch a wrong-way include on a made-up tree."""
    table = {"ir": [], "runtime": ["ir"], "analysis": ["ir"], "analysis/cost": ["analysis", "runtime"],
             "interpreter": ["runtime"]}
    files = {
        "analysis/cost/ok.cpp": '#include "analysis/graph.h"\n#include "runtime/array.h"\n#include "ir/ir.h"\n',
        "analysis/cost/bad.cpp": '#include <vector>\n#include "interpreter/interpreter.h"\n',
        "analysis/bad.h": '#include "tools/args.h"\n',
        "tools/cmd.cpp": '#include "interpreter/interpreter.h"\n',
    }
    got = check_includes(files, table)
    want = ["analysis/bad.h:1:", "analysis/cost/bad.cpp:2:"]
    if [p.split(" ", 1)[0] for p in got] != want:
        print("check_layering.py self-test: expected problems at " + ", ".join(want) + ", got:\n" + "\n".join(got))
        return False
    return True


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    if not self_test():
        return 1
    table = read_table(root / "docs" / "architecture.md")
    for f, deps in table.items():
        for d in deps:
            if d not in table:
                print(f"docs/architecture.md: {f} depends on {d}, which is not a library of the table")
                return 1
    # Every top-level folder with C++ sources is a library of the table or above them all.
    files = {}
    for folder, subfolders, names in os.walk(root):
        # Build folders (build, build-fuzz, ...) and hidden ones hold no sources.
        subfolders[:] = [d for d in subfolders if not d.startswith(("build", "."))]
        for name in names:
            if name.endswith((".h", ".cpp")):
                p = pathlib.Path(folder) / name
                files[p.relative_to(root).as_posix()] = p.read_text(errors="replace")
    problems = [f"{rel}:1: {rel.split('/')[0]}/ is neither a library of the table in docs/architecture.md nor "
                f"one of {', '.join(sorted(TOP))}"
                for rel in sorted({r.split("/")[0] + "/" for r in files if "/" in r})
                if library_of(rel.rstrip("/"), table) is None]
    problems += check_includes(files, table) + check_meson(root, table)
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(table)} libraries: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
