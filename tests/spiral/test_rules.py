"""The rules beyond the five signals (spiral/rules.py, spiral/call_windows.py), call by call.

Each rule is checked at the point it decides: the same sequence of calls,
once with results that are loop evidence and once with results that are
progress evidence, against the shipped buckets.yaml (RULES) and against
the five signals alone (S).
"""

from __future__ import annotations

from typing import Any

import pytest

from spiral import model
from spiral.detector import Detector
from spiral.fingerprint import Fingerprinter
from spiral.model import ToolCall
from spiral.paths import in_scope
from spiral.settings import Settings, SettingsError
from tests.helpers import BUCKETS, MIN, RULES, SEED_RAW, T0, WORKDIR, S, at, finding

PYTEST_FAIL = (
    "Exit code 1\n____ test_flush ____\n"
    "tests/test_store.py:{line}: in test_flush\n    assert store.flush() == 3\n"
    "E   AssertionError: assert 2 == 3\n"
    "FAILED tests/test_store.py::test_flush - AssertionError\n1 failed, 11 passed in {secs}s"
)


def run(cmd: str, minute: float, *, output: str = "ok", error: bool = False, agent: str | None = None) -> ToolCall:
    call = ToolCall(ts=T0 + minute * MIN, tool=model.BASH, command=cmd, agent=agent)
    call.result_seen, call.is_error, call.output = True, error, output
    call.exit_code = 1 if error else 0
    return call


def edit(path: str, minute: float, tool: str = model.EDIT, agent: str | None = None) -> ToolCall:
    call = ToolCall(ts=T0 + minute * MIN, tool=tool, path=path, agent=agent)
    call.result_seen, call.output = True, "edited"
    return call


def read(path: str, minute: float, output: str) -> ToolCall:
    call = ToolCall(ts=T0 + minute * MIN, tool=model.READ, path=path)
    call.result_seen, call.output = True, output
    return call


def poll_task(task: str, minute: float, output: str) -> ToolCall:
    call = ToolCall(ts=T0 + minute * MIN, tool=model.BASH_OUTPUT, command=task)
    call.result_seen, call.output = True, output
    return call


def detect(calls: list[ToolCall], settings: Settings = RULES, **kw: Any) -> Detector:
    det = Detector(settings, bucket="medium", started_at=T0, workdir=WORKDIR, **kw)
    det.add_calls(calls)
    return det


def test_no_rules_section_is_the_seed_detector() -> None:
    assert S.rules.outcomes is False and S.rules.same_error is False
    assert RULES.rules.outcomes and RULES.rules.same_error and RULES.rules.poll_progress


def test_rules_section_is_checked_like_the_rest() -> None:
    bad = {**BUCKETS.raw, "rules": {**BUCKETS.raw["rules"], "outcomes": {"enabled": "yes"}}}
    with pytest.raises(SettingsError, match=r"rules\.outcomes\.enabled must be true or false"):
        Settings.from_mapping(bad)
    bad = {**BUCKETS.raw, "rules": {**BUCKETS.raw["rules"], "drift": {"enabled": True}}}
    with pytest.raises(SettingsError, match=r"missing key 'rules\.drift\.weight'"):
        Settings.from_mapping(bad)
    masks = {**BUCKETS.raw["rules"]["fingerprint"], "masks": ["("]}
    with pytest.raises(SettingsError, match=r"rules\.fingerprint\.masks\.0 is not a valid regex"):
        Settings.from_mapping({**BUCKETS.raw, "rules": {**BUCKETS.raw["rules"], "fingerprint": masks}})
    assert "rules" not in SEED_RAW


def test_fingerprint_masks_line_numbers_durations_and_tmp_paths() -> None:
    fp = Fingerprinter(RULES.rules.masks)
    a = fp.masked(PYTEST_FAIL.format(line=41, secs="0.42") + " /tmp/pytest-of-dev/pytest-7/x0 pid 4412")
    b = fp.masked(PYTEST_FAIL.format(line=57, secs="1.07") + " /tmp/pytest-of-dev/pytest-9/x3 pid 912")
    assert a == b
    assert fp.masked("2 failed, 10 passed in 0.5s") != fp.masked("1 failed, 11 passed in 0.5s")


def _edit_then_test(n: int, output: Any, error: bool) -> list[ToolCall]:
    calls = []
    for k in range(n):
        calls.append(edit(f"src/app/mod_{k}.py", 2 * k))
        calls.append(run("pytest tests/test_store.py -x", 2 * k + 1, output=output(k), error=error))
    return calls


def test_same_failure_after_every_edit_is_loop_evidence() -> None:
    calls = _edit_then_test(12, lambda k: PYTEST_FAIL.format(line=40 + k, secs=f"0.{k}"), True)
    v = detect(calls).evaluate(at(25))
    ev = finding(v, "sustained_bash")
    assert ev.startswith("12 of the last 24 tool calls ran tests/test_store.py; it failed identically 12 times")
    assert "11 of them after edits to src/app/mod_1.py, src/app/mod_2.py, src/app/mod_3.py, ..." in ev


def test_success_after_every_edit_is_progress() -> None:
    calls = _edit_then_test(12, lambda k: f"12 passed in 0.{k}s", False)
    assert "sustained_bash" not in detect(calls).evaluate(at(25)).signals
    assert "sustained_bash" in detect(calls, S).evaluate(at(25)).signals  # the contract's floor fires


def test_failures_that_change_after_edits_are_progress() -> None:
    calls = _edit_then_test(12, lambda k: f"{12 - k} failed, {k} passed in 0.3s", True)
    assert "sustained_bash" not in detect(calls).evaluate(at(25)).signals


def test_a_rerun_on_an_unchanged_tree_counts_even_when_it_passes() -> None:
    calls = [run("pytest tests/test_store.py", k, output="12 passed in 0.4s") for k in range(10)]
    ev = finding(detect(calls).evaluate(at(12)), "sustained_bash")
    assert "9 reruns on an unchanged tree" in ev


def test_a_rerun_without_a_result_counts_as_the_contract_counts_it() -> None:
    calls = []
    for k in range(10):
        calls.append(edit(f"src/m{k}.py", k))
        calls.append(ToolCall(ts=T0 + (k + 0.5) * MIN, tool=model.BASH, command="pytest tests/test_store.py"))
    det = detect(calls)
    assert det.windows.waiting() == 1  # the last test run still waits for its result...
    assert "sustained_bash" in det.evaluate(at(10)).signals  # ...and is judged for now as the contract counts it
    assert det.windows.waiting() == 1  # the last one may still be running: nothing came after it
    assert "sustained_bash" in det.evaluate(at(12)).signals
    assert det.windows.waiting() == 1
    assert "sustained_bash" in det.evaluate(at(9.5 + 15)).signals  # its longest wait ran out: taken as unknown
    assert det.windows.waiting() == 0


def test_same_error_from_varied_commands_without_a_change() -> None:
    err = 'Traceback (most recent call last):\n  File "<string>", line {n}, in <module>\n' + (
        "ModuleNotFoundError: No module named 'orchestrator.spiral'"
    )
    calls = [
        run(f"python -c 'import orchestrator.spiral as s{k}'", k, output=err.format(n=k), error=True) for k in range(4)
    ]
    v = detect(calls).evaluate(at(5))
    assert v.signals == ("same_error",)
    assert "4 of the last 4 calls failed with the same error" in finding(v, "same_error")
    assert "from 4 different commands; nothing but debris changed in between" in finding(v, "same_error")
    assert detect(calls[:3]).evaluate(at(5)).signals == ()
    assert detect(calls, S).evaluate(at(5)).signals == ()


def test_same_error_restarts_when_a_real_file_changes() -> None:
    calls = [run(f"curl -s localhost:8000/api?q={k}", k, output="401 Unauthorized", error=True) for k in range(3)]
    calls.append(edit("src/app/auth.py", 3.5))
    calls += [run(f"curl -s localhost:8000/api?q={k}", k + 4, output="401 Unauthorized", error=True) for k in range(3)]
    assert "same_error" not in detect(calls).evaluate(at(8)).signals
    calls[3] = edit("tmp_debug_auth.py", 3.5, tool=model.WRITE)  # debris is not a real change
    assert "same_error" in detect(calls).evaluate(at(8)).signals


def test_polls_whose_status_moves_do_not_count() -> None:
    statuses = ["queued", "in_progress", "in_progress 2/5 jobs", "in_progress 4/5 jobs", "completed success"]
    calls = []
    for k, status in enumerate(statuses * 2):
        calls.append(run("sleep 30", 2 * k, output=""))
        calls.append(run("gh run view 123", 2 * k + 1, output=status + f" run {k // 5}"))
    assert "polling" not in detect(calls).evaluate(at(25)).signals
    assert "polling" in detect(calls, S).evaluate(at(25)).signals


def test_polls_that_return_the_same_again_count() -> None:
    calls = []
    for k in range(8):
        calls.append(run("sleep 30", 2 * k, output=""))
        calls.append(run("gh run view 123", 2 * k + 1, output="in_progress"))
    v = detect(calls).evaluate(at(20))
    assert "polling" in v.signals
    assert finding(v, "polling") == "7 of the last 16 shell calls polled a background task (sleep x7)"


def test_reading_each_finished_task_once_is_not_polling() -> None:
    calls = [poll_task(f"task{k}", k, f"<status>completed</status> result {k}") for k in range(8)]
    assert "polling" not in detect(calls).evaluate(at(10)).signals
    stuck = [poll_task("b1", k, "<status>running</status>") for k in range(8)]
    assert "polling" in detect(stuck).evaluate(at(10)).signals


def test_chunked_reads_are_not_repetition_but_rereading_the_same_is() -> None:
    chunks = [read("src/big.py", k, f"{k * 200 + 1}\tdef part_{k}(): ...") for k in range(8)]
    assert "repetition" not in detect(chunks).evaluate(at(10)).signals
    again = [read("src/big.py", k, "1\tdef part_0(): ...") for k in range(8)]
    ev = finding(detect(again).evaluate(at(10)), "repetition")
    assert ev.startswith("8 of 8 tool calls hit src/big.py") and "7 reads returned the same content again" in ev


def test_subagent_calls_count_and_are_attributed() -> None:
    err = PYTEST_FAIL.format(line=40, secs="0.4")
    calls = []
    for k in range(10):
        calls.append(edit("src/app/store.py", 2 * k, agent="toolu_task1"))
        calls.append(run("pytest tests/test_store.py", 2 * k + 1, output=err, error=True, agent="toolu_task1"))
    ev = finding(detect(calls).evaluate(at(25)), "sustained_bash")
    assert "10 of these calls made by subagents" in ev
    without = Settings.from_mapping(BUCKETS.raw, {"rules": {"subagents": {"enabled": False}}})
    assert detect(calls, without).calls == 0


def test_scope_globs() -> None:
    assert in_scope("src/app/x.py", ("src/**",))
    assert in_scope("tests/unit/test_x.py", ("**/test_*.py",))
    assert in_scope("docs/guide/a.md", ("docs/",))
    assert not in_scope("src/app/x.py", ("src/*.py",))
    assert not in_scope("README.md", ("src/**", "tests/**"))


def test_drift_fires_when_recent_edits_leave_the_scope() -> None:
    calls = [edit("src/app/core.py", 1)] + [edit(f"scripts/tool_{k}.sh", 2 + k) for k in range(6)]
    det = detect(calls, scope=("src/**", "tests/**"))
    assert "drift" not in det.evaluate(at(10)).signals  # src/ changed 9 min ago
    v = det.evaluate(at(17))
    assert v.signals == ("drift",) and v.suspicion == 2
    assert finding(v, "drift") == (
        "the last 6 edits fell outside the ticket's scope (scripts/tool_2.sh, scripts/tool_3.sh, "
        "scripts/tool_4.sh, scripts/tool_5.sh); no file in scope or declared output changed for 16 min"
    )
    back = calls + [edit("src/app/core.py", 16)]
    assert "drift" not in detect(back, scope=("src/**",)).evaluate(at(17)).signals
    assert "drift" not in detect(calls).evaluate(at(17)).signals  # no scope declared: no drift


def test_next_change_after_knows_the_drift_and_result_deadlines() -> None:
    calls = [edit(f"scripts/tool_{k}.sh", k) for k in range(6)]
    det = detect(calls, scope=("src/**",))
    assert det.next_change_after(at(6)) == T0 + 15 * MIN  # in-scope quiet since launch
    waiting = detect([ToolCall(ts=at(1), tool=model.BASH, command="make")])
    assert waiting.windows.next_deadline() == at(1) + RULES.rules.result_wait_alone_s
    assert waiting.next_change_after(at(1)) == at(10)  # the stall clock (10 min from launch) comes first here


def test_a_slow_test_run_is_judged_by_its_result_when_it_comes() -> None:
    """A 90 s test run is not taken without its result just because it ran longer than a minute."""
    calls, det = [], Detector(RULES, bucket="medium", started_at=T0, workdir=WORKDIR)
    for k in range(12):
        det.add_call(edit(f"src/m{k}.py", 2 * k))
        test = ToolCall(ts=at(2 * k + 0.1), tool=model.BASH, command="pytest tests/test_store.py")
        det.add_call(test)
        det.evaluate(at(2 * k + 1.6))  # a tick while it runs (90 s)
        test.result_seen, test.output = True, "12 passed in 90.2s"  # its result arrives
        calls.append(test)
    assert "sustained_bash" not in det.evaluate(at(25)).signals


def test_fingerprint_ignores_pytest_rule_width_and_a_shifted_tail() -> None:
    fp = Fingerprinter(RULES.rules.masks)

    def run_output(secs: str) -> ToolCall:
        summary = f" 1 failed, 11 passed in {secs}s "
        pad = "=" * ((80 - len(summary)) // 2)
        text = "Exit code 1\n" + "collected 12 items\n" * 30 + "FAILED tests/test_store.py::test_flush\n"
        return run("pytest", 1, output=text + pad + summary + pad, error=True)

    assert fp.same(run_output("9.19"), run_output("10.01"))
    assert not fp.same(run_output("9.19"), run("pytest", 1, output="2 failed, 10 passed in 9.19s", error=True))


def test_a_whole_suite_test_run_is_a_target_under_the_outcomes_rule() -> None:
    fail = "FAIL src/store.test.js\n  x flushes batches (12 ms)\nTests: 1 failed, 11 passed, 12 total"
    calls = []
    for k in range(10):
        calls.append(edit(f"src/store_{k}.js", 2 * k))
        calls.append(run("npm test", 2 * k + 1, output=fail.replace("12 ms", f"{k + 9} ms"), error=True))
    ev = finding(detect(calls).evaluate(at(21)), "sustained_bash")
    assert ev.startswith("10 of the last 20 tool calls ran npm test; it failed identically 10 times")
    assert "sustained_bash" not in detect(calls, S).evaluate(at(21)).signals  # no file target for the five
    passing = [c if c.tool != model.BASH else run("npm test", (c.ts - T0) / MIN, output="12 passed") for c in calls]
    assert "sustained_bash" not in detect(passing).evaluate(at(21)).signals


def test_same_error_keys_on_the_error_line_and_sees_http_errors_of_exit_0_calls() -> None:
    tb = 'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n  File "/r/{m}.py", line {n}\n'
    tail = "ModuleNotFoundError: No module named 'yaml'"
    calls = [
        run(f"python -c 'import {m}'", k, output=tb.format(m=m, n=k) + tail, error=True) for k, m in enumerate("abcd")
    ]
    assert "No module named 'yaml'" in finding(detect(calls).evaluate(at(5)), "same_error")
    probes = [run(f"curl -s localhost:8000/api/v{k}", k, output="<title>404 Not Found</title> page") for k in range(4)]
    ev = finding(detect(probes).evaluate(at(5)), "same_error")
    assert "('404 Not Found')" in ev and "from 4 different commands" in ev
    fine = [run(f"curl -s localhost:8000/api/v{k}", k, output='{"ok": true}') for k in range(4)]
    assert detect(fine).evaluate(at(5)).signals == ()


def test_a_cancelled_call_is_not_an_error_of_its_own() -> None:
    calls = [
        run(f"git log -{k}", k, output="<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)
        for k in range(6)
    ]
    for c in calls:
        c.denied = True
    assert "same_error" not in detect(calls).evaluate(at(7)).signals


def test_the_rules_memory_does_not_grow_with_history() -> None:
    """The live detector is pickled every watcher tick: what the rules remember stays bounded."""
    import pickle

    def windows_after(n: int) -> int:
        det = Detector(RULES, bucket="medium", started_at=T0, workdir=WORKDIR)
        for i in range(n):
            out = f"Traceback line {i}\n" + "x" * 400 + f"\nValueError: case {i % 997}"
            det.add_call(run(f"python scripts/s{i % 5000}.py --n {i}", i / 30, output=out, error=i % 3 == 0))
            if i % 15 == 0:
                det.evaluate(T0 + i * 2.0)
        return len(pickle.dumps(det.windows, protocol=pickle.HIGHEST_PROTOCOL))

    small, large = windows_after(2_000), windows_after(20_000)
    assert large < 1.2 * small, (small, large)


# ---- what a review found (each once wrong) ----------------------------------------------------


def test_drift_counts_a_file_once_though_the_log_and_a_snapshot_both_see_it() -> None:
    from spiral.model import Snapshot

    det = detect([edit(f"scripts/{n}.sh", 1 + k) for k, n in enumerate("xyz")], scope=("src/**",))
    det.add_snapshot(Snapshot(ts=at(4), status={f"scripts/{n}.sh": "??" for n in "xyz"}))
    assert "drift" not in det.evaluate(at(20)).signals  # 3 files outside, not 6


def test_a_failed_edit_is_not_a_change_and_a_commit_is_not_a_revert() -> None:
    from spiral.model import Snapshot

    calls = []
    for k in range(10):
        failed = edit("src/app/store.py", 2 * k)
        failed.is_error, failed.output = True, "String to replace not found in file."
        calls += [failed, run("pytest tests/test_store.py", 2 * k + 1, output="12 passed in 0.4s")]
    assert "sustained_bash" in detect(calls).evaluate(at(21)).signals  # reruns on an unchanged tree
    det = detect([], tracked=["src/app.py"])
    det.add_snapshot(Snapshot(ts=at(1), status={"src/app.py": " M"}, hashes={"src/app.py": "a" * 40}))
    det.add_call(run("git commit -am wip", 1.5, output="[main 1a2b3c4] wip"))
    det.add_snapshot(Snapshot(ts=at(2), status={}))
    det.add_calls(edit("src/app.py", 3 + k) for k in range(12))
    assert "repetition" not in det.evaluate(at(16)).signals


def test_done_pattern_reads_status_fields_not_a_running_tasks_output() -> None:
    running = [poll_task("b1", k, "<status>running</status><stdout>Epoch 3 completed</stdout>") for k in range(8)]
    assert "polling" in detect(running).evaluate(at(10)).signals


def test_a_counter_after_a_colon_is_not_masked_as_a_line_number() -> None:
    calls = []
    for k in range(8):
        calls.append(run("sleep 30", 2 * k, output=""))
        calls.append(run("gh run view 1 --json jobs", 2 * k + 1, output=f'{{"jobs_done":{k},"status":"in_progress"}}'))
    assert "polling" not in detect(calls).evaluate(at(20)).signals


def test_scope_glob_edges() -> None:
    assert in_scope("src/a.py", ("./src/**",)) and in_scope("src/a.py", (".",))
    assert not in_scope("src/a/c.py", ("src/a[!b]c.py",)) and in_scope("src/axc.py", ("src/a[!b]c.py",))
    assert in_scope("b", ("[!]a]",)) and not in_scope("a", ("[!]a]",))
    assert not in_scope("src/x.ts", ("src/*.{ts,tsx}",))  # no brace alternatives: literal


def test_masks_that_do_not_join_are_refused_in_one_line() -> None:
    for masks, why in ((["foo", "(?i)bar"], "global flags"), (["(a)\\1"], "backreference")):
        with pytest.raises(SettingsError, match=rf"rules\.fingerprint\.masks do not join into one regex: .*{why}"):
            Settings.from_mapping(BUCKETS.raw, {"rules": {"fingerprint": {"masks": masks}}})


def test_whole_suite_targets_are_test_runs_only() -> None:
    from spiral.shellcmd import analyse

    assert [analyse(c).suite for c in ("npm test", "yarn test:unit", "go test ./...", "mise run test:ci")] == [
        "npm test",
        "yarn test:unit",
        "go test",
        "mise run test:ci",
    ]
    assert [analyse(c).suite for c in ("npm run test-server", "make run server", "pytest --version")] == [None] * 3


def test_different_selections_of_a_whole_suite_failing_differently_are_new_information() -> None:
    calls = [
        run(f"pytest -k case_{k}", k, output=f"FAILED tests/t.py::case_{k} - assert {k}", error=True) for k in range(12)
    ]
    assert "sustained_bash" not in detect(calls).evaluate(at(13)).signals
    same = [
        run(f"pytest -k case_{k}", k, output="FAILED tests/t.py::flush - assert 2 == 3", error=True) for k in range(12)
    ]
    assert "sustained_bash" in detect(same).evaluate(at(13)).signals  # ...but the same failure again is a rerun
