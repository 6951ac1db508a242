"""`history --by ending|ticket|agent|bucket` (issue 13): one row per group over the ledger.

Real runs of the fake agent (one paged through a real receiver and then killed) for the counts
per ending; run folders written directly for the spend, where the prices are known exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    TINY,
    Receiver,
    claude_usage,
    cli,
    fake_run,
    launch,
    one_line_error,
    spiral_body,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    write_config,
)

EDIT = 'say {"tool": "Edit", "path": "src/app.py"}'


def _groups(*args: str) -> dict[Any, dict[str, Any]]:
    p = cli("history", *args, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"version", "by", "groups"}
    return {g["group"]: g for g in out["groups"]}


def test_history_by_ending_counts_real_runs_and_their_pages(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    ok = [launch(ticket(tmp_path, repo, EDIT, name=f"ok{i}")) for i in range(2)]
    bad = launch(ticket(tmp_path, repo, f"{EDIT}\nexit 1", name="bad"))
    loop = launch(ticket(tmp_path, repo, spiral_body(), name="loop", overrides=TINY))
    watcher = start_watcher()
    try:
        wait(lambda: spiral_pages(receiver, loop) == 1, timeout=40, what="the page")
        wait(lambda: state(home, loop)["spiral"]["notified"] is True, timeout=10, what="the page recorded")
    finally:
        watcher.terminate()
        watcher.wait(timeout=20)
    assert cli("kill", loop).returncode == 0
    for run_id, end in [(ok[0], "succeeded"), (ok[1], "succeeded"), (bad, "failed"), (loop, "killed")]:
        wait(lambda r=run_id, e=end: state(home, r)["state"] == e, what=f"{run_id} {end}")

    by_ending = _groups("--by", "ending")
    assert {k: (g["runs"], g["paged"]) for k, g in by_ending.items()} == {
        "succeeded": (2, 0),
        "failed": (1, 0),
        "killed": (1, 1),
    }
    assert list(by_ending)[0] == "succeeded"  # largest group first
    for g in by_ending.values():  # the fake agent reports no usage: no cost, never $0
        assert g["priced_runs"] == 0 and g["unpriced_runs"] == 0
        assert g["cost_usd"] is None and g["mean_cost_usd"] is None and g["tokens"] == 0
        assert g["median_wall_min"] is not None and g["median_wall_min"] >= 0

    by_ticket = _groups("--by", "ticket")
    assert {k: g["runs"] for k, g in by_ticket.items()} == {"ok0": 1, "ok1": 1, "bad": 1, "loop": 1}
    assert {k: g["runs"] for k, g in _groups("--by", "agent").items()} == {"fake": 4}
    assert {k: g["runs"] for k, g in _groups("--by", "bucket", "--state", "succeeded").items()} == {"small": 2}
    assert {k: g["runs"] for k, g in _groups("--by", "ending", "--ticket", "loop").items()} == {"killed": 1}
    assert _groups("--by", "ending", "--since", "1h") == by_ending

    table = cli("history", "--by", "ending")
    assert table.returncode == 0, table.stderr
    head = next(line for line in table.stdout.splitlines() if "┃" in line)  # rich's heading row
    rows = [line for line in table.stdout.splitlines() if "│" in line]
    assert all(col in head for col in ("ending", "runs", "paged", "tokens", "cost", "median wall"))
    assert any("succeeded" in r and " 2 " in r for r in rows) and any("killed" in r and " 1 " in r for r in rows)
    assert "$0" not in table.stdout
    assert cli("history", "--by", "ending", "--state", "stalled").stdout.strip() == "no runs match"


def test_history_by_keeps_unpriced_runs_apart_from_the_cost() -> None:
    priced = [claude_usage("m1", "claude-sonnet-4-5", 10, 10)]
    fake_run("a-1", bucket="medium", wall_min=10, events=[*priced, {"type": "result", "total_cost_usd": 0.25}])
    fake_run("a-2", bucket="medium", wall_min=30, events=[*priced, {"type": "result", "total_cost_usd": 0.75}])
    fake_run("a-3", bucket="medium", wall_min=50, events=[claude_usage("m1", "claude-mystery-9", 500, 50)])
    fake_run("b-1", bucket="small", wall_min=5, events=[claude_usage("m1", "claude-mystery-9", 100, 10)])
    fake_run("b-2", bucket="small", wall_min=7, state_name="failed", events=[])  # no usage reported at all
    groups = _groups("--by", "bucket")
    medium, small = groups["medium"], groups["small"]
    assert medium["runs"] == 3 and medium["priced_runs"] == 2 and medium["unpriced_runs"] == 1
    assert medium["cost_usd"] == pytest.approx(1.0) and medium["mean_cost_usd"] == pytest.approx(0.5)
    assert medium["median_wall_min"] == pytest.approx(30) and medium["tokens"] == 2 * 20 + 550
    assert small["runs"] == 2 and small["priced_runs"] == 0 and small["unpriced_runs"] == 1
    assert small["cost_usd"] is None and small["mean_cost_usd"] is None  # unknown, never $0
    assert small["median_wall_min"] == pytest.approx(6) and small["tokens"] == 110
    assert {k: g["runs"] for k, g in _groups("--by", "ending").items()} == {"succeeded": 4, "failed": 1}
    table = cli("history", "--by", "bucket").stdout
    line = next(x for x in table.splitlines() if "medium" in x)
    assert "$1.00 (2 of 3 priced)" in line and "$0.50" in line
    assert "$0" not in next(x for x in table.splitlines() if "small" in x)


def test_bad_by_values_are_one_line_errors() -> None:
    one_line_error(cli("history", "--by", "colour"), "--by", "ending, ticket, agent, bucket")
    one_line_error(cli("history", "--by", "ending", "--sql", "SELECT 1"), "--by", "--sql")
