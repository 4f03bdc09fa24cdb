#!/usr/bin/env python3
"""Executes the ```console blocks of README.md and docs/*.md and compares outputs.

The format (also described in docs/architecture.md, under tests/docs/):

    ```console
    $ tessera verify examples/add.tsr
    examples/add.tsr: ok
    ```

- Only ```console fences run; ```tsr, ```text, ```python and bare ``` fences do not.
- A line starting with `$ ` is a command. A trailing `\\` continues it on the
  next line, and a here-document (`<<'EOF'`, `<<EOF`, `<<-EOF`) continues it
  until the line holding the delimiter.
- Every line up to the next `$ ` line or the closing fence is the expected
  output: stdout and stderr merged, as a terminal shows them. Trailing blanks
  of each line and trailing empty lines are ignored.
- A line `...` matches any number of lines (output that varies or is long).
- A last line `[exit N]` expects exit status N; without it the status must be 0.

Each command runs in its own `bash -c`, from the repository root, with stdin
from /dev/null, a time limit, and the environment a reader has after the
README's set-up: the caller's, with the build's tools/ folder first on PATH
(the README's `export PATH=$PWD/build/tools:$PATH`, so `tessera` is the
build's) and without PYTHONPATH. Nothing else is provided: a command that
needs NumPy names `/usr/bin/python3` (Debian's, which the set-up gives NumPy;
the `python3` first on a reader's PATH may lack it), and one that imports the
`tessera` module names it: `PYTHONPATH=build/python /usr/bin/python3 ...`.
The commands of one file run in order,
so a later command can read what an earlier one wrote. Commands may write only
under /tmp: a file created or changed in the source tree fails the page.

Usage: check_docs.py --build BUILD_DIR [FILE.md ...]
Without files it checks README.md and docs/*.md, as found when it runs (so a
new page is checked without editing meson). The last line has the doctest
form "[doctest] test cases: N | P passed | F failed", one case per file, which
scripts/summarize_tests.py adds to the "N passed, N failed" total.
"""
import argparse
import difflib
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
EXIT = re.compile(r"^\[exit (\d+)\]$")
WILDCARD = "..."


class Command:
    def __init__(self, path, line, text, expected, status, span):
        self.path, self.line, self.text = path, line, text
        self.expected, self.status = expected, status
        self.span = span  # the expected output's lines in the file: [first, end), 0-based


def parse_commands(path, text):
    """The commands of every ```console fence of a markdown file, in order."""
    commands = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group(2)[0] == "`" and "`" in lines[i][m.end(2):]):  # CommonMark: no ` after ```
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        i += 1
        body = []  # (line number, text) inside the fence
        closing = re.compile(re.escape(fence[0]) + "{%d,}" % len(fence))
        while i < len(lines) and not closing.fullmatch(lines[i].strip()):
            line = lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip()
            body.append((i + 1, line))
            i += 1
        i += 1  # the closing fence
        if lang == "console":
            commands += parse_block(path, body)
    return commands


def parse_block(path, body):
    commands = []
    k = 0
    if body and not body[0][1].startswith("$ ") and body[0][1].strip():
        raise SyntaxError(f"{path}:{body[0][0]}: a console block must start with a `$ ` command")
    while k < len(body):
        start, first = body[k]
        if not first.startswith("$ "):
            k += 1  # blank lines before the first command
            continue
        text = [first[2:]]
        k += 1
        # `\` continues the command; a here-document runs to its delimiter line.
        while True:
            last = text[-1]
            heredocs = [m.group(2) for m in HEREDOC.finditer(last)]
            if last.endswith("\\") and k < len(body):
                text.append(body[k][1])
                k += 1
                continue
            for delimiter in heredocs:
                while k < len(body) and body[k][1].strip() != delimiter:
                    text.append(body[k][1])
                    k += 1
                if k == len(body):
                    raise SyntaxError(f"{path}:{start}: here-document without its `{delimiter}` line")
                text.append(body[k][1])
                k += 1
            if heredocs and text[-1].endswith("\\"):
                continue
            break
        expected = []
        out_first = body[k][0] - 1 if k < len(body) else body[-1][0]
        while k < len(body) and not body[k][1].startswith("$ "):
            expected.append(body[k][1].rstrip())
            k += 1
        end = out_first + len(expected)
        while expected and not expected[-1]:
            expected.pop()
            end -= 1
        status = 0
        if expected and EXIT.match(expected[-1]):
            status = int(EXIT.match(expected.pop()).group(1))
        commands.append(Command(path, start, "\n".join(text), expected, status, (out_first, end)))
    return commands


def matches(expected, actual):
    """Line-by-line match where a `...` line stands for any number of lines."""
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            result = j == len(actual)
        elif expected[i] == WILDCARD:
            result = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            result = j < len(actual) and expected[i] == actual[j] and go(i + 1, j + 1)
        memo[(i, j)] = result
        return result

    return go(0, 0)


def source_snapshot(root):
    """(path -> mtime, size) of the source tree's files."""
    snapshot = {}
    for folder, subfolders, files in os.walk(root):
        # Hidden folders (.git, tool caches such as .pytest_cache) and build folders are not sources.
        subfolders[:] = [d for d in subfolders
                         if not d.startswith(".") and d != "__pycache__"
                         and not os.path.isdir(os.path.join(folder, d, "meson-private"))]
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            snapshot[os.path.relpath(path, root)] = (st.st_mtime_ns, st.st_size)
    return snapshot


def run_command(text, env, timeout):
    """Output (stdout and stderr merged) and exit status of one command."""
    # Its own process group, so that a timeout also ends the pipeline's children.
    proc = subprocess.Popen(["bash", "-c", text], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return out.decode("utf-8", "replace") + f"[check_docs: killed after {timeout:g} s]\n", 124


def hints(output, status, build):
    """Why a command may have failed when the build or machine lacks something."""
    said = []
    missing = re.findall(r"(?:bash: (?:line \d+: )?)?([\w.+-]+): command not found", output)
    for tool in dict.fromkeys(missing):
        said.append(f"`{tool}` is not on PATH: this page needs a tool the build "
                    f"({build}/tools) or this machine lacks")
    if re.search(r"No module named '?tessera'?", output):
        said.append(f"Python did not find the `tessera` module: the command must name it "
                    f"(PYTHONPATH=build/python), and {build}/python must have it (a build "
                    "configured without pybind11 has not)")
    if re.search(r"No module named '?numpy'?", output):
        said.append("this Python has no NumPy: a command that needs it runs /usr/bin/python3 "
                    "(Debian's, which the set-up gives NumPy), not the `python3` first on PATH")
    if status == 124:
        said.append("the command ran past the time limit")
    return said


def reader_environment(tools):
    """The environment of a reader who followed the README: theirs, with the
    build's tools first on PATH. PYTHONPATH is dropped so that a page which
    imports the module without naming it fails here as it would for them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([tools, env.get("PATH", "/usr/bin:/bin")])
    env["LC_ALL"] = "C.UTF-8"
    return env


def run_file(path, build, timeout, verbose, update=False):
    """Runs every command of one page; returns (number of commands, failures)."""
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        try:
            commands = parse_commands(rel, f.read())
        except SyntaxError as e:
            print(f"{e}")
            return 0, 1
    tools = os.path.join(build, "tools")
    if not os.path.isfile(os.path.join(tools, "tessera")):
        print(f"{rel}: {tools}/tessera does not exist: build first (ninja -C {build})")
        return len(commands), 1
    env = reader_environment(tools)
    before = source_snapshot(ROOT)
    failures = 0
    replacements = []  # (command, its actual output) for --update
    for cmd in commands:
        started = time.monotonic()
        output, status = run_command(cmd.text, env, timeout)
        actual = [line.rstrip() for line in output.split("\n")]
        while actual and not actual[-1]:
            actual.pop()
        ok = status == cmd.status and matches(cmd.expected, actual)
        if not ok and update and WILDCARD not in cmd.expected:
            replacements.append((cmd, actual + ([f"[exit {status}]"] if status else [])))
        if verbose:
            print(f"{rel}:{cmd.line}: {'ok' if ok else 'FAILED'} ({time.monotonic() - started:.1f} s)")
        if ok:
            continue
        failures += 1
        print(f"{rel}:{cmd.line}: FAILED: $ {cmd.text.splitlines()[0]}")
        if status != cmd.status:
            print(f"  exit status {status}, expected {cmd.status}")
        shown_expected = cmd.expected + ([f"[exit {cmd.status}]"] if cmd.status else [])
        shown_actual = actual + ([f"[exit {status}]"] if status else [])
        diff = difflib.unified_diff(shown_expected, shown_actual, f"{rel}:{cmd.line} (expected)",
                                    "actual output", lineterm="")
        for line in diff:
            print("  " + line)
        if WILDCARD in cmd.expected:
            print("  (an expected line `...` matches any number of lines)")
        for hint in hints(output, status, build):
            print(f"  hint: {hint}")
    after = source_snapshot(ROOT)
    written = sorted(p for p in after if before.get(p) != after[p])
    if replacements:
        write_actual_outputs(path, replacements)
    if written:
        failures += 1
        print(f"{rel}: FAILED: its commands wrote into the source tree (write only under /tmp): "
              + ", ".join(written[:10]))
    return len(commands), failures


def write_actual_outputs(path, replacements):
    """--update: puts each command's actual output in place of its expected output."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for cmd, actual in sorted(replacements, key=lambda r: -r[0].span[0]):
        indent = re.match(r"\s*", lines[cmd.line - 1]).group(0)
        first, end = cmd.span
        lines[first:end] = [indent + line if line else line for line in actual]
        print(f"{os.path.relpath(path, ROOT)}:{cmd.line}: expected output updated")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def default_files():
    docs = os.path.join(ROOT, "docs")
    pages = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    return [os.path.join(ROOT, "README.md")] + pages


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True, help="the meson build folder")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per command (default 120)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every command's result")
    parser.add_argument("--update", action="store_true",
                        help="write the actual output of failing commands into the page "
                             "(not for outputs with `...`; review the diff before committing)")
    parser.add_argument("files", nargs="*", help="markdown files (default: README.md and docs/*.md)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    files = [os.path.abspath(f) for f in args.files] or default_files()
    passed = failed = 0
    for path in files:
        count, failures = run_file(path, build, args.timeout, args.verbose, args.update)
        rel = os.path.relpath(path, ROOT)
        if failures:
            failed += 1
            print(f"{rel}: {failures} of {count} commands FAILED")
        else:
            passed += 1
            print(f"{rel}: ok ({count} commands)")
    print(f"[doctest] test cases: {passed + failed} | {passed} passed | {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
