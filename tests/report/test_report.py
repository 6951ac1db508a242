"""`report` and `replay --report`: the timeline extracted from a recording, the HTML file, the CLI's errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from orchestrator.report import render_case, render_run
from orchestrator.report.sources import case_timeline, run_timeline
from orchestrator.report.timeline import Tick, run_time, runs_of, signal_intervals
from tests.helpers import CORPUS, cli, one_line_error, orchestrator_home

SPIRAL = CORPUS / "spiral-001-fixture-shim"
HEALTHY = CORPUS / "healthy-001-steady-feature"


def spiral_run(run_id: str = "demo-fixture-shim-1", **more: object) -> Path:
    """A run folder holding the demo's spiral recording, its record as the live watcher left it (its
    page sent, unless `more` says otherwise)."""
    d = orchestrator_home() / "runs" / run_id
    shutil.copytree(SPIRAL, d)
    record = {
        "run_id": run_id,
        "ticket_id": "demo-fixture-shim",
        "bucket": "medium",
        "agent": "demo",
        "format": "claude-stream-json",
        "state": "stalled",
        "reason": "past the medium bucket's stuck time (85 min >= 85 min)",
        "created_at": "2026-05-20T09:00:00Z",
        "started_at": "2026-05-20T09:00:00Z",
        "ended_at": "2026-05-20T10:25:00Z",
        "spiral": {
            "tripped_in_soft_band": True,
            "tripped_at_min": 70.0,
            "notified": True,
            "page_signals": ["debris", "repetition"],
            "page_evidence": ["2 debris files in the clone", "1.6x expected wall-clock"],
        },
    }
    record.update(more)
    (d / "state.json").write_text(json.dumps(record))
    return d


def test_the_demo_spiral_case_shows_debris_repetition_the_soft_band_the_page_and_the_stuck_time() -> None:
    tl = case_timeline(SPIRAL)
    assert [p.label for p in tl.pages] == ["page"]
    assert 68 <= tl.pages[0].at_min <= 72  # the page at ~70 min
    regions = {r: (start, end) for r, start, end in tl.regions}
    assert regions["soft"] == (70.0, 85.0) and regions["stuck"][0] == 85.0
    signals = tl.signals
    debris, repetition = tl.first_on("debris"), tl.first_on("repetition")
    assert debris is not None and repetition is not None
    assert repetition < debris < tl.pages[0].at_min  # both start before the page, repetition first
    assert signals["debris"][-1][1] == tl.end_min == 88.0  # debris stays on to the end of the recording
    assert len(signals["repetition"]) > 1  # on and off: intervals, not one bar
    assert any(start <= 85 <= end for start, end in signals["mutation_stall"])  # the stall holds at 85
    assert tl.ticks[-1].suspicion >= tl.threshold
    assert {c.kind for c in tl.calls} >= {"Bash", "Edit/Write", "Read", "errors"}
    assert tl.spend and tl.spend[-1][1] > tl.spend[0][1]
    assert tl.evidence_at_min == tl.pages[0].at_min and tl.evidence[-1].endswith("expected wall-clock")
    assert tl.ending is not None and tl.ending.at_min == 88.0
    assert tl.last_calls and "tmp_debug_mc" in tl.last_calls[-1]


def test_a_healthy_case_has_no_page_and_stays_healthy() -> None:
    tl = case_timeline(HEALTHY)
    assert tl.pages == []
    assert {r for r, _, _ in tl.regions} == {"healthy"}


def test_a_run_folder_is_marked_from_its_record() -> None:
    tl = run_timeline(spiral_run())
    assert [(p.label, p.at_min) for p in tl.pages] == [("page", 70.0)]
    assert tl.ending is not None and (tl.ending.label, tl.ending.at_min) == ("stalled", 85.0)
    assert tl.evidence == ["2 debris files in the clone", "1.6x expected wall-clock"]  # what the page said
    assert tl.regions[-1][0] == "stuck" and tl.end_min == 85.0


def test_a_page_that_never_left_is_not_drawn_as_sent_and_the_delivery_is_a_fact() -> None:
    spiral = {"tripped_in_soft_band": True, "tripped_at_min": 70.0, "page_signals": ["debris"]}
    failed = {"attempts": 20, "gave_up": True, "last_error": "json://127.0.0.1:9/x: connection refused"}
    tl = run_timeline(spiral_run("r-undelivered", spiral=spiral, notices={"spiral": failed}))
    assert [p.label for p in tl.pages] == ["page (undelivered)"]
    assert "not delivered: json://127.0.0.1:9/x: connection refused" in tl.pages[0].detail
    assert [p.label for p in run_timeline(spiral_run("r-unsent", spiral=spiral)).pages] == ["page (not sent)"]
    html = render_run(spiral_run("r-html", spiral=spiral, notices={"spiral": failed}))
    assert "page (undelivered) at 70 min" in html and "page at 70 min" not in html
    delivered = {
        "branch": "orchestrator/t-1",
        "commit": "0123456789abcdef",
        "pushed_at": "2026-05-20T10:25:00Z",
        "pr_url": "https://example.test/pr/7",
    }
    tl = run_timeline(spiral_run("r-delivered", state="succeeded", reason="agent exited 0", delivered=delivered))
    assert (
        "delivered: orchestrator/t-1 at 0123456789ab pushed 2026-05-20T10:25:00Z, PR https://example.test/pr/7"
        in tl.facts
    )
    rejected = {"branch": "orchestrator/t-1", "error": "push of orchestrator/t-1 failed: remote: no"}
    tl = run_timeline(spiral_run("r-rejected", delivered=rejected))
    assert "delivery: orchestrator/t-1 not pushed: push of orchestrator/t-1 failed: remote: no" in tl.facts


def test_the_html_is_self_contained() -> None:
    text = render_case(SPIRAL)
    assert text.startswith("<!DOCTYPE html>") and "Plotly" in text
    assert "<script src=" not in text  # the plotting library is embedded, nothing is fetched
    assert "page at 70 min" in text and "soft from 70 min" in text and "stuck from 85 min" in text
    assert "tmp_debug_mc2.py" in text  # the evidence and the last calls are below the chart


def test_step_intervals() -> None:
    assert runs_of([(0, "healthy"), (5, "healthy"), (10, "soft")], 20) == [("healthy", 0, 10), ("soft", 10, 20)]
    ticks = [
        Tick(0, 0, "healthy", ()),
        Tick(1, 1, "healthy", ("a",)),
        Tick(3, 0, "healthy", ()),
        Tick(4, 1, "soft", ("a",)),
    ]
    assert signal_intervals(ticks, 6) == {"a": [(1, 3), (4, 6)]}
    # the agent's clock back to the run's: a 60 s wait on the model API at 100 s
    assert run_time([(100.0, 160.0)], 50.0) == 50.0 and run_time([(100.0, 160.0)], 120.0) == 180.0


def test_report_cli_writes_the_file_and_prints_its_path(tmp_path: Path) -> None:
    run = spiral_run()
    p = cli("report", run.name[:12])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(run / "report.html") and (run / "report.html").stat().st_size > 1_000_000
    out = tmp_path / "r.html"
    p = cli("report", run.name, "--out", str(out))
    assert p.returncode == 0 and p.stdout.strip() == str(out) and out.read_text().startswith("<!DOCTYPE html>")


def test_report_cli_errors_are_one_line(tmp_path: Path) -> None:
    one_line_error(cli("report", "no-such-run"), "no run 'no-such-run'")
    run = spiral_run()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(cli("report", run.name, "--out", str(blocker / "r.html")), "cannot write the report")


def test_replay_report_option(tmp_path: Path) -> None:
    out = tmp_path / "case.html"
    p = cli("replay", str(SPIRAL), "--report", str(out), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["notified_at_min"] == 70  # stdout stays the JSON
    assert f"report: {out}" in p.stderr and "page at 70 min" in out.read_text()


def test_render_run_and_render_case_return_the_text() -> None:
    assert render_run(spiral_run()).startswith("<!DOCTYPE html>")
    assert render_case(SPIRAL).startswith("<!DOCTYPE html>")


def test_the_spend_line_ends_at_the_bill_the_agent_gave_at_its_end() -> None:
    # the healthy demo's result line bills $0.39 with no usage: the chart's last point says so too
    tl = case_timeline(HEALTHY)
    assert tl.spend and tl.spend[-1][2] == 0.39, tl.spend[-3:]
    assert tl.spend[-1][1] == tl.spend[-2][1]  # the same tokens, now with the agent's own figure
