"""The watcher's wake path (runs/wake.py): a real watcher whose tick is ten minutes away pages a
run seconds after its log shows the loop, and sends its ending notice when the supervisor records
the ending. Only the wake can do either here: the watcher's one pass on its own ran before the
run existed."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from orchestrator.runs.wake import Wake
from tests.helpers import (
    TINY,
    Receiver,
    launch,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    watcher_beat,
    write_config,
)


def _burst(n: int) -> str:
    """A script that idles a few seconds (one healthy call), then loops hard on a debris script, then exits 0."""
    call = json.dumps({"tool": "Bash", "command": "python tmp_loop.py", "output": "boom", "exit_code": 1})
    steps = ["write tmp_loop.py", 'say {"tool": "Bash", "command": "ls"}', "sleep 3"]
    steps += [f"say {call}", "sleep 0.02"] * n
    steps += ["sleep 4", "exit 0"]
    return "\n".join(steps)


def test_a_watcher_far_from_its_tick_pages_within_seconds(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url], "events": ["spiral", "succeeded"]})
    watcher = start_watcher(tick=600)
    try:
        wait(lambda: (home / "watch.lock").exists() and (home / "watch.lock").read_text().strip() == str(watcher.pid))
        # its first pass is over: it waits for its next tick, ten minutes away
        wait(lambda: watcher_beat()[1] >= 1, timeout=60, what="the watcher's first pass")
        run_id = launch(ticket(tmp_path, repo, _burst(60), overrides=TINY))
        wait(lambda: state(home, run_id).get("agent_pid") is not None, what="the agent")
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=60, what="the page (the wake path)")
        st = state(home, run_id)
        assert st["state"] == "running" and st["spiral"]["page_evidence"]
        wait(lambda: f"run {run_id} succeeded" in " ".join(receiver.titles()), timeout=60, what="the ending notice")
        assert spiral_pages(receiver, run_id) == 1
        assert watcher.poll() is None  # still waiting on its tick, the whole time
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)


def test_wake_sees_growth_a_rewrite_and_a_new_run_not_its_own_writes(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    a, b = root / "a", root / "b"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "state.json").write_text("{}")
        (d / "events.jsonl").write_text("")
    w = Wake(root)
    w.watch([a, b], [a, b])
    assert w.wait(0.3) == ([], False)
    with (a / "events.jsonl").open("a") as fh:
        fh.write('{"ts": 1}\n')
    assert w.wait(5) == ([a], False)
    w.absorb([a])  # the watcher refreshed it (and may have written its state): not a change any more
    assert w.wait(0.3) == ([], False)
    (b / "state.json.tmp").write_text('{"state": "succeeded"}')
    (b / "state.json.tmp").replace(b / "state.json")  # a supervisor's atomic rewrite
    assert w.wait(5) == ([b], False)
    w.absorb([b])
    c = root / "c"
    c.mkdir()  # a launch in progress: no state.json yet, so no pass for it yet
    assert w.wait(0.6) == ([], False)
    (c / "state.json").write_text("{}")
    assert w.wait(5) == ([], True)


def test_a_run_on_a_fast_clock_pages_in_its_band(tmp_path: Path, repo: Path, home: Path, receiver: Receiver) -> None:
    """The demo agent re-enacts a recorded spiral at 120x: its medium soft band (70-85 recorded
    minutes) lasts 7.5 real seconds, and one default tick (30 s) would cover an hour of it. The
    watcher's tick is put out of reach here, so the page that comes inside the band, while the run
    still runs, is the wake path's doing."""
    write_config(home, notify={"urls": [receiver.url], "events": ["spiral"]})
    watcher = start_watcher(tick=600)
    try:
        wait(lambda: (home / "watch.lock").exists() and (home / "watch.lock").read_text().strip() == str(watcher.pid))
        case = Path(__file__).resolve().parents[2] / "corpus" / "spiral-001-fixture-shim"
        run_id = launch(
            ticket(tmp_path, repo, "re-enact", agent="demo", bucket="medium", demo_case=str(case), speed=120)
        )
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=90, what="the page")
        paged_at = next(at for at, b in receiver.arrivals() if b.get("title") == f"run {run_id} may be spiraling")
        wait(lambda: state(home, run_id)["state"] != "running", timeout=90, what="the run's end")
        st = state(home, run_id)
        assert st["spiral"]["tripped_in_soft_band"] and 70 <= st["spiral"]["tripped_at_min"] <= 85, st["spiral"]
        # while it ran, not found afterwards (a watcher at ticks only pages it when the ended run is accounted)
        assert paged_at < datetime.fromisoformat(st["ended_at"].replace("Z", "+00:00")).timestamp()
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
