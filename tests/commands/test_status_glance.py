"""`status` at a glance: 80 columns and a phone's 40 without a wrapped line, signal codes with a legend,
the ending's reason shown, `--wide` for the rest, and real seconds for "last activity" on a demo clock."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestrator.tables import SIGNAL_CODES, status_table
from spiral.settings import SIGNAL_NAMES
from spiral.timestamps import format_ts
from tests.helpers import cli, launch, state, status_json, ticket, wait

STALL = "past the medium bucket's stuck time (85 min >= 85 min)"


def row(run_id: str, **over: Any) -> dict[str, Any]:
    """A `status --json` row (the same keys), quiet and running unless told."""
    r: dict[str, Any] = {
        "id": run_id,
        "ticket": run_id.rsplit("-", 2)[0],
        "bucket": "medium",
        "agent": "demo",
        "state": "running",
        "reason": None,
        "elapsed_min": 12.0,
        "expected_min": 45,
        "region": "healthy",
        "signals": [],
        "suspicion": 0,
        "evidence": [],
        "tripped_at_min": None,
        "notified": False,
        "page_error": None,
        "provider": None,
        "hints": [],
        "last_activity_s": 3.0,
        "last_activity_real_s": 3.0,
        "tokens": None,
        "cost_usd": None,
        "started_at": None,
        "ended_at": None,
        "error": None,
        "queue_position": None,
        "verified": None,
        "max_usd": None,
        "max_tokens": None,
        "held": None,
        "guidance_via": None,
        "guidance": [],
        "episode": 1,
        "escalation_rungs": 0,
        "escalations": [],
    }
    r.update(over)
    return r


def fleet() -> list[dict[str, Any]]:
    """What a busy fleet looks like: every state and every cell the old table could say."""
    return [
        row(
            "demo-fixture-shim-20261201-174918",
            state="stalled",
            reason=STALL,
            elapsed_min=85.0,
            region="stuck",
            signals=list(SIGNAL_NAMES),
            suspicion=4.25,
            tripped_at_min=70.51,
            notified=True,
            last_activity_real_s=75.0,
            tokens=1_756_000,
            cost_usd=0.65,
        ),
        row(
            "demo-healthy-feature-20261201-174917",
            state="succeeded",
            reason="agent exited 0",
            elapsed_min=56.0,
            last_activity_real_s=130.0,
        ),
        row(
            "fix-login-flow-20261201-180000",
            region="soft",
            elapsed_min=50.0,
            signals=["debris", "repetition"],
            suspicion=2.5,
            tripped_at_min=48.0,
            page_error="connection refused",
            provider={"episode": 1, "text": "retrying rate limited (429) (attempt 4/10)"},
            guidance=[{"id": "g1", "by": "person", "received_at_min": 71.5, "answer": "recovered"}],
        ),
        row("fix-login-flow-20261201-180500", state="queued", queue_position=3, held="daily spend ceiling reached"),
        row(
            "spender-20261201-181000",
            state="over_budget",
            reason="spend ceiling reached: $5.10 of $5.00 (102%)",
            tokens=900_000,
            cost_usd=5.1,
            max_usd=5.0,
        ),
        row(
            "lost-one-20261201-182000", state="lost", reason="the supervisor never started the agent", hints=["polling"]
        ),
    ]


def render(rows: list[dict[str, Any]], width: int, wide: bool = False) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(status_table(rows, wide=wide))
    return console.export_text().splitlines()


def test_the_fleet_fits_80_columns_and_a_phone_with_codes_a_legend_and_the_reasons() -> None:
    rows = fleet()
    for width in (80, 40):
        lines = render(rows, width)
        text = "\n".join(lines)
        assert max(len(x) for x in lines) <= width, (width, text)
        legend = " ".join(" ".join(lines[next(i for i, x in enumerate(lines) if x.startswith("D=")) :]).split())
        for name in SIGNAL_NAMES:
            assert f"{SIGNAL_CODES[name]}={name}" in legend, (width, name, text)
        assert "lowercase: seen before it was stopped" in legend
        # a signal's name is whole wherever it appears, never cut into `mutation_…` or wrapped across lines
        names = set(re.findall(r"[a-z]+_[a-z]*|debris|repetition|polling|drift", text)) & set(
            re.findall(r"[a-z_]+", " ".join(SIGNAL_NAMES))
        )
        assert not re.search(r"(debris|repetitio|mutation_|sustained_|same_)[a-z_]*…", text), text
        assert names <= set(SIGNAL_NAMES), names
        assert "DRMBPEFC 4.25" in text  # the stalled run's eight codes and its suspicion
        # the cells the old table said, where they matter
        for needle in ("sent @71m", "undelivered", "queued #3", "held: daily ceiling", "unverified", "/$5"):
            assert needle in text, (width, needle, text)
        assert "provider: retrying" in text and ("g1 received" in text or width < 80)  # a phone cuts the note
        assert "75s ago" in text and "2m ago" in text  # wall-clock seconds
        if width == 80:
            assert STALL in text and "the supervisor never started the agent" in text
            assert len([x for x in lines if x.startswith(("demo-", "fix-", "spender", "lost-"))]) == len(rows)
        else:
            assert "past the medium bucket's" in text


def test_a_quiet_fleet_keeps_its_notes_in_a_column() -> None:
    rows = [row("t1-20261201-120000", state="succeeded", reason="agent exited 0"), row("t2-20261201-120001")]
    lines = render(rows, 80)
    assert max(len(x) for x in lines) <= 80
    assert lines[0].split() == ["run", "state", "elapsed", "signals", "page", "note", "last"]
    (done,) = [x for x in lines if x.startswith("t1-")]
    assert "succeeded" in done and "unverified" in done and "3s ago" in done
    assert not [x for x in lines if "=" in x]  # no signal: no legend


def test_ids_are_cut_to_a_prefix_that_commands_take_or_keep_their_timestamp() -> None:
    rows = [
        row("a-very-long-ticket-name-indeed-20261201-120000"),
        row("a-very-long-ticket-name-indeed-20261201-130000"),
    ]
    rows.append(row("another-long-ticket-name-20261201-120000", signals=["debris"], suspicion=1))
    for width in (60, 80):
        text = "\n".join(render(rows, width))
        assert "…120000" in text and "…130000" in text  # the same ticket twice: the tail tells them apart
        assert "…=id cut short (--wide: whole)" in text
    assert "another-long-ticket-name-20261201-120000" in "\n".join(render(rows, 160))


def test_wide_has_every_column_and_holds_at_any_width() -> None:
    rows = fleet()
    lines = render(rows, 250, wide=True)
    head = lines[0].split()
    assert head == [
        "run",
        "ticket",
        "bucket",
        "state",
        "elapsed",
        "region",
        "signals",
        "susp",
        "page",
        "guidance",
        "spend",
        "reason",
        "last",
        "on",
    ]
    text = "\n".join(render(rows, 400, wide=True))  # wide enough that no cell wraps
    for needle in ("sent @70.51m", "g1 received @71.5m, recovered", "/$5", "900k tok $5.10", "(held: daily ceiling)"):
        assert needle in text, (needle, text)
    assert "mutation_stall" in text and "hints: polling" in text and "undelivered @48m" in text
    assert "succeeded unverified" in text and "demo-fixture-shim-20261201-174918" in text
    for width in (160, 80, 40):  # narrower: the columns wrap, then each run becomes a block of lines
        lines = render(rows, width, wide=True)
        assert max(len(x) for x in lines) <= width, (width, "\n".join(lines))
        flat = " ".join(x.strip() for x in lines)
        assert "guidance" in flat and "spend" in flat and "reason" in flat and "mutation_stall" in flat


def test_real_runs_through_the_cli(tmp_path: Path, repo: Path, home: Path) -> None:
    ok = launch(ticket(tmp_path, repo, "write done.txt", name="glance-ok"))
    bad = launch(ticket(tmp_path, repo, "exit 3", name="glance-bad"))
    wait(lambda: all(state(home, r)["state"] not in ("running", "launching") for r in (ok, bad)), what="the ends")
    rows = status_json()["runs"]
    assert all(isinstance(r["last_activity_real_s"], float) for r in rows)
    for width in (80, 40):
        lines = render(rows, width)
        assert max(len(x) for x in lines) <= width
        text = "\n".join(lines)
        assert "unverified" in text and "failed" in text
        assert (state(home, bad)["reason"] or "")[:12] in text  # the failed run's reason is shown
    wide = cli("status", "--wide")
    assert wide.returncode == 0, wide.stderr
    assert all(w in wide.stdout for w in ("ticket", "bucket", "spend", "guidance", "reason", ok, bad))
    plain = cli("status").stdout
    assert ok in plain and "ticket" not in plain.splitlines()[0]


def test_last_activity_is_wall_clock_on_a_demo_clock(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "write done.txt"))
    wait(lambda: state(home, run_id)["state"] == "succeeded", what="the end")
    status_json()  # its ending accounted once
    folder = home / "runs" / run_id
    now = time.time()
    s = json.loads((folder / "state.json").read_text())
    # as the demo runs it: a 60x clock; it ended 30 real seconds ago, its log last grew 40 s ago
    s.update(time_scale=60.0, started_at=format_ts(now - 50), ended_at=format_ts(now - 30))
    (folder / "state.json").write_text(json.dumps(s))
    os.utime(folder / "events.jsonl", (now - 40, now - 40))
    (r,) = status_json()["runs"]
    assert 29 <= r["last_activity_real_s"] < 60, r["last_activity_real_s"]
    assert r["last_activity_s"] >= 40 * 60 * 0.95  # the run's clock, kept for the liveness path and the contract
    line = next(x for x in cli("status").stdout.splitlines() if run_id in x)
    m = re.search(r"(\d+)s ago", line)
    assert m and 29 <= int(m.group(1)) < 60, line
    assert "m ago" not in line and "h ago" not in line
