"""The rules of issue 33, call by call: stuck_check (spiral/attempts.py), shell edits and made debris
(spiral/tree_edits.py), the sustained-loop page, the bands in calls, and polls that collect results.

The sessions each behaviour comes from are named in docs/detection.md; these tests pin where each
rule decides, on the shipped buckets.yaml (RULES) and against the five signals alone (S)."""

from __future__ import annotations

from typing import Any

from spiral import model
from spiral.detector import Detector
from spiral.model import ToolCall
from spiral.settings import Settings
from tests.helpers import BUCKETS, RULES, T0, WORKDIR, S, at, finding

LINT = "pkg/store/store_test.go:{line}:2: SA1019: store.OpenLegacy is deprecated (staticcheck)\n1 issues:\n"
FLAGS = [
    "golangci-lint run ./...",
    "golangci-lint run --fix",
    "golangci-lint cache clean && golangci-lint run",
    "golangci-lint run --enable staticcheck ./...",
    "golangci-lint run -v",
    "golangci-lint run --timeout 5m",
]


def sh(cmd: str, minute: float, output: str = "", code: int = 0) -> ToolCall:
    call = ToolCall(ts=at(minute), tool=model.BASH, command=cmd)
    call.result_seen, call.exit_code, call.is_error, call.output = True, code, bool(code), output
    return call


def tool(name: str, path: str, minute: float, output: str = "edited", error: bool = False) -> ToolCall:
    call = ToolCall(ts=at(minute), tool=name, path=path)
    call.result_seen, call.is_error, call.output = True, error, output
    return call


def detector(settings: Settings = RULES, bucket: str = "small", **kw: Any) -> Detector:
    return Detector(settings, bucket=bucket, started_at=T0, workdir=WORKDIR, **kw)


def signals_after(calls: list[ToolCall], settings: Settings = RULES) -> tuple[str, ...]:
    det = detector(settings)
    det.add_calls(calls)
    return det.evaluate(calls[-1].ts + 1).signals


def test_one_check_with_varied_flags_failing_the_same_way_is_stuck() -> None:
    calls: list[ToolCall] = []
    for k in range(6):
        calls.append(tool(model.EDIT, f"pkg/store/site{k % 4}_test.go", 5 + k))
        calls.append(sh(FLAGS[k], 5.2 + k, LINT.format(line=40 + k), code=1))
        assert ("stuck_check" in signals_after(calls)) is (k >= 4), k  # the 5th attempt is the 4th repeat
    det = detector()
    det.add_calls(calls)
    evidence = finding(det.evaluate(at(12)), "stuck_check")
    assert "golangci-lint run ran 6 times" in evidence and "6 different command lines" in evidence
    assert "stuck_check" not in signals_after(calls, S)  # the five signals alone: no exact repeat, no script


def test_two_failures_in_turn_are_one_failure_and_new_failures_are_progress() -> None:
    hooks = [
        "credo ... Failed\n[R] Modules should have a @moduledoc tag. lib/x.ex:{n}\n",
        "dialyzer ... Failed\nlib/x.ex:{n}: The pattern can never match the type :error.\n",
    ]
    commit = 'git add -A && git commit -m "try {k}"'
    calls = [sh(commit.format(k=k), k, hooks[k % 2].format(n=10 + k), code=1) for k in range(6)]
    assert "stuck_check" in signals_after(calls)
    assert "stuck_check" not in signals_after(calls[:5])
    # every attempt a new error: the agent is learning something each time
    fresh = [
        sh(commit.format(k=k), k, f"fatal: error number {chr(65 + k)} of another kind\n", code=1) for k in range(8)
    ]
    assert "stuck_check" not in signals_after(fresh)


def test_outcomes_the_check_got_past_do_not_hide_the_stretch_it_is_stuck_in() -> None:
    """ergt10 django-12113's shape: a probe gets three new answers first, then cycles through two
    it already had. Over the whole window that is five outcomes, more than `max_outcomes`; the
    stretch it is in now has two, coming back in turn."""
    probe = "python3 -c 'import sqlite3; ...'"
    first = [sh(probe, k, f"Error: {what}\n") for k, what in enumerate(("no attribute timeout", "bad arg", "short"))]
    locked, missing = "database is locked", "no such table: test"
    cycle = [locked, missing, missing, locked, missing]
    calls = first + [sh(probe, 3 + k, f"Error: {what}\n") for k, what in enumerate(cycle)]
    assert "stuck_check" not in signals_after(calls)  # 3 repeats in the stretch: short, the cycle
    calls.append(sh(probe, 9, f"Error: {locked}\n"))
    assert "stuck_check" in signals_after(calls)
    # as many repeats, each outcome giving way to the next for good: the probe gets somewhere
    steps = ["four left", "four left", "four left", "three left", "three left", "two left", "two left"]
    ahead = first + [sh(probe, 3 + k, f"Error: {what}\n") for k, what in enumerate(steps)]
    assert "stuck_check" not in signals_after(ahead)


def test_numbers_that_count_tries_are_no_progress_but_test_counts_are() -> None:
    probe = [tool(model.WRITE, "probe_mc.py", 1, "File created successfully at: probe_mc.py")]
    for n in range(1, 7):
        probe.append(tool(model.EDIT, "probe_mc.py", 1 + n))
        probe.append(sh("python probe_mc.py", 1.3 + n, f"attempt {n}: mc() returned 0.42, expected 0.5\n"))
    assert "stuck_check" in signals_after(probe)
    shrinking = [
        sh(
            "pytest tests/test_p.py -q",
            n,
            f"FAILED tests/test_p.py::t - AssertionError\n{6 - n} failed, {6 + n} passed in 0.{n}s\n",
            code=1,
        )
        for n in range(6)
    ]
    assert "stuck_check" not in signals_after(shrinking)


def test_a_pass_ends_a_checks_history() -> None:
    fail = LINT.format(line=41)
    calls = [sh("golangci-lint run", k, fail, code=1) for k in range(4)]
    calls.append(sh("golangci-lint run", 4, "0 issues.\n"))
    calls += [sh("golangci-lint run", 5 + k, fail, code=1) for k in range(4)]
    assert "stuck_check" not in signals_after(calls)


def test_refused_edits_and_empty_searches_are_attempts() -> None:
    refused = "ERROR: No replacement was performed, old_str `x = 1` did not appear verbatim in src/a.py."
    edits = [tool(model.EDIT, "src/a.py", k * 0.2, refused, error=True) for k in range(6)]
    assert "stuck_check" in signals_after(edits)
    edits.insert(3, tool(model.EDIT, "src/a.py", 0.5))  # one that went through: history starts again
    assert "stuck_check" not in signals_after(edits)
    empty = [sh(f"grep -rn 'add_lines{k}(' .", k * 0.2, "", code=1) for k in range(6)]
    assert "stuck_check" in signals_after(empty)
    empty.insert(3, sh("grep -rn add_line sphinx", 0.5, "sphinx/ext/a.py:329: def add_line(self):\n"))
    assert "stuck_check" not in signals_after(empty)
    # a terminal that echoes the command back and prints nothing else (OpenHands) found nothing too
    find = 'find tests/ -name "*.py" -exec grep -l "Blueprint.*dot" {} \\;'
    echoed = [sh(find, k * 0.2, find) for k in range(6)]
    assert "stuck_check" in signals_after(echoed)
    assert "stuck_check" not in signals_after([sh(find, k * 0.2, find + "\ntests/a.py") for k in range(6)])


def test_shell_edits_change_the_tree_and_made_scripts_are_debris() -> None:
    det = detector(bucket="small")
    det.add_calls(
        [
            sh("cat <<'EOF' > reproduce.py\nassert build() == 'a b'\nEOF", 1),
            sh("sed -i 's/a/b/' src/app/latex.py", 2),
            sh("python reproduce.py", 3, "AssertionError: expected 'a b'\n", code=1),
            sh("cat > scripts/migrate.py <<'EOF'\nprint(1)\nEOF", 4),
            sh("python scripts/migrate.py", 5, "migrated 3 rows\n"),
        ]
    )
    assert "src/app/latex.py" in det._written  # the sed is an edit (events only: the writes stand in)
    assert det.debris_files == ("reproduce.py",)  # made at the top and run; scripts/migrate.py is likely work
    assert "reproduce.py" not in det._written
    # a rerun after a sed is not a rerun on an unchanged tree
    det2 = detector()
    det2.add_calls([sh("pytest tests/test_x.py", k * 2, "1 failed\n", code=1) for k in range(3)])
    before = det2.windows.tree_version
    det2.add_call(sh("sed -i 's/x/y/' src/x.py", 7))
    assert det2.windows.tree_version > before
    det2.add_call(sh("git checkout -- src/x.py", 8))
    assert "src/x.py" in det2.windows.reverted


def _fast_loop(pace_s: float, attempts: int = 8, start: float = 2.0) -> list[ToolCall]:
    calls, t = [], start
    for _ in range(attempts):
        calls.append(tool(model.EDIT, "src/app/mc.py", t))
        t += pace_s / 60
        calls.append(sh("python -m pytest tests/test_mc.py", t, "E   AssertionError: assert 0.42 == 0.5\n", code=1))
        t += pace_s / 60
    return calls


def _first_page(calls: list[ToolCall], settings: Settings = RULES, bucket: str = "small") -> float | None:
    det = detector(settings, bucket)
    end = calls[-1].ts
    tick = T0
    i = 0
    while tick <= end + 60:
        while i < len(calls) and calls[i].ts <= tick:
            det.add_call(calls[i])
            i += 1
        v = det.evaluate(tick)
        if v.should_page:
            assert v.region == "healthy" and v.sustained and any("sustained-loop rule" in e for e in v.evidence)
            return v.elapsed_min
        tick += 30
    return None


def test_a_fast_loop_pages_before_the_soft_band_and_a_slow_one_waits_for_it() -> None:
    fast = _first_page(_fast_loop(pace_s=12))
    assert fast is not None and fast < 5  # 16 calls in 3 min: paged within the loop, long before minute 30
    assert _first_page(_fast_loop(pace_s=45)) is None  # a call every 45 s: slower than 3.5 a minute
    seed = Settings.from_mapping({k: v for k, v in BUCKETS.raw.items() if k != "rules"})
    assert _first_page(_fast_loop(pace_s=12), seed) is None  # the literal seed detector: the soft band only
    off = {
        **BUCKETS.raw,
        "rules": {**BUCKETS.raw["rules"], "sustained": {**BUCKETS.raw["rules"]["sustained"], "enabled": False}},
    }
    assert _first_page(_fast_loop(pace_s=12), Settings.from_mapping(off)) is None


def _sustained(**block: Any) -> Settings:
    raw = {**BUCKETS.raw, "rules": {**BUCKETS.raw["rules"], "sustained": block}}
    return Settings.from_mapping(raw)


def test_a_dense_loop_pages_at_its_sixth_try_before_eight_calls_have_passed() -> None:
    """ergt10 pytest-5221's shape: the same str_replace refused back to back, the session over
    before eight calls have passed since the first refusal."""
    refused = "ERROR: Invalid `new_str` parameter: ... No replacement was performed."
    calls = [tool(model.READ, "src/_pytest/python.py", 2.0, "   1\timport os\n")]
    calls += [tool(model.EDIT, "src/_pytest/python.py", 2.5 + 0.12 * k, refused, error=True) for k in range(6)]
    calls.append(tool(model.READ, "src/_pytest/python.py", 3.3, "   1\timport os\n"))
    page = _first_page(calls)
    assert page is not None and page < 4  # at the sixth refusal, two calls before the eighth
    shipped = dict(BUCKETS.raw["rules"]["sustained"])
    assert shipped["min_attempts"] == 6
    # by calls alone, too few have passed
    assert _first_page(calls, _sustained(**{**shipped, "min_attempts": 0})) is None
    # a buckets.yaml written before the key: it loads, and holds by calls alone, as it did
    older = {k: v for k, v in shipped.items() if k != "min_attempts"}
    assert _sustained(**older).rules.sustained_min_attempts == 0
    assert _first_page(calls, _sustained(**older)) is None


def test_the_soft_band_opens_at_its_calls_or_its_minutes_whichever_comes_first() -> None:
    raw = {
        **BUCKETS.raw,
        "buckets": {
            **BUCKETS.raw["buckets"],
            "small": {
                "expected_min": 20,
                "soft_start_min": 30,
                "stuck_min": 35,
                "expected_calls": 20,
                "soft_start_calls": 30,
                "stuck_calls": 40,
            },
        },
    }
    settings = Settings.from_mapping(raw)
    det = detector(settings)
    det.add_calls([sh(f"ls dir{k}", k * 0.1, "x") for k in range(29)])
    assert det.evaluate(at(3)).region == "healthy"
    det.add_call(sh("ls dir29", 3.0, "x"))
    assert det.evaluate(at(3.1)).region == "soft"  # 30 calls in 3 minutes
    det.add_calls([sh(f"ls e{k}", 3.2 + k * 0.1, "x") for k in range(10)])
    assert det.evaluate(at(4.5)).region == "stuck"
    assert detector().evaluate(at(31)).region == "soft"  # the shipped buckets: minutes only


def test_collecting_results_is_not_polling_and_cancelled_calls_poll_nothing() -> None:
    reads = []
    for k in range(16):
        c = ToolCall(ts=at(1 + k * 0.02), tool=model.BASH_OUTPUT, command=f"agent{k}")
        c.result_seen, c.output = True, "<status>running</status>"
        reads.append(c)
    assert "polling" not in signals_after(reads)
    assert "polling" in signals_after(reads, S)  # the contract counts every read
    cancelled = [sh(f"sleep 5 && tail /tmp/x/tasks/b{k}.output", 1 + k * 0.01, "", code=1) for k in range(8)]
    for c in cancelled:
        c.denied = True
    assert "polling" not in signals_after(cancelled)


def test_an_edit_tool_that_says_it_created_a_file_made_it() -> None:
    det = detector()
    det.add_call(tool(model.EDIT, "test_fix.py", 1, "File created successfully at: /w/test_fix.py"))
    det.add_call(tool(model.EDIT, "src/a.py", 1.1, "The file src/a.py has been edited."))
    assert "test_fix.py" in det.windows.made and "src/a.py" not in det.windows.made


def test_a_failing_test_piped_into_tail_is_a_failure_not_a_pass() -> None:
    """entire-8e's shape (entireio, Claude Code): `go test -run X ./... 2>&1 | tail -20` exits with
    tail's 0 while the test fails the same way each time, an edit between. Read by its status, each
    run was a pass that ended the check's history; its output says `--- FAIL`. A run whose output a
    `grep` cut down to lines that say neither is no pass: it does not end the history either."""
    fail = "    shadow_test.go:88: Expected src/file1.ts to NOT exist\n--- FAIL: TestShadowReset (0.41s)\nFAIL\n"
    run = "go test -tags integration -run TestShadowReset ./cmd/cli/integration_test 2>&1 | tail -20"
    calls: list[ToolCall] = []
    for k in range(5):
        calls.append(tool(model.EDIT, "cmd/cli/strategy/shadow.go", 5 + k))
        calls.append(sh(run, 5.3 + k, fail))
        if k == 2:
            calls.append(sh(run.replace("| tail -20", "| grep overlap-check"), 5.6 + k, "[overlap-check] 2 files\n"))
    assert "stuck_check" in signals_after(calls)
    passed = "--- PASS: TestShadowReset (0.40s)\nPASS\nok  \tentire.io/cli/cmd/cli/integration_test\t0.9s\n"
    assert "stuck_check" not in signals_after(calls[:-1] + [sh(run, 9.3, passed)])


def _rounds(command: str, output: str, code: int = 0, n: int = 8) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for k in range(n):
        calls.append(tool(model.EDIT, "src/app/client.py", 3 + 0.4 * k))
        calls.append(sh(command, 3.2 + 0.4 * k, output, code))
    return calls


def test_a_passing_check_piped_into_tail_is_no_failure_whatever_its_logs_say() -> None:
    """Only a runner's own summary judges a run whose status is tail's: the `connection refused` a
    passing suite logs, or a build's warning, is no failure (spiral/runner_verdict.py)."""
    logs = "ERROR:root:upstream connection refused, retrying\n....\nRan 8 tests in 0.2s\n\nOK\n"
    assert _first_page(_rounds("python -m unittest tests.test_client 2>&1 | tail -20", logs)) is None
    build = "vite v5.0 building for production...\nsource map for chunk.js not found\n✓ built in 2.10s\n"
    assert "stuck_check" not in signals_after(_rounds("npm run build 2>&1 | tail -10", build))
    # grep's status 1 when no line matched: a passing suite cut down to nothing taught nothing
    assert "stuck_check" not in signals_after(_rounds("go test ./... 2>&1 | grep FAIL", "", code=1))
