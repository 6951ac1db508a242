"""`status` and `watch`: every run shown (broken ones too), one watcher at a time, launch-time settings kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import ROOT, cli, launch, start_watcher, state, ticket, wait


def test_watch_once_and_single_watcher(tmp_path: Path, repo: Path, home: Path) -> None:
    p = cli("watch", "--once")
    assert p.returncode == 0, p.stderr
    first = start_watcher(tick=0.2)
    try:
        wait(lambda: (home / "watch.lock").exists() and (home / "watch.lock").read_text().strip() == str(first.pid))
        second = cli("watch", "--once")
        assert second.returncode == 2
        assert "another watcher is already running" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=10)


def test_a_broken_run_is_shown_not_hidden(tmp_path: Path, repo: Path, home: Path) -> None:
    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}'))
    wait(lambda: state(home, good)["state"] == "succeeded")
    bad = home / "runs" / "zz-broken"
    bad.mkdir()
    (bad / "state.json").write_text(
        '{"run_id": "zz-broken", "state": "running", "bucket": "huge", "format": "generic"}'
    )
    p = cli("status", "--json")
    assert p.returncode == 0
    rows = {r["id"]: r for r in json.loads(p.stdout)["runs"]}
    assert rows[good]["error"] is None
    assert rows["zz-broken"]["error"] and "zz-broken could not be checked" in p.stderr
    table = cli("status")
    assert "error" in table.stdout and "zz-broken" in table.stdout
    assert cli("watch", "--once").returncode == 0


def test_a_run_keeps_the_settings_it_launched_with(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "sleep 20"))
    changed = tmp_path / "buckets.yaml"
    changed.write_text(
        (ROOT / "buckets.yaml")
        .read_text()
        .replace(
            "small:  {expected_min: 20, soft_start_min: 30,  stuck_min: 35}",
            "small:  {expected_min: 0.001, soft_start_min: 0.002,  stuck_min: 0.003}",
        )
    )
    p = cli("status", "--json", env={"ORCHESTRATOR_BUCKETS": str(changed)}, timeout=60)
    row = next(r for r in json.loads(p.stdout)["runs"] if r["id"] == run_id)
    assert row["state"] == "running" and row["expected_min"] == 20 and row["region"] == "healthy"
    cli("kill", run_id)
