"""The README's main command, on a faster clock: both runs, the spiral verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def test_demo_shows_both_runs_and_the_spiral_verdict() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "demo", "--speed", "300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    summary = out.split("summary", 1)[1]
    healthy = summary.split("demo-fixture-shim")[0]
    assert "demo-healthy-feature" in healthy and "succeeded" in healthy and "no page" in healthy
    spiral = summary.split("demo-fixture-shim", 1)[1]
    assert "would have paged at" in spiral
    assert "tmp_debug_mc" in spiral and "debris files" in spiral
    assert "stalled" in spiral and "stuck time" in spiral
    own = Path(os.environ["ORCHESTRATOR_HOME"]) / "demo"  # a state folder of its own...
    assert not (Path(os.environ["ORCHESTRATOR_HOME"]) / "runs").exists()  # ...so the person's stays theirs
    runs = own / "runs"
    states = {d.name.split("-2")[0]: json.loads((d / "state.json").read_text()) for d in runs.iterdir()}
    assert states["demo-healthy-feature"]["state"] == "succeeded"
    shim = states["demo-fixture-shim"]
    assert shim["state"] == "stalled"
    assert 70 <= shim["spiral"]["tripped_at_min"] < 85
    # debris and at least one more signal: which ones join it depends on when the pass looks (on the
    # demo's 60x clock a second's delay on a busy machine is a minute of the run)
    assert "debris" in set(shim["spiral"]["page_signals"]) and len(set(shim["spiral"]["page_signals"])) >= 2
    # the healthy run's work arrived on its branch in the sample repository, and `diff` shows it
    healthy_state = states["demo-healthy-feature"]
    branch = healthy_state["delivered"]["branch"]
    said = " ".join(healthy.split())  # (the console wraps long lines)
    assert f"its work is on branch {branch} of {healthy_state['repo']}" in said
    assert f"see it: ORCHESTRATOR_HOME={own} ./dev.sh diff {healthy_state['run_id']} --stat" in said
    assert f"see the runs: ORCHESTRATOR_HOME={own} ./dev.sh status" in " ".join(out.split())
    pushed = subprocess.run(["git", "rev-parse", "--verify", branch], cwd=healthy_state["repo"], capture_output=True)
    assert pushed.returncode == 0 and pushed.stdout.decode().strip() == healthy_state["delivered"]["commit"]
    shown = subprocess.run(
        [sys.executable, "-m", "orchestrator", "diff", healthy_state["run_id"], "--stat"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ORCHESTRATOR_HOME": str(own)},
    )
    assert shown.returncode == 0 and "changed" in shown.stdout and "|" in shown.stdout, shown
