"""What a shell command changes (spiral/shellwrites.py) and what check it runs (spiral/intent.py)."""

from __future__ import annotations

import pytest

from spiral.intent import family, intent, searches
from spiral.shellwrites import writes


@pytest.mark.parametrize(
    "command, paths, created",
    [
        ("sed -i 's/a/b/' src/x.py", ("src/x.py",), ()),
        ("sed -i.bak -e 's/a/b/' -e 's/c/d/' a.py b.py", ("a.py", "b.py"), ()),
        ("cd /testbed && sed -i '12s/foo/bar/' django/db/models.py", ("/testbed/django/db/models.py",), ()),
        ("cat <<'EOF' > reproduce_issue.py\nimport x\nprint(1)\nEOF", ("reproduce_issue.py",), ("reproduce_issue.py",)),
        ("echo hi >> notes.txt 2>&1", ("notes.txt",), ("notes.txt",)),
        ("pytest tests 2>&1 | tee log.txt", ("log.txt",), ("log.txt",)),
        ("python -c \"open('out.txt','w').write('x')\"", ("out.txt",), ("out.txt",)),
        ("python - <<'PY'\nfrom pathlib import Path\nPath('a/b.py').write_text('x')\nPY", ("a/b.py",), ("a/b.py",)),
        ("perl -pi -e 's/a/b/' f.txt", ("f.txt",), ()),
        ("/bin/bash -lc 'cd src && sed -i \"s/a/b/\" mod.py'", ("src/mod.py",), ()),
        ("cp a.py b.py", ("b.py",), ("b.py",)),
    ],
)
def test_edits_through_the_shell_are_file_changes(
    command: str, paths: tuple[str, ...], created: tuple[str, ...]
) -> None:
    w = writes(command)
    assert w.paths == paths and w.created == created and w.any


@pytest.mark.parametrize(
    "command",
    ["sed -n '1,20p' x.py", "ls -la > /dev/null", "git checkout main", "grep -rn foo src", "cat x.py | head"],
)
def test_reading_and_moving_head_change_no_file(command: str) -> None:
    assert not writes(command).any


def test_reverts_and_unnamed_changes() -> None:
    assert writes("git checkout -- src/a.py src/b.py").reverted == ("src/a.py", "src/b.py")
    assert writes("git restore x.py").reverted == ("x.py",)
    assert not writes("git restore --staged x.py").any  # the index only: the file keeps its content
    for command in ("git checkout .", "git stash", "git reset --hard", "git apply -R fix.patch"):
        w = writes(command)
        assert w.unknown and w.reverts_all, command
    w = writes("patch -p1 < fix.patch")
    assert w.unknown and not w.reverts_all
    assert writes("mv a.py b.py").removed == ("a.py",) and writes("rm -f x.py").removed == ("x.py",)


@pytest.mark.parametrize(
    "command, key",
    [
        ("golangci-lint run --enable staticcheck ./...", "golangci-lint run"),
        ("golangci-lint run --fix", "golangci-lint run"),
        ("golangci-lint cache clean && golangci-lint run", "golangci-lint run"),
        ("cd /testbed && python reproduce_issue_v2.py", "python reproduce_issue.py"),
        ("python reproduce_issue.py 2>&1 | head -50", "python reproduce_issue.py"),
        ("git add -A && git commit -m 'fix: x'", "git commit"),
        ("cd reproduce_issue && sphinx-build -b html . _build 2>&1 | tail -20", "sphinx-build"),
        ("pytest tests/test_x.py::test_a -xvs", "pytest test_x.py"),
        ("python -m pytest tests/test_x.py -k foo", "python -m pytest test_x.py"),
        ("timeout 60 uv run pytest tests/", "pytest tests"),
        ("nvcc -O2 test_gpu_kernel.cu -o k", "nvcc test_gpu_kernel.cu"),
        ("go test ./pkg/... -run TestFoo", "go test"),
        ("npm run build", "npm run build"),
        ("npx tsc --noEmit", "tsc"),
        ("npx jest src/a.test.ts -t x", "jest a.test.ts"),
        ("curl -s https://api.x.com/v1/items | jq .", "curl api.x.com"),
        # a header, a body or an output file is not the address
        ("curl -H 'Authorization: Bearer a.b' -X POST https://api.x.com/v1 -d '{\"n\": 1.5}'", "curl api.x.com"),
        ("curl -sSL -o out.tar.gz https://example.org/f.tgz", "curl example.org"),
        ("curl -s localhost:8080/health", "curl localhost"),
        ("python - <<'PY'\nimport requests\nPY", "python -"),
        ("python3 -c 'import x'", "python -c"),
        ("mix test test/foo_test.exs:12", "mix test foo_test.exs"),
        ("/bin/bash -lc 'cd src && cargo build --release'", "cargo build"),
        # agentv-79 (Codex): `bun run lint` and `bun run typecheck` are two checks, no script `run`
        ("bun run lint", "bun run lint"),
        ("bun run typecheck", "bun run typecheck"),
        ("bun run src/gen.ts", "bun gen.ts"),
        ("bun test", "bun test"),
        ("deno task check", "deno task check"),
        ("bun --cwd packages/x run lint", "bun run lint"),
        ("deno -c deno.json run main.ts", "deno main.ts"),  # deno's -c is its config, not inline code
        ("bun run - <<'TS'\nconsole.log(1)\nTS", "bun -"),
        ("bun -e 'console.log(1)'", "bun -c"),
    ],
)
def test_the_intent_of_a_check_sets_flags_selectors_and_wrappers_aside(command: str, key: str) -> None:
    got = intent(command)
    assert got is not None and got.key == key


@pytest.mark.parametrize("command", ["cat foo.py", "sed -i 's/a/b/' x.py", "pip install -e .", "ls && git status"])
def test_reading_editing_and_setting_up_are_no_check(command: str) -> None:
    assert intent(command) is None


def test_searches_and_next_try_names() -> None:
    assert searches("grep -rn foo src | head") and searches("ls && find . -name x.py") and searches("git grep x")
    assert not searches("pytest -q") and not searches("cat x | grep y")  # (a filter a pipe feeds is no search)
    assert family("reproduce_issue_v2.py") == family("reproduce_issue2.py") == "reproduce_issue.py"
    assert family("tmp_debug_mc.py") == "debug_mc.py" and family("test_gpu_1.c") == "test_gpu.c"
    assert family("probe_mc.py") == "probe_mc.py"


# Both shapes are common in real sessions (161 of the labelled ones, 13 publishers): an agent leads
# with a comment line, or breaks a long chain with `\` at line ends. Read naively, `# look first`
# became the check and `\<newline>sed -i` was not an edit (miniswe-gemini3pro-django-django-11138).
@pytest.mark.parametrize(
    "command, key",
    [
        ("# Read the file to locate lines\nnl -ba base.py | sed -n '400,470p'", None),
        ("# Modify the signature\nsed -i 's/a/b/' base.py\n\n# then run it\npython3 repro.py", "python repro.py"),
        ("git checkout base.py && \\\nsed -i '/x/a y' base.py && \\\npython3 apply_fix.py", "python apply_fix.py"),
        ("cd /testbed && \\\n  python -m pytest tests/t.py -q", "python -m pytest t.py"),
        ("echo 'not # a comment' && make build  # a trailing comment", "make build"),
        ('echo "a#b" $# && go test ./...', "go test"),
        # find's grouping parens are words, not a subshell: the line only searches
        ("find src -type f \\( -name '*.ts' -o -name '*.tsx' \\) | head -30", None),
        ("arr=(a b) && go test ./...", "go test"),
        ("(cd web && npm test)", "npm test"),
    ],
)
def test_comments_and_line_continuations_are_read_as_the_shell_reads_them(command: str, key: str | None) -> None:
    found = intent(command)
    assert (found.key if found else None) == key


def test_an_edit_after_a_line_continuation_is_a_file_change() -> None:
    w = writes("git checkout -- base.py && \\\nsed -i '401a\\    print(1)' base.py")
    assert w.paths == ("base.py",) and w.reverted == ("base.py",)
    assert writes("# write it\ncat > probe.py <<'EOF'\n# not a comment to the shell\nEOF").created == ("probe.py",)


@pytest.mark.parametrize(
    "command, masked, picked",
    [
        ("go test ./pkg/... -run TestX 2>&1 | tail -30", True, False),
        ("go test ./pkg/... 2>&1 | grep -E '(PASS|FAIL)' | head -20", True, True),
        ("pytest tests/test_x.py; echo exit=$?", True, False),
        ("pytest tests/test_x.py || true", True, False),
        ("cd src && pytest tests/test_x.py", False, False),
        ("pytest tests/test_x.py && git commit -am wip", False, False),
        ("pytest tests/test_x.py > out.txt 2>&1", False, False),
        ("set -o pipefail; pytest tests/test_x.py | tail -5", False, False),
        ("set -o pipefail; pytest tests/test_x.py | tail -5 || true", True, False),
    ],
)
def test_whether_the_line_s_exit_status_is_its_check_s(command: str, masked: bool, picked: bool) -> None:
    """A pipe, `;` or `||` after the check gives the line another command's status (tail's 0)."""
    got = intent(command)
    assert got is not None and (got.exit_masked, got.output_picked) == (masked, picked)
