"""Tests of scripts/check_docs.py, the runner of the docs' ```console blocks.

Each case writes a small markdown page under a temporary folder, runs a copy
of the runner (in a temporary repository root, so that the case that writes
into "the source tree" cannot disturb the real one or a docs run beside it)
on it against a fake build whose tools/tessera echoes its arguments, and
checks that it passes or fails, and what it says. The last line has the
doctest form that scripts/summarize_tests.py counts.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "scripts", "check_docs.py")
FENCE = "```"


class CheckDocs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="test_check_docs-")
        self.build = os.path.join(self.dir.name, "build")
        os.makedirs(os.path.join(self.build, "tools"))
        tool = os.path.join(self.build, "tools", "tessera")
        with open(tool, "w") as f:
            f.write('#!/bin/sh\necho "fake tessera $*"\n')
        os.chmod(tool, 0o755)
        self.root = os.path.join(self.dir.name, "repo")
        os.makedirs(os.path.join(self.root, "scripts"))
        self.runner = os.path.join(self.root, "scripts", "check_docs.py")
        shutil.copy(RUNNER, self.runner)

    def tearDown(self):
        self.dir.cleanup()

    def check(self, page, *options, env=None):
        path = os.path.join(self.dir.name, "page.md")
        with open(path, "w") as f:
            f.write(textwrap.dedent(page).replace("'''", FENCE))
        proc = subprocess.run([sys.executable, self.runner, "--build", self.build, "--timeout", "5", *options, path],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        return proc.returncode, proc.stdout

    def page(self):
        with open(os.path.join(self.dir.name, "page.md")) as f:
            return f.read()

    def test_matching_output_passes(self):
        rc, out = self.check("""
            Text.
            '''console
            $ tessera verify a.tsr
            fake tessera verify a.tsr
            $ echo one; echo two >&2
            one
            two
            '''
            """)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok (2 commands)", out)
        self.assertIn("[doctest] test cases: 1 | 1 passed | 0 failed", out)

    def test_wrong_output_fails_with_line_and_diff(self):
        rc, out = self.check("""
            '''console
            $ echo actual
            expected
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("page.md:3: FAILED: $ echo actual", out)
        self.assertIn("-expected", out)
        self.assertIn("+actual", out)
        self.assertIn("[doctest] test cases: 1 | 0 passed | 1 failed", out)

    def test_other_fences_do_not_run(self):
        rc, out = self.check("""
            '''
            $ false
            '''
            '''text
            $ exit 3
            '''
            """)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok (0 commands)", out)

    def test_fences_follow_commonmark(self):
        # A line with backticks after ``` opens no fence; ```console inside a
        # plain fence does not close it.
        rc, out = self.check("""
            '''` and `''' in a line of text open no fence.
            '''
            '''console
            $ exit 9
            '''
            '''console
            $ echo ran
            ran
            '''
            """)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok (1 commands)", out)

    def test_update_writes_the_actual_output(self):
        rc, out = self.check("""
            '''console
            $ echo new; exit 2
            old
            $ echo kept
            kept
            $ printf 'a\\nb\\n'
            ...
            c
            '''
            """, "--update")
        self.assertEqual(rc, 1)
        self.assertIn("page.md:3: expected output updated", out)
        self.assertNotIn("page.md:7: expected output updated", out)  # has a `...`
        self.assertIn("$ echo new; exit 2\nnew\n[exit 2]\n$ echo kept\nkept\n", self.page())
        self.assertIn("...\nc\n", self.page())

    def test_wildcard_matches_any_number_of_lines(self):
        rc, out = self.check("""
            '''console
            $ printf 'a\\nb\\nc\\nd\\n'
            a
            ...
            d
            $ printf 'a\\nd\\n'
            a
            ...
            d
            $ printf 'a\\nb\\n'
            a
            ...
            d
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("page.md:11: FAILED", out)
        self.assertNotIn("page.md:3: FAILED", out)
        self.assertNotIn("page.md:7: FAILED", out)

    def test_exit_status(self):
        rc, out = self.check("""
            '''console
            $ echo no >&2; exit 2
            no
            [exit 2]
            $ exit 1
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("page.md:6: FAILED", out)
        self.assertIn("exit status 1, expected 0", out)
        self.assertNotIn("page.md:3: FAILED", out)

    def test_continuation_and_heredoc(self):
        rc, out = self.check("""
            '''console
            $ mkdir -p /tmp/test_check_docs && cat > /tmp/test_check_docs/f.txt <<'EOF'
            $ not a command: inside the here-document
            line two \\
            EOF
            $ cat /tmp/test_check_docs/f.txt \\
                | wc -l
            2
            $ rm -r /tmp/test_check_docs
            '''
            """)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok (3 commands)", out)

    def test_unterminated_heredoc_is_an_error(self):
        rc, out = self.check("""
            '''console
            $ cat <<EOF
            text
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("here-document without its `EOF` line", out)

    def test_writing_into_the_source_tree_fails(self):
        name = "check_docs_wrote_here.txt"
        rc, out = self.check(f"""
            '''console
            $ touch {name}
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("wrote into the source tree", out)
        self.assertIn(name, out)

    def test_missing_tool_gets_a_hint(self):
        rc, out = self.check("""
            '''console
            $ no-such-tool-xyz --version
            1.0
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("hint: `no-such-tool-xyz` is not on PATH", out)

    def test_missing_python_module_gets_a_hint(self):
        rc, out = self.check("""
            '''console
            $ python3 -c "import tessera"
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("hint: Python did not find the `tessera` module", out)

    def test_timeout(self):
        rc, out = self.check("""
            '''console
            $ sleep 30 | cat
            '''
            """)
        self.assertEqual(rc, 1)
        self.assertIn("killed after 5", out)

    def test_path_has_the_build_first(self):
        rc, out = self.check("""
            '''console
            $ command -v tessera | sed 's|.*/build/|BUILD/|'
            BUILD/tools/tessera
            '''
            """)
        self.assertEqual(rc, 0, out)

    def test_commands_get_the_readers_environment(self):
        # A reader has no PYTHONPATH and their own `python3`: a page that
        # imports the module or needs NumPy must say so in its commands.
        env = dict(os.environ, PYTHONPATH="/outer/pythonpath")
        python3 = shutil.which("python3", path=env.get("PATH"))
        rc, out = self.check(f"""
            '''console
            $ echo "${{PYTHONPATH-unset}}"
            unset
            $ command -v python3
            {python3}
            '''
            """, env=env)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"[doctest] test cases: {result.testsRun} | {result.testsRun - failed} passed | {failed} failed")
    sys.exit(1 if failed else 0)
