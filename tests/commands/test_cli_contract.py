"""The CLI's public contract (../shared/spec/cli.md): every command has help, every `--json`
output carries `version` and exactly the keys listed here, bad input is exit 2.

Keys may be added (add them here too); removing or renaming one breaks scripts.
Commands are discovered from the typer app, so a new one cannot skip these checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from orchestrator.cli import app
from tests.helpers import (
    CORPUS,
    REAL_TRACES,
    cli,
    fake_run,
    launch,
    orchestrator_home,
    state,
    status_json,
    ticket,
    tripped_run,
    wait,
)

STATUS_KEYS = {
    "id",
    "at_threshold",
    "feedback",
    "actions",
    "ladder_snoozed_until",
    "ticket",
    "bucket",
    "agent",
    "state",
    "reason",
    "elapsed_min",
    "expected_min",
    "region",
    "signals",
    "suspicion",
    "evidence",
    "tripped_at_min",
    "notified",
    "page_error",
    "notices",
    "executes_on",
    "provider",
    "hints",
    "last_activity_s",
    "last_activity_real_s",
    "tokens",
    "cost_usd",
    "started_at",
    "ended_at",
    "error",
    "queue_position",
    "evaluating",
    "setting_up",  # the ticket's setup: runs before the agent (README: setup:)
    "delivered",  # the work pushed on its branch (README: deliver:)
    "verified",
    "max_usd",
    "max_tokens",
    "held",
    "guidance_via",
    "guidance",
    "episode",
    "escalation_rungs",
    "escalations",
}
NUDGE_KEYS = {"version", "run_id", "guidance", "kind", "via", "queued_at"}
LAUNCH_KEYS = {"version", "run_id", "state", "reason", "run_dir"}
LOGS_LINE_KEYS = {
    "version",
    "ts",
    "minute",
    "tool",
    "command",
    "path",
    "is_error",
    "denied",
    "exit_code",
    "output",
    "result_seen",
    "line",
}
HISTORY_RUN_KEYS = {
    "run_id",
    "ticket_id",
    "bucket",
    "agent",
    "state",
    "reason",
    "created_at",
    "wall_min",
    "tool_calls",
    "tokens",
    "cost_usd",
    "unpriced_models",
    "tripped_at_min",
    "notified",
    "signals",
    "delivered_branch",
    "pushed_at",
    "pr_url",
    "delivery_error",
}
HISTORY_BY_KEYS = {"version", "by", "groups"}
HISTORY_GROUP_KEYS = {
    "group",
    "runs",
    "paged",
    "priced_runs",
    "unpriced_runs",
    "cost_usd",
    "mean_cost_usd",
    "tokens",
    "median_wall_min",
}
HISTORY_PAGES_KEYS = {"version", "all", "by_rule", "by_bucket"}
PAGE_FIGURES = {"pages", "judged", "useful", "false_alarms", "unjudged", "precision"}
FEEDBACK_KEYS = {"version", "run_id", "page", "verdict", "at"}
REPLAY_KEYS = {"id", "spiral", "notified_at_min", "signals", "region", "suspicion", "evidence", "pass"}
REPLAY_ALL_KEYS = REPLAY_KEYS | {"expected_spiral", "failures", "skipped_lines", "tool_calls"}
EVAL_KEYS = {"version", "cases", "tp", "fp", "tn", "fn", "precision", "recall", "fpr", "passed", "failed", "broken"}
CALIBRATE_BUCKET_KEYS = {"bucket", "runs", "median_min", "p90_min", "longest_min", "refused", "current", "proposed"}
TIMING_KEYS = {"expected_min", "soft_start_min", "stuck_min"}
BENCH_KEYS = {
    "version",
    "scenarios",
    "families",
    "positives",
    "detectors",
    "per_family",
    "still_paging_negatives",
    "missed_positive_families",
    "timing",
}
BENCH_DETECTOR_KEYS = {
    "detector",
    "tp",
    "fp",
    "tn",
    "fn",
    "precision",
    "recall",
    "fpr",
    "recall_ci_by_family",
    "fpr_ci_by_family",
    "median_minutes_onset_to_page",
    "pages_before_window",
    "pages_after_window",
    "attribution",
}
BENCH_FAMILY_KEYS = {
    "family",
    "positive",
    "signal",
    "scenarios",
    "paged",
    "paged_in_window",
    "attributed",
    "rate",
    "ci",
}
BENCH_REAL_TRACE_KEYS = {"file", "format", "tool_calls", "minutes", "first_fired_min", "paged_at_min"}
# the commands with --json, each pinned by a test below
JSON_COMMANDS = {"status", "launch", "logs", "replay", "eval", "history", "calibrate", "nudge", "gc", "feedback"}
GC_KEYS = {
    "version",
    "dry_run",
    "keep_days",
    "keep_days_flagged",
    "clones",
    "removed",
    "size_bytes",
    "frees_bytes",
    "kept",
    "untouched",
    "skipped",
}
GC_CLONE_KEYS = {
    "run_id",
    "state",
    "flagged",
    "ended_at",
    "age_days",
    "keep_days",
    "size_bytes",
    "frees_bytes",
    "files",
    "resumed",
    "removed",
    "error",
    "unsaved_paths",
    "unsaved_commits",
    "saved",
}
GC_KEPT_KEYS = {"run_id", "state", "flagged", "age_days", "keep_days", "due_in_days"}


def _walk(cmd: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, cmd)]
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        found += _walk(sub, (*path, name))
    return found


COMMANDS = _walk(get_command(app), ())


def _ids(path: tuple[str, ...]) -> str:
    return " ".join(path) or "(root)"


# ---- help -------------------------------------------------------------------------------


def test_the_command_tree_is_discovered() -> None:
    names = {p for p, _ in COMMANDS}
    assert {("launch",), ("status",), ("corpus", "import"), ("ledger", "rebuild")} <= names
    assert len(names) >= 14


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[_ids(p) for p, _ in COMMANDS])
def test_every_command_and_subcommand_has_help(path: tuple[str, ...], cmd: Any) -> None:
    assert (cmd.help or "").strip(), f"{_ids(path)} has no help text (a docstring or help=)"
    res = CliRunner().invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage" in res.output
    assert cmd.help.split()[0] in res.output
    for param in cmd.params:
        if param.name != "help":
            assert (getattr(param, "help", None) or "").strip(), f"{_ids(path)}: {param.name} has no help"


def test_every_command_has_help() -> None:
    for args in (
        ["--help"],
        ["replay", "--help"],
        ["eval", "--help"],
        ["corpus", "--help"],
        ["corpus", "import", "--help"],
    ):
        p = cli(*args)
        assert p.returncode == 0, args
        assert "Usage" in p.stdout


def test_every_json_command_is_pinned_here() -> None:
    with_json = {" ".join(p) for p, cmd in COMMANDS if any("--json" in getattr(x, "opts", ()) for x in cmd.params)}
    assert with_json == JSON_COMMANDS


# ---- --json key sets -----------------------------------------------------------------------


def test_launch_status_logs_and_history_json(tmp_path: Path, repo: Path, home: Path) -> None:
    p = cli("launch", str(ticket(tmp_path, repo, 'say {"tool": "Edit", "path": "src/app.py"}')), "--json")
    assert p.returncode == 0, p.stderr
    launched = json.loads(p.stdout)
    assert set(launched) == LAUNCH_KEYS and launched["version"] == 1
    run_id = launched["run_id"]
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    out = status_json()
    assert set(out) == {"version", "runs"} and out["version"] == 1
    assert set(out["runs"][0]) == STATUS_KEYS
    lines = [json.loads(x) for x in cli("logs", run_id, "--json").stdout.splitlines()]
    assert lines and all(set(x) == LOGS_LINE_KEYS and x["version"] == 1 for x in lines)
    hist = json.loads(cli("history", "--json").stdout)
    assert set(hist) == {"version", "runs"} and hist["version"] == 1
    assert set(hist["runs"][0]) == HISTORY_RUN_KEYS
    grouped = json.loads(cli("history", "--by", "ending", "--json").stdout)
    assert set(grouped) == HISTORY_BY_KEYS and grouped["version"] == 1 and grouped["by"] == "ending"
    assert [set(g) for g in grouped["groups"]] == [HISTORY_GROUP_KEYS] and grouped["groups"][0]["group"] == "succeeded"
    sql = json.loads(cli("history", "--sql", "SELECT run_id, state FROM runs", "--json").stdout)
    assert set(sql) == {"version", "columns", "rows"} and sql["version"] == 1
    assert sql["columns"] == ["run_id", "state"] and sql["rows"] == [{"run_id": run_id, "state": "succeeded"}]
    pages = json.loads(cli("history", "--pages", "--json").stdout)
    assert set(pages) == HISTORY_PAGES_KEYS and pages["version"] == 1
    assert set(pages["all"]) == PAGE_FIGURES and pages["all"]["pages"] == 0 and pages["all"]["precision"] is None
    assert pages["by_rule"] == [] and pages["by_bucket"] == []


def test_status_json_contract_and_table(tmp_path: Path, repo: Path, home: Path) -> None:
    empty = cli("status")
    assert empty.returncode == 0 and "no runs yet" in empty.stdout
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}'))
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    out = status_json()
    assert out["version"] == 1
    assert set(out["runs"][0]) == STATUS_KEYS
    table = cli("status")
    assert run_id in table.stdout and "succeeded" in table.stdout


def test_replay_json_contract() -> None:
    p = cli("replay", str(CORPUS / "spiral-001-fixture-shim"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert REPLAY_KEYS <= set(out)
    assert out["spiral"] is True and out["pass"] is True and out["region"] == "soft"
    assert 70 <= out["notified_at_min"] <= 85
    assert any("tmp_debug_mc" in e for e in out["evidence"])
    assert out["skipped_lines"] == 0


def test_eval_json_contract() -> None:
    p = cli("eval", str(CORPUS), "--json")
    assert p.returncode == 0, p.stdout[-2000:]
    out = json.loads(p.stdout)
    assert {"cases", "tp", "fp", "tn", "fn", "precision", "recall", "fpr", "passed", "failed"} <= set(out)
    assert out["failed"] == 0 and out["fp"] == 0 and out["fn"] == 0
    assert out["passed"] == len(out["cases"]) >= 12
    assert all(REPLAY_KEYS <= set(c) for c in out["cases"])


def test_replay_and_eval_json_key_sets() -> None:
    out = json.loads(cli("replay", str(CORPUS / "healthy-001-steady-feature"), "--json").stdout)
    assert set(out) == REPLAY_ALL_KEYS | {"version"} and out["version"] == 1
    summary = json.loads(cli("eval", str(CORPUS), "--json").stdout)
    assert set(summary) == EVAL_KEYS and summary["version"] == 1
    assert all(set(c) == REPLAY_ALL_KEYS for c in summary["cases"])  # the version is the envelope's


def test_calibrate_json_key_sets(tmp_path: Path) -> None:
    for i in range(3):
        fake_run(f"cal-{i}", wall_min=10 + i)
    out = json.loads(cli("calibrate", "--json", "--min-runs", "3").stdout)
    assert set(out) == {"version", "min_runs", "buckets", "written", "false_alarms_by_rule"}
    assert out["version"] == 1 and out["min_runs"] == 3
    assert out["written"] is None  # (the buckets.yaml written, with --write)
    assert out["false_alarms_by_rule"] == []  # (no page has a verdict: tests/ledger/test_page_feedback.py)
    rows = {b["bucket"]: b for b in out["buckets"]}
    assert set(rows) == {"small", "medium", "big"}
    assert all(set(b) == CALIBRATE_BUCKET_KEYS and set(b["current"]) == TIMING_KEYS for b in rows.values())
    assert set(rows["medium"]["proposed"]) == TIMING_KEYS and rows["small"]["proposed"] is None


def test_bench_json_key_sets() -> None:
    p = cli("eval", "--bench", "--json", "--per-family", "2")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    expected = BENCH_KEYS | ({"real_traces"} if REAL_TRACES.is_dir() else set())
    assert set(out) == expected and out["version"] == 1
    assert all(set(d) == BENCH_DETECTOR_KEYS for d in out["detectors"])
    assert all(set(f) == BENCH_FAMILY_KEYS for f in out["per_family"])
    assert set(out["timing"]) == {"generate_s", "evaluate_s", "scenarios_per_s", "total_s"}
    assert all(set(t) == BENCH_REAL_TRACE_KEYS for t in out.get("real_traces", []))


def test_feedback_json_key_sets() -> None:
    tripped_run(orchestrator_home(), "fb-1")
    p = cli("feedback", "fb-1", "false-alarm", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == FEEDBACK_KEYS and out["version"] == 1
    assert (out["run_id"], out["page"], out["verdict"]) == ("fb-1", 1, "false-alarm")


def test_gc_json_key_sets(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}'))
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    kept = json.loads(cli("gc", "--json").stdout)
    assert set(kept) == GC_KEYS and kept["version"] == 1 and kept["dry_run"] is False
    assert [set(k) for k in kept["kept"]] == [GC_KEPT_KEYS] and kept["clones"] == []

    def settled() -> bool:  # gc leaves a run alone while its supervisor is still finishing
        sup = state(home, run_id)["supervisor"]
        return sup is None or not psutil.pid_exists(sup["pid"])

    wait(settled, what="the supervisor to exit")
    p = cli("gc", "--json", "--dry-run", "--older-than", "0")
    assert p.returncode == 0, p.stderr
    due = json.loads(p.stdout)
    assert set(due) == GC_KEYS and [set(c) for c in due["clones"]] == [GC_CLONE_KEYS]


# ---- exit codes ----------------------------------------------------------------------------


def test_unknown_run_is_exit_2(home: Path) -> None:
    for args in (["kill", "nope"], ["logs", "nope"], ["nudge", "nope", "try again"]):
        p = cli(*args)
        assert p.returncode == 2 and "no run 'nope'" in p.stderr
