"""The DuckDB ledger: a real file, real run folders, concurrent readers, recalibration."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from orchestrator.ledger import store as ledger
from orchestrator.ledger.calibrate import percentile
from orchestrator.ledger.spend import DEFAULT_PRICES, SpendCounter
from tests.conftest import REAL_TRACES
from tests.test_orchestrator import FAKE_AGENT, ROOT, launch, state, ticket, wait


def home() -> Path:
    h = Path(os.environ["ORCHESTRATOR_HOME"])
    h.mkdir(parents=True, exist_ok=True)
    return h


def fake_run(
    run_id: str,
    *,
    bucket: str = "medium",
    state_name: str = "succeeded",
    wall_min: float = 30,
    events: list[Any] | None = None,
    fmt: str = "claude-stream-json",
) -> Path:
    d = home() / "runs" / run_id
    d.mkdir(parents=True)
    start = 1_780_000_000.0
    iso = lambda t: __import__("spiral.timestamps", fromlist=["format_ts"]).format_ts(t)  # noqa: E731
    st = {
        "run_id": run_id,
        "ticket_id": run_id.rsplit("-", 1)[0],
        "bucket": bucket,
        "agent": "claude",
        "format": fmt,
        "state": state_name,
        "reason": "agent exited 0",
        "created_at": iso(start),
        "started_at": iso(start),
        "ended_at": iso(start + wall_min * 60),
        "exit_code": 0,
        "spiral": {"tool_calls": 3},
    }
    (d / "state.json").write_text(json.dumps(st))
    lines = [json.dumps({"ts": iso(start + i), "data": e}) for i, e in enumerate(events or [])]
    (d / "events.jsonl").write_text("".join(x + "\n" for x in lines))
    return d


def claude_usage(mid: str, model: str, i: int, o: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": mid,
            "model": model,
            "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "usage": {
                "input_tokens": i,
                "output_tokens": o,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        },
    }


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
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
    p = run_cli("history", "--json")
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
    table = run_cli("history", "--ticket", "beta").stdout
    assert "beta-1" in table and "unpriced" in table and "alpha-1" not in table
    assert json.loads(run_cli("history", "--state", "failed", "--json").stdout)["runs"][0]["run_id"] == "beta-1"
    assert json.loads(run_cli("history", "--since", "1d", "--json").stdout)["runs"] == []
    bad = run_cli("history", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_sql_over_ledger_and_raw_events() -> None:
    fake_run("alpha-1", events=[claude_usage("m1", "claude-sonnet-4-5", 1, 1), {"type": "result"}])
    fake_run("beta-1", events=[{"type": "result"}])
    p = run_cli(
        "history", "--sql", "SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id", "--json"
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows"] == [{"run_id": "alpha-1", "n": 2}, {"run_id": "beta-1", "n": 1}]
    p = run_cli("history", "--sql", "SELECT state, count(*) FROM runs GROUP BY state")
    assert p.returncode == 0 and "succeeded" in p.stdout
    bad = run_cli("history", "--sql", "SELEKT nonsense")
    assert bad.returncode == 2 and "SQL error" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_torn_files_do_not_break_a_rebuild() -> None:
    fake_run("good-1", events=[claude_usage("m1", "claude-sonnet-4-5", 100, 10)])
    torn = fake_run("torn-events-1", events=[claude_usage("m1", "claude-sonnet-4-5", 100, 10)])
    with (torn / "events.jsonl").open("ab") as fh:
        fh.write(b'{"ts": "2026-05-20T09:00:00Z", "data": {"type": "assis')
    broken = fake_run("torn-state-1")
    (broken / "state.json").write_text('{"run_id": "torn-state-1", "sta')
    p = run_cli("ledger", "rebuild")
    assert p.returncode == 0, p.stderr
    assert "2 runs indexed from 3 folders (1 unreadable)" in p.stdout
    rows = {r["run_id"]: r for r in json.loads(run_cli("history", "--json").stdout)["runs"]}
    assert set(rows) == {"good-1", "torn-events-1"}
    assert rows["torn-events-1"]["tokens"] == 110


def test_incremental_refresh_rereads_only_changed_runs() -> None:
    for i in range(5):
        fake_run(f"r-{i}")
    assert ledger.refresh().indexed == 5
    assert ledger.refresh().indexed == 0
    d = home() / "runs" / "r-2"
    st = json.loads((d / "state.json").read_text())
    st["state"] = "killed"
    (d / "state.json").write_text(json.dumps(st))
    os.utime(d / "state.json", (1, 1))  # a different mtime, whatever the clock's resolution
    import shutil

    shutil.rmtree(home() / "runs" / "r-4")
    stats = ledger.refresh()
    assert (stats.indexed, stats.removed) == (1, 1)
    rows = {r["run_id"]: r["state"] for r in ledger.history(since=None, ticket=None, state=None, limit=50)}
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


def test_history_and_status_while_the_watcher_writes(tmp_path: Path, repo: Path) -> None:
    h = home()
    (h / "config.yaml").write_text(
        json.dumps({"agents": {"fake": {"command": [sys.executable, str(FAKE_AGENT)], "format": "generic"}}})
    )
    body = "\n".join(['say {"tool": "Bash", "command": "ls"}', "sleep 0.05"] * 60)
    runs = [launch(ticket(tmp_path, repo, body, name=f"w{i}")) for i in range(3)]
    watcher = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "watch", "--tick", "0.1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
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
        wait(lambda run_id=run_id: state(h, run_id)["state"] == "succeeded")
    rows = json.loads(run_cli("history", "--json").stdout)["runs"]
    assert {r["run_id"] for r in rows} == set(runs)
    assert all(r["state"] == "succeeded" and r["tool_calls"] == 60 for r in rows)


def test_calibrate_recovers_known_percentiles(tmp_path: Path) -> None:
    walls = [float(m) for m in range(1, 101)]  # 1..100 minutes: median 50.5, p90 90.1
    for i, w in enumerate(walls):
        fake_run(f"cal-{i:03d}", wall_min=w)
    fake_run("cal-failed", state_name="failed", wall_min=500)  # only successes count
    for i in range(5):
        fake_run(f"small-{i}", bucket="small", wall_min=10)
    assert percentile(walls, 50) == pytest.approx(50.5) and percentile(walls, 90) == pytest.approx(90.1)
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text((ROOT / "buckets.yaml").read_text())
    env = {**os.environ, "ORCHESTRATOR_BUCKETS": str(buckets)}
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "calibrate", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    out = {b["bucket"]: b for b in json.loads(p.stdout)["buckets"]}
    med = out["medium"]
    assert med["runs"] == 100 and med["median_min"] == 50.5 and med["p90_min"] == 90.1 and med["longest_min"] == 100
    assert med["proposed"] == {"expected_min": 51, "soft_start_min": 91, "stuck_min": 110}
    assert out["small"]["refused"] is True and out["small"]["runs"] == 5
    text = subprocess.run(
        [sys.executable, "-m", "orchestrator", "calibrate"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    ).stdout
    assert "small: 5 succeeded runs; need at least 20" in text
    assert "expected_min        45 -> 51" in text
    w = subprocess.run(
        [sys.executable, "-m", "orchestrator", "calibrate", "--write"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert w.returncode == 0, w.stderr
    new = buckets.read_text()
    assert "medium: {expected_min: 51, soft_start_min: 91, stuck_min: 110}" in new
    assert "small:  {expected_min: 20, soft_start_min: 30,  stuck_min: 35}" in new  # untouched
    assert "# Spiral detector timings" in new  # comments kept
    none = subprocess.run(
        [sys.executable, "-m", "orchestrator", "calibrate", "--write", "--min-runs", "500"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert none.returncode == 2 and "nothing written" in none.stderr


def test_spend_from_real_logs() -> None:
    if not REAL_TRACES.exists():
        pytest.skip("../shared/real-traces is absent")
    stream = SpendCounter("claude-stream-json")
    for line in (REAL_TRACES / "claude-stream-json" / "gleam_basic_query_v2.1.7.ndjson").read_text().splitlines():
        stream.feed(json.loads(line))
    cost, unpriced = stream.spend.cost(DEFAULT_PRICES)
    assert cost == pytest.approx(0.1354875) and unpriced == []
    codex = SpendCounter("codex-json")
    for line in (REAL_TRACES / "codex-exec-json" / "rustclaudecodes_multi_command.jsonl").read_text().splitlines():
        codex.feed(json.loads(line))
    sp = codex.spend
    assert (sp.input_tokens, sp.cache_read_tokens, sp.output_tokens) == (30669 - 28288, 28288, 205)
    assert codex.spend.cost(DEFAULT_PRICES) == (None, ["unknown"])  # exec --json names no model
    transcript = SpendCounter("claude-transcript")
    path = REAL_TRACES / "claude-transcript" / "spotter_4d5611e5_edit-churn.jsonl.gz"
    ids = set()
    outputs: dict[str, int] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            obj = json.loads(line)
            transcript.feed(obj)
            msg = obj.get("message") if obj.get("type") == "assistant" else None
            if isinstance(msg, dict) and "usage" in msg:
                ids.add(msg["id"])
                outputs[msg["id"]] = msg["usage"].get("output_tokens", 0)  # the latest figure counts
    assert transcript.spend.output_tokens == sum(outputs.values())
    assert transcript.spend.cost(DEFAULT_PRICES)[0] is None  # claude-opus-4-6 is not in the table: unpriced


def test_new_prices_reprice_old_rows_and_bad_input_is_one_line(tmp_path: Path) -> None:
    fake_run("m-1", events=[claude_usage("m1", "claude-mystery-9", 1_000_000, 0)])
    assert json.loads(run_cli("history", "--json").stdout)["runs"][0]["cost_usd"] is None
    (home() / "config.yaml").write_text(json.dumps({"prices": {"claude-mystery-9": {"input": 2, "output": 4}}}))
    assert json.loads(run_cli("history", "--json").stdout)["runs"][0]["cost_usd"] == pytest.approx(2.0)
    for since in ("9999999999d", "²d", "soon"):
        p = run_cli("history", "--since", since)
        assert "Traceback" not in p.stderr and p.returncode in (0, 2), p.stderr
    weird = fake_run("m-2")
    st = json.loads((weird / "state.json").read_text())
    st["time_scale"] = "fast"
    (weird / "state.json").write_text(json.dumps(st))
    p = run_cli("ledger", "rebuild")
    assert p.returncode == 0 and "(1 unreadable)" in p.stdout


def test_calibrate_write_keeps_mode_and_follows_links(tmp_path: Path) -> None:
    from orchestrator.buckets import write_buckets
    from spiral.settings import Bucket

    real = tmp_path / "real-buckets.yaml"
    real.write_text((ROOT / "buckets.yaml").read_text())
    real.chmod(0o644)
    link = tmp_path / "buckets.yaml"
    link.symlink_to(real)
    write_buckets(link, {"medium": Bucket(50.0, 80.0, 96.0)})
    assert link.is_symlink()
    assert "medium: {expected_min: 50, soft_start_min: 80, stuck_min: 96}" in real.read_text()
    assert (real.stat().st_mode & 0o777) == 0o644


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
    p = run_cli("history", "--json")
    assert p.returncode == 0 and "not a DuckDB database" in p.stderr
    assert [r["run_id"] for r in json.loads(p.stdout)["runs"]] == ["c-1"]
