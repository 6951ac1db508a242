"""spiral/shellcmd.py: what a shell command runs, reads, and whether it polls."""

from __future__ import annotations

import pytest

from spiral.call_windows import is_request
from spiral.shellcmd import ANALYSED_CHARS, analyse
from tests.helpers import TASK_FILE


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("python x.py", "x.py"),
        ("python3 x.py --flag 3 other.txt", "x.py"),
        ("bash x.sh", "x.sh"),
        ("./x.sh", "./x.sh"),
        ("./x.sh arg1 arg2", "./x.sh"),
        ("pytest tests/test_y.py::case", "tests/test_y.py"),
        ("pytest -q tests/test_y.py::TestY::test_z[p-1]", "tests/test_y.py"),
        ("python -m pytest tests/test_y.py::case -x", "tests/test_y.py"),
        ("node x.js", "x.js"),
        ("sh -c 'python x.py --n 1'", "x.py"),
        ("/bin/bash -lc 'python x.py'", "x.py"),
        ('/bin/bash -lc "cd sub && ./run.sh 2>&1 | tail -5"', "sub/run.sh"),
        ("uv run python tmp_x.py", "tmp_x.py"),
        ("timeout 30 env FOO=1 python x.py > out.txt 2>&1", "x.py"),
        ("mix test test/a_test.exs:42", "test/a_test.exs"),
        # bun and deno run a file, or a subcommand: `bun run lint` runs no script called `run`
        ("bun x.ts", "x.ts"),
        ("bun run scripts/gen.ts --watch", "scripts/gen.ts"),
        ("deno run -A main.ts", "main.ts"),
        ("bun test src/a.test.ts", "src/a.test.ts"),
        ("bun run lint", None),
        ("bun run typecheck", None),
        ("bun install", None),
        ("deno task dev", None),
        ("deno run -A --config deno.json main.ts", "main.ts"),  # an option's value is not the program
        ("bun --cwd packages/x run lint", None),
        ("bun -e 'console.log(1)'", None),
        ("bash -lc ls", None),
        ("cat x.py", None),
        ("python -c 'print(1)'", None),
        ("git status", None),
    ],
)
def test_analyse_script(command: str, script: str | None) -> None:
    assert analyse(command).script == script


def test_analyse_file_and_polling_facts() -> None:
    assert analyse("cat x.py").file == "x.py"
    assert analyse("sed -n 1,20p src/a.py").file == "src/a.py"
    assert analyse("sleep 5").sleep_s == 5
    assert analyse("sleep 5s").sleep_s == 5
    assert analyse("sleep 120").sleep_s == 120
    facts = analyse(f"cat {TASK_FILE}")
    assert facts.task_output and facts.file == TASK_FILE
    assert analyse("/bin/bash -lc 'tail -20 /tmp/claude-1000/-home-x/tasks/bd0afab.output'").task_output
    assert analyse("until grep -q DONE log.txt; do sleep 5; done").until_wait
    assert analyse("until [ -s out.txt ]; do sleep 2; done").until_wait
    assert not analyse("while true; do sleep 2; done").until_wait
    assert not analyse("cat /tmp/notes.txt").task_output


@pytest.mark.parametrize("command", ["python -W ignore x.py", "python3 -X dev x.py --n 1"])
def test_analyse_python_option_values_are_not_the_script(command: str) -> None:
    assert analyse(command).script == "x.py"


def test_analyse_newline_separates_commands() -> None:
    assert analyse("echo start\npython tmp_x.py").script == "tmp_x.py"
    assert analyse("echo waiting\nsleep 5").sleep_s == 5


def test_analyse_heredoc_body_is_not_a_script() -> None:
    assert analyse("python3 - <<'EOF'\nimport sys\nprint(sys.argv)\nEOF").script is None
    assert analyse("cat > tmp_x.py <<'EOF'\nimport os\nEOF\npython tmp_x.py").script == "tmp_x.py"


def test_a_huge_command_is_read_for_its_facts_from_its_start_only() -> None:
    # split into words, a command costs ~18 bytes a character (1.8 GB for 50 MB): what lies past its
    # first ANALYSED_CHARS is not read, what lies before is, cached or not
    words = "echo " + "ab cd " * (ANALYSED_CHARS // 6)
    assert len(words) > ANALYSED_CHARS
    late = analyse("cd sub && sleep 5 && " + words + "; python tmp_late.py")
    assert late.script is None and late.sleep_s == 5  # the script after the cut is not seen
    mid = analyse("sleep 2; " + "echo " + "ab cd " * 20_000 + "; python tmp_mid.py")  # past the cache's bound only
    assert mid.script == "tmp_mid.py" and mid.sleep_s == 2
    assert is_request("Bash", "bash -lc 'curl -s localhost:8080/health; " + "x " * ANALYSED_CHARS + "'")
