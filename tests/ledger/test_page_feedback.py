"""Feedback that measures us (issue 35): verdicts on pages (`feedback RUN useful|false-alarm`), kept in the
ledger (schema 5: `pages`, `page_feedback`), the precision of the pages (`history --pages`) and the rules
behind the false alarms (`calibrate`).

A small fleet in a real state folder and a real DuckDB ledger: the demo's spiraling run (a real run that
paged), and finished paged runs written through the record's own API (state_file), one with a second
episode; every verdict is given with the real command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from orchestrator.ledger import store as ledger
from orchestrator.record import state_file
from orchestrator.record.model import Episode, RunRecord, SpiralState
from orchestrator.record.pages import verdicts
from spiral.timestamps import format_ts
from tests.helpers import cli, one_line_error, orchestrator_home

OLD = 1_767_225_600.0  # 2026-01-01: the written runs are older than --since 1d


def _paged_run(run_id: str, bucket: str, signals: list[str], *, state: str = "killed", later: Any = None) -> Path:
    """A finished run that paged, its record written as the orchestrator writes one (`later`: a second
    episode's signals, tripped after guidance)."""
    folder = orchestrator_home() / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("")
    episodes = [Episode(n=2, since_min=40, tripped_at_min=48, signals=later)] if later else []
    record = RunRecord(
        run_id=run_id,
        ticket_id=run_id.rsplit("-", 1)[0],
        bucket=bucket,
        agent="fake",
        format="generic",
        state=state,
        reason="test fleet",
        created_at=format_ts(OLD),
        started_at=format_ts(OLD),
        ended_at=format_ts(OLD + 3600),
        spiral=SpiralState(
            tripped_in_soft_band=True,
            tripped_at_min=31,
            notified=True,
            page_signals=signals,
            episode=2 if later else 1,
            episodes=episodes,
        ),
    )
    state_file.write(folder, record)
    return folder


def _feedback(*args: str) -> str:
    p = cli("feedback", *args)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def _figures(pages: int, judged: int, useful: int, false_alarms: int) -> dict[str, Any]:
    return {
        "pages": pages,
        "judged": judged,
        "useful": useful,
        "false_alarms": false_alarms,
        "unjudged": pages - judged,
        "precision": round(useful / judged, 4) if judged else None,
    }


def _pages(*args: str) -> dict[str, Any]:
    p = cli("history", "--pages", *args, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_verdicts_reach_history_pages_and_calibrate(tmp_path: Path) -> None:
    demo = cli("demo", "--speed", "300", "--here", timeout=180)  # its runs beside the others
    assert demo.returncode == 0, demo.stderr
    runs = orchestrator_home() / "runs"
    shim = next(d.name for d in runs.iterdir() if d.name.startswith("demo-fixture-shim"))
    healthy = next(d.name for d in runs.iterdir() if d.name.startswith("demo-healthy-feature"))
    shim_record = state_file.read(runs / shim)
    assert shim_record.spiral.tripped_in_soft_band and shim_record.bucket == "medium"
    shim_signals = list(dict.fromkeys(shim_record.spiral.page_signals))
    # debris and at least one more signal: which ones join it depends on when the pass looks (on the
    # demo's 60x clock a second's delay on a busy machine is a minute of the run)
    assert "debris" in set(shim_signals) and len(set(shim_signals)) >= 2

    _paged_run("poll-a-1", "small", ["polling"])
    _paged_run("poll-b-1", "small", ["polling", "repetition", "polling"], state="stalled")
    _paged_run("rep-c-1", "medium", ["repetition"], later=["polling"])
    _paged_run("stall-d-1", "big", ["mutation_stall"])

    # before any verdict: pages, none judged; calibrate says nothing of false alarms
    before = _pages()
    assert before["all"] == _figures(6, 0, 0, 0)
    assert "false alarms" not in cli("calibrate").stdout
    assert json.loads(cli("calibrate", "--json").stdout)["false_alarms_by_rule"] == []

    assert _feedback("poll-a", "false-alarm") == "poll-a-1: page 1 (polling) judged false-alarm"
    _feedback("poll-b", "useful")
    _feedback("poll-b-1", "false-alarm")  # a later verdict on the same page replaces the first
    assert _feedback("rep-c", "useful", "--page", "1") == "rep-c-1: page 1 (repetition) judged useful"
    assert _feedback("rep-c", "false-alarm") == "rep-c-1: page 2 (polling) judged false-alarm"  # its latest
    _feedback(shim, "useful")

    # the record keeps every verdict given; the one that counts per page is the latest
    poll_b = state_file.read(runs / "poll-b-1")
    assert [f.verdict for f in poll_b.feedback] == ["useful", "false-alarm"]
    assert {n: f.verdict for n, f in verdicts(poll_b).items()} == {1: "false-alarm"}

    # (signals, bucket, verdict) of every page, as the person judged them
    fleet = [
        (shim_signals, "medium", "useful"),
        (["polling"], "small", "false-alarm"),
        (["polling", "repetition"], "small", "false-alarm"),
        (["repetition"], "medium", "useful"),
        (["polling"], "medium", "false-alarm"),
        (["mutation_stall"], "big", None),
    ]
    out = _pages()
    assert set(out) == {"version", "all", "by_rule", "by_bucket"} and out["version"] == 1
    assert out["all"] == _figures(6, 5, 2, 3) and out["all"]["precision"] == 0.4
    buckets = {b.pop("bucket"): b for b in out["by_bucket"]}
    assert buckets == {"medium": _figures(3, 3, 2, 1), "small": _figures(2, 2, 0, 2), "big": _figures(1, 0, 0, 0)}
    assert [b["bucket"] for b in _pages()["by_bucket"]] == ["medium", "small", "big"]  # most pages first
    rules = {r.pop("rule"): r for r in out["by_rule"]}
    expected: dict[str, dict[str, Any]] = {}
    for rule in sorted({s for signals, _, _ in fleet for s in signals}):
        on = [v for signals, _, v in fleet if rule in signals]
        n_useful, n_false = on.count("useful"), on.count("false-alarm")
        expected[rule] = _figures(len(on), n_useful + n_false, n_useful, n_false)
    assert rules == expected
    if "polling" not in shim_signals:  # (the demo's page names no polling)
        assert rules["polling"] == _figures(3, 3, 0, 3) and rules["polling"]["precision"] == 0.0
    assert rules["repetition"] == _figures(3, 3, 2, 1) and rules["repetition"]["precision"] == 0.6667
    assert rules["mutation_stall"]["unjudged"] == 1

    # history's filters are on the run: the written runs are old, the demo's is new
    assert _pages("--since", "1d")["all"] == _figures(1, 1, 1, 0)
    assert _pages("--ticket", "rep-c")["all"] == _figures(2, 2, 1, 1)
    assert _pages("--state", "stalled")["all"]["pages"] == 2  # poll-b and the demo's run
    assert _pages("--ticket", "nope")["all"] == _figures(0, 0, 0, 0)

    table = cli("history", "--pages")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    head = next(line for line in lines if "┃" in line)
    assert all(c in head for c in ("pages of", "pages", "judged", "useful", "false alarms", "precision", "unjudged"))
    row = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]] for line in lines if "│" in line}
    assert row["all"] == ["6", "5", "2", "3", "40%", "1"]
    assert row["bucket big"] == ["1", "0", "0", "0", "-", "1"]
    assert row["bucket medium"] == ["3", "3", "2", "1", "67%", "0"]
    assert row["rule repetition"] == ["3", "3", "2", "1", "67%", "0"]
    assert cli("history", "--pages", "--ticket", "nope").stdout.strip() == "no pages match"

    # calibrate: the rules behind the false alarms, most first, after its proposals
    said = cli("calibrate")
    assert said.returncode == 0, said.stderr
    last = said.stdout.strip().splitlines()[-1]
    alarms = sorted(
        ((r, f["false_alarms"], f["judged"]) for r, f in expected.items() if f["judged"]),
        key=lambda x: (-x[1], -x[2], x[0]),
    )
    words = [f"{r} {n} of {j}" for r, n, j in alarms]
    assert last == f"false alarms by rule: {words[0]} judged pages, " + ", ".join(words[1:])
    assert last.startswith("false alarms by rule: polling 3 of ")
    cal = json.loads(cli("calibrate", "--json").stdout)
    assert cal["false_alarms_by_rule"] == [{"rule": r, "false_alarms": n, "judged": j} for r, n, j in alarms]

    # the ledger's tables, for --sql: every page, and the verdict that counts on each judged one
    p = cli(
        "history",
        "--sql",
        "SELECT p.run_id, p.episode, f.verdict, f.via FROM pages p LEFT JOIN page_feedback f "
        "USING (run_id, episode) ORDER BY 1, 2",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    assert [(r["run_id"], r["episode"], r["verdict"], r["via"]) for r in json.loads(p.stdout)["rows"]] == [
        (shim, 1, "useful", "cli"),
        ("poll-a-1", 1, "false-alarm", "cli"),
        ("poll-b-1", 1, "false-alarm", "cli"),
        ("rep-c-1", 1, "useful", "cli"),
        ("rep-c-1", 2, "false-alarm", "cli"),
        ("stall-d-1", 1, None, None),
    ]

    # feedback's bad input: one line, exit 2, no traceback; nothing recorded
    one_line_error(cli("feedback", healthy, "useful"), f"run {healthy} has not paged")
    one_line_error(cli("feedback", "poll-a", "meh"), "must be one of useful, false-alarm", "'meh'")
    one_line_error(cli("feedback", "rep-c", "useful", "--page", "9"), "has no page 9", "its pages: 1, 2")
    one_line_error(cli("feedback", "nope", "useful"), "no run 'nope'")
    assert not state_file.read(runs / healthy).feedback
    assert len(state_file.read(runs / "rep-c-1").feedback) == 2
    assert _pages()["all"] == _figures(6, 5, 2, 3)


def test_history_pages_with_no_pages_and_its_bad_combinations() -> None:
    p = cli("history", "--pages")
    assert p.returncode == 0 and p.stdout.strip() == "no pages match", p.stderr
    for extra, named in ((["--by", "bucket"], "--by"), (["--sql", "SELECT 1"], "--sql"), (["--limit", "3"], "--limit")):
        one_line_error(cli("history", "--pages", *extra), f"--pages does not go with {named}")
    one_line_error(cli("history", "--pages", "--since", "soon"), "--since")


def test_schema_5_migration_reads_every_run_again() -> None:
    """A ledger of schema 4 (before pages and verdicts) holds a judged run already indexed: the
    migration drops the prices fingerprint, so that run is read again and its page and verdict appear."""
    _paged_run("old-1", "small", ["polling"])
    _feedback("old-1", "false-alarm")
    assert _pages()["all"] == _figures(1, 1, 0, 1)
    con = duckdb.connect(str(ledger.ledger_path()))
    con.execute("DROP TABLE pages; DROP TABLE page_feedback")
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    con.close()
    assert ledger.refresh().indexed == 1  # unchanged since indexed, read again all the same
    with ledger.connect(read_only=True) as con:
        assert ledger.schema_version(con) == ledger.SCHEMA_VERSION == 5
    assert _pages()["all"] == _figures(1, 1, 0, 1)
