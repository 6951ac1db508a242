"""The DuckDB ledger (orchestrator/ledger/store.py): a real file, real run folders, history and SQL,
incremental refresh, migrations, concurrent readers and writers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from orchestrator.ledger import queries
from orchestrator.ledger import store as ledger
from tests.helpers import (
    ROOT,
    claude_usage,
    cli,
    fake_run,
    launch,
    orchestrator_home,
    start_watcher,
    state,
    ticket,
    wait,
)


def test_history_lists_runs_with_endings_and_spend() -> None:
    fake_run(
        "alpha-1",
        events=[
            claude_usage("m1", "claude-sonnet-4-5-20250929", 1000, 200),
            claude_usage("m1", "claude-sonnet-4-5-20250929", 1000, 200),  # same message
            claude_usage("m2", "claude-sonnet-4-5-20250929", 3000, 100),
        ],
    )
    fake_run("beta-1", state_name="failed", events=[claude_usage("m1", "claude-mystery-9", 500, 50)])
    fake_run(
        "gamma-1",
        events=[
            claude_usage("m1", "claude-sonnet-4-5", 10, 10),
            {"type": "result", "subtype": "success", "total_cost_usd": 0.4321},
        ],
    )
    p = cli("history", "--json")
    assert p.returncode == 0, p.stderr
    rows = {r["run_id"]: r for r in json.loads(p.stdout)["runs"]}
    assert set(rows) == {"alpha-1", "beta-1", "gamma-1"}
    a = rows["alpha-1"]
    assert a["state"] == "succeeded" and a["wall_min"] == 30
    assert a["tokens"] == 4000 + 300  # message m1 counted once
    assert a["cost_usd"] == pytest.approx((4000 * 3 + 300 * 15) / 1e6)
    b = rows["beta-1"]
    assert b["cost_usd"] is None and b["unpriced_models"] == "claude-mystery-9"  # unpriced, never $0
    assert rows["gamma-1"]["cost_usd"] == pytest.approx(0.4321)  # the agent's own bill wins
    table = cli("history", "--ticket", "beta").stdout
    assert "beta-1" in table and "unpriced" in table and "alpha-1" not in table
    assert json.loads(cli("history", "--state", "failed", "--json").stdout)["runs"][0]["run_id"] == "beta-1"
    assert json.loads(cli("history", "--since", "1d", "--json").stdout)["runs"] == []
    bad = cli("history", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_sql_over_ledger_and_raw_events() -> None:
    fake_run("alpha-1", events=[claude_usage("m1", "claude-sonnet-4-5", 1, 1), {"type": "result"}])
    fake_run("beta-1", events=[{"type": "result"}])
    p = cli("history", "--sql", "SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows"] == [{"run_id": "alpha-1", "n": 2}, {"run_id": "beta-1", "n": 1}]
    p = cli("history", "--sql", "SELECT state, count(*) FROM runs GROUP BY state")
    assert p.returncode == 0 and "succeeded" in p.stdout
    bad = cli("history", "--sql", "SELEKT nonsense")
    assert bad.returncode == 2 and "SQL error" in bad.stderr and len(bad.stderr.splitlines()) == 1
    for extra, said in ((["--state", "failed"], "--state"), (["--limit", "3"], "--limit")):
        p = cli("history", "--sql", "SELECT 1", *extra)  # a filter the SQL would silently not apply
        assert p.returncode == 2 and f"--sql does not go with {said}" in p.stderr
    p = cli("history", "--state", "bogus")
    assert p.returncode == 2 and "--state must be one of queued, launching, running" in p.stderr
    # a folder where one run's log should be: that run is left out of the view, with a warning
    gamma = fake_run("gamma-1")
    (gamma / "events.jsonl").unlink()
    (gamma / "events.jsonl").mkdir()
    p = cli("history", "--sql", "SELECT count(DISTINCT run_id) AS n FROM events", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["rows"] == [{"n": 2}], p.stderr
    assert "gamma-1/events.jsonl: not a readable file" in p.stderr
    assert cli("calibrate").returncode == 0
    p = cli("history")
    assert p.returncode == 0 and "could not be read into the ledger and are not shown: gamma-1" in p.stderr


def test_torn_files_do_not_break_a_rebuild() -> None:
    fake_run("good-1", events=[claude_usage("m1", "claude-sonnet-4-5", 100, 10)])
    torn = fake_run("torn-events-1", events=[claude_usage("m1", "claude-sonnet-4-5", 100, 10)])
    with (torn / "events.jsonl").open("ab") as fh:
        fh.write(b'{"ts": "2026-05-20T09:00:00Z", "data": {"type": "assis')
    broken = fake_run("torn-state-1")
    (broken / "state.json").write_text('{"run_id": "torn-state-1", "sta')
    p = cli("ledger", "rebuild")
    assert p.returncode == 0, p.stderr
    assert "2 runs indexed from 3 folders (1 unreadable)" in p.stdout
    rows = {r["run_id"]: r for r in json.loads(cli("history", "--json").stdout)["runs"]}
    assert set(rows) == {"good-1", "torn-events-1"}
    assert rows["torn-events-1"]["tokens"] == 110


def test_incremental_refresh_rereads_only_changed_runs() -> None:
    for i in range(5):
        fake_run(f"r-{i}")
    assert ledger.refresh().indexed == 5
    assert ledger.refresh().indexed == 0
    d = orchestrator_home() / "runs" / "r-2"
    st = json.loads((d / "state.json").read_text())
    st["state"] = "killed"
    (d / "state.json").write_text(json.dumps(st))
    os.utime(d / "state.json", (1, 1))  # a different mtime, whatever the clock's resolution
    import shutil

    shutil.rmtree(orchestrator_home() / "runs" / "r-4")
    stats = ledger.refresh()
    assert (stats.indexed, stats.removed) == (1, 1)
    rows = {r["run_id"]: r["state"] for r in queries.history(since=None, ticket=None, state=None, limit=50)}
    assert rows == {"r-0": "succeeded", "r-1": "succeeded", "r-2": "killed", "r-3": "succeeded"}


def test_schema_migrates_from_version_1() -> None:
    path = ledger.ledger_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute(ledger.MIGRATIONS[0])
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.close()
    with ledger.connect() as con:
        assert ledger.schema_version(con) == ledger.SCHEMA_VERSION
        cols = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"
            ).fetchall()
        }
    assert {"cost_usd", "input_tokens", "unpriced_models"} <= cols


def test_history_and_status_while_the_watcher_writes(tmp_path: Path, repo: Path, home: Path) -> None:
    body = "\n".join(['say {"tool": "Bash", "command": "ls"}', "sleep 0.05"] * 60)
    runs = [launch(ticket(tmp_path, repo, body, name=f"w{i}")) for i in range(3)]
    watcher = start_watcher(tick=0.1)
    try:
        readers = [
            subprocess.Popen(
                [sys.executable, "-m", "orchestrator", cmd, "--json"],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for cmd in ["history", "status"] * 6
        ]
        for r in readers:
            out, err = r.communicate(timeout=120)
            assert r.returncode == 0, err.decode()
            assert json.loads(out)["version"] == 1
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    for run_id in runs:
        wait(lambda run_id=run_id: state(home, run_id)["state"] == "succeeded")
    rows = json.loads(cli("history", "--json").stdout)["runs"]
    assert {r["run_id"] for r in rows} == set(runs)
    assert all(r["state"] == "succeeded" and r["tool_calls"] == 60 for r in rows)


def test_new_prices_reprice_old_rows_and_bad_input_is_one_line(tmp_path: Path) -> None:
    fake_run("m-1", events=[claude_usage("m1", "claude-mystery-9", 1_000_000, 0)])
    assert json.loads(cli("history", "--json").stdout)["runs"][0]["cost_usd"] is None
    (orchestrator_home() / "config.yaml").write_text(
        json.dumps({"prices": {"claude-mystery-9": {"input": 2, "output": 4}}})
    )
    assert json.loads(cli("history", "--json").stdout)["runs"][0]["cost_usd"] == pytest.approx(2.0)
    for since in ("9999999999d", "²d", "soon"):
        p = cli("history", "--since", since)
        assert "Traceback" not in p.stderr and p.returncode in (0, 2), p.stderr
    weird = fake_run("m-2")
    st = json.loads((weird / "state.json").read_text())
    st["time_scale"] = "fast"
    (weird / "state.json").write_text(json.dumps(st))
    p = cli("ledger", "rebuild")
    assert p.returncode == 0 and "(1 unreadable)" in p.stdout


def test_many_first_history_calls_at_once_and_a_corrupt_ledger() -> None:
    fake_run("c-1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "history", "--json"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(8)
    ]
    for p in procs:  # none of them finds the ledger: they race to create it
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        assert [r["run_id"] for r in json.loads(out)["runs"]] == ["c-1"]
    ledger.ledger_path().write_bytes(b"this is not a database")
    p = cli("history", "--json")
    assert p.returncode == 0 and "not a DuckDB database" in p.stderr
    assert [r["run_id"] for r in json.loads(p.stdout)["runs"]] == ["c-1"]


def test_a_state_folder_with_a_question_mark_is_one_line_and_status_still_works(tmp_path: Path) -> None:
    home = tmp_path / "q?home"
    env = {"ORCHESTRATOR_HOME": str(home)}
    p = cli("history", env=env)
    assert p.returncode == 2 and "cannot open a ledger under a path with '?'" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert cli("status", env=env).returncode == 0


def test_a_ledger_with_damaged_blocks_anywhere_is_set_aside_and_rebuilt() -> None:
    """Issue 38: a damaged block in the middle of the file ("Corrupt database file: computed checksum
    ... does not match") ended history, --sql and rebuild in a traceback on every call."""
    import random

    for k in range(30):
        fake_run(f"d-{k:02d}", wall_min=10 + k)
    assert cli("history", "--json").returncode == 0
    path = ledger.ledger_path()
    good = path.read_bytes()
    rng = random.Random(38)
    offsets = sorted({12288, *(rng.randrange(4096, len(good) - 4096) for _ in range(9))})
    for offset in offsets:
        damaged = bytearray(good)
        damaged[offset : offset + 65536] = rng.randbytes(min(65536, len(good) - offset))
        path.write_bytes(bytes(damaged))
        for args in (
            ("ledger", "rebuild"),
            ("history", "--sql", "SELECT count(*) AS n FROM runs", "--json"),
            ("history", "--json"),
        ):
            p = cli(*args)
            assert p.returncode == 0 and "Traceback" not in p.stderr, (offset, args, p.stderr)
        assert len(json.loads(p.stdout)["runs"]) == 30, offset  # every run is back, from the run folders
        path.write_bytes(good)
    assert any(x.name.startswith("ledger.duckdb.unreadable-") for x in path.parent.iterdir())
