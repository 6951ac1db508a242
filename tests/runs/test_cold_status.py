"""`status` never waits on a cold cache (issue 37): a run whose cache must be rebuilt from a long log
(none yet, or one of another version after an upgrade) is shown as last recorded, `evaluating (N
of M runs)`, newest first, while the watcher rebuilds it in the background; the watcher's other
runs are evaluated and paged meanwhile."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from orchestrator.infra.lock import held
from orchestrator.runs import evaluator, warmup
from tests.helpers import (
    TINY,
    Receiver,
    cli,
    launch,
    live_generic_run,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    write_config,
)

OLD_CACHE = b"orchestrator detector cache 17\n\x80\x05N."  # what an older version left: its own header


def _long_run(home: Path, run_id: str, sleeper: subprocess.Popen[bytes], started_ago: float) -> Path:
    """A live run whose log is past warmup.COLD_BYTES (4 MB of varied, healthy shell calls)."""
    start = time.time() - started_ago
    pad = "x" * 300
    n = (warmup.COLD_BYTES // 420) + 200
    events = [
        (start + i * 0.01, {"tool": "Bash", "command": f"ls src/mod_{i % 97}", "output": f"file_{i} {pad}", "id": i})
        for i in range(n)
    ]
    run = live_generic_run(home, run_id, sleeper.pid, start, events)
    assert (run / "events.jsonl").stat().st_size >= warmup.COLD_BYTES
    return run


def test_status_leaves_cold_runs_to_the_watcher_newest_first(home: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        runs = [_long_run(home, f"c{i}", sleeper, 600 - 100 * i) for i in range(3)]  # c2 started last
        (runs[0] / "detector.pickle").write_bytes(OLD_CACHE)  # an upgrade: the cache is another version's
        with held(home / "watch.lock", timeout=0):  # a watcher is there (this test holds its lock)
            p = cli("status", "--json")
            assert p.returncode == 0, p.stderr
            rows = {r["id"]: r for r in json.loads(p.stdout)["runs"]}
            table = cli("status").stdout
        assert [rows[f"c{i}"]["evaluating"] for i in (2, 1, 0)] == ["1 of 3 runs", "2 of 3 runs", "3 of 3 runs"]
        assert all(rows[r.name]["state"] == "running" for r in runs)
        assert "evaluating (1 of 3 runs)" in table
        # nothing was rebuilt by `status`: no cache of this version anywhere
        assert not any(evaluator.current(r / "detector.pickle") for r in runs)
        assert (runs[0] / "detector.pickle").read_bytes() == OLD_CACHE
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_watcher_rebuilds_in_the_background_while_another_run_pages(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url], "events": ["spiral"]})
    sleeper = subprocess.Popen(["sleep", "300"])
    watcher = None
    try:
        runs = [_long_run(home, f"c{i}", sleeper, 600 - 100 * i) for i in range(2)]
        for r in runs:
            (r / "detector.pickle").write_bytes(OLD_CACHE)
        watcher = start_watcher(tick=600)
        wait(lambda: (home / "watch.lock").exists() and (home / "watch.lock").read_text().strip() == str(watcher.pid))
        call = json.dumps({"tool": "Bash", "command": "python tmp_loop.py", "output": "boom", "exit_code": 1})
        body = "\n".join(["write tmp_loop.py", 'say {"tool": "Bash", "command": "ls"}', "sleep 1"])
        body += "\n" + "\n".join([f"say {call}", "sleep 0.02"] * 60) + "\nsleep 30"
        run_id = launch(ticket(tmp_path, repo, body, overrides=TINY))
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=60, what="the other run's page")
        wait(lambda: all(evaluator.current(r / "detector.pickle") for r in runs), timeout=240, what="the rebuilds")
        p = cli("status", "--json")
        rows = {r["id"]: r for r in json.loads(p.stdout)["runs"]}
        assert all(rows[r.name]["evaluating"] is None for r in runs)
        assert all(rows[r.name]["state"] == "running" and rows[r.name]["error"] is None for r in runs)
        assert state(home, run_id)["spiral"]["page_evidence"]
        cli("kill", run_id)
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait(timeout=60)
        sleeper.kill()
        sleeper.wait()
