"""Cold caches rebuilt in worker processes before a pass (runs/warmup.py) give the same verdicts."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.config import load
from orchestrator.runs import monitor, warmup
from tests.helpers import live_generic_run


def _live_run(root: Path, run_id: str, sleeper: subprocess.Popen[bytes], calls: int) -> Path:
    start = time.time() - 120
    events = [
        (start + i * 0.01, {"tool": "Bash", "command": f"python tmp_check_{i % 3}.py", "id": i}) for i in range(calls)
    ]
    return live_generic_run(root, run_id, sleeper.pid, start, events)


def test_cold_runs_warmed_in_workers_give_the_verdicts_of_a_plain_pass(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        runs = [_live_run(home, f"r{i}", sleeper, 400 + 50 * i) for i in range(3)]
        plain = tmp_path / "plain"
        shutil.copytree(home, plain)
        monkeypatch.setattr(warmup, "COLD_BYTES", 1)
        assert warmup.cold(runs) == runs[::-1]  # the newest run first (each started a little after the last)
        assert warmup.warm(warmup.cold(runs)) == 3  # spawned workers, one per CPU
        assert all((r / "detector.pickle").exists() for r in runs)
        assert warmup.cold(runs) == []  # warm now: nothing left for workers
        cfg = load()
        monitor.KEPT.reset()
        warmed = [monitor.refresh(r, BucketsFile(), cfg).to_dict() for r in runs]
        monkeypatch.setenv("ORCHESTRATOR_HOME", str(plain))
        monitor.KEPT.reset()
        alone = [monitor.refresh(plain / "runs" / r.name, BucketsFile(), cfg).to_dict() for r in runs]
        keys = ("state", "region", "signals", "suspicion", "evidence", "tripped_at_min")
        assert [[w[k] for k in keys] for w in warmed] == [[a[k] for k in keys] for a in alone]
        assert any(w["signals"] for w in warmed)  # the throwaway scripts were seen
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_one_pass_process_holds_one_runs_state_at_a_time_and_the_watcher_keeps_them(home: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        runs = [_live_run(home, f"k{i}", sleeper, 200) for i in range(3)]
        cfg = load()
        monitor.KEPT.reset()  # as `status` has it
        for r in runs:
            monitor.refresh(r, BucketsFile(), cfg)
            assert monitor.KEPT.paths() == []
        assert all((r / "detector.pickle").exists() for r in runs)  # first passes are written at once
        monitor.KEPT.reset(keep=True)  # as `watch` sets it
        for r in runs:
            monitor.refresh(r, BucketsFile(), cfg)
        assert sorted(monitor.KEPT.paths()) == sorted(r / "detector.pickle" for r in runs)
    finally:
        monitor.KEPT.reset()
        sleeper.kill()
        sleeper.wait()
