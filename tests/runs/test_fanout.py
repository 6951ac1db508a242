"""A one-pass refresh split across forked workers (runs/fanout.py) shows and sends what a serial pass does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.config import load
from orchestrator.record import state_file
from orchestrator.runs import fanout, monitor
from tests.helpers import ROOT, Receiver, cli, live_generic_run, spiral_pages, wait, write_config

KEYS = ("id", "state", "region", "signals", "suspicion", "evidence", "tripped_at_min", "notified", "error")


def _live_run(root: Path, run_id: str, sleeper: subprocess.Popen[bytes], calls: int, *, spiral: bool) -> Path:
    """A live `generic` run: throwaway scripts rerun (a spiral, in its stuck band) or distinct reads."""
    now = time.time()
    start = now - (75 * 60 if spiral else 120)  # medium: in its soft band at 75 minutes; healthy at 2
    events = [
        (
            now - 60 + i * 0.05,
            {"tool": "Bash", "command": f"python tmp_check_{i % 3}.py"}
            if spiral
            else {"tool": "Read", "path": f"f{i}"},
        )
        for i in range(calls)
    ]
    return live_generic_run(root, run_id, sleeper.pid, start, events)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen(["sleep", "300"])
    yield p
    p.kill()
    p.wait()


def _fleet(home: Path, sleeper: subprocess.Popen[bytes], n: int = 20) -> list[Path]:
    return [_live_run(home, f"r{i:02d}", sleeper, 30 + i, spiral=i % 5 == 0) for i in range(n)]


def _rows(views: list[monitor.RunView]) -> list[list[object]]:
    """The views' rows; the minute a run tripped at to the whole minute: it is read off the wall clock, and
    the serial pass runs seconds after the split one (more on a loaded machine)."""
    return [
        [round(x) if k == "tripped_at_min" and x is not None else x for k in KEYS for x in [v.to_dict()[k]]]
        for v in views
    ]


def test_a_split_pass_gives_the_views_of_a_serial_one(
    home: Path, tmp_path: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _fleet(home, sleeper)
    plain = tmp_path / "plain"
    shutil.copytree(home, plain)
    forks: list[int] = []
    real_fork = fanout._fork

    def counted(share: list[Path], work: fanout.Callable[[Path], monitor.RunView]) -> tuple[int, int] | None:
        forks.append(len(share))
        return real_fork(share, work)

    monkeypatch.setattr(fanout, "_fork", counted)
    monkeypatch.setenv(fanout.JOBS_ENV, "2")
    monitor.KEPT.reset()
    assert fanout.jobs(len(runs)) == 2, "this test process runs other threads: the split path is not tried"
    split = fanout.refresh_each(runs, BucketsFile(), load(), None)
    assert forks == [10]  # one worker, half of the runs
    assert all((r / "detector.pickle").exists() for r in runs)  # the workers' states were written
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(plain))
    monkeypatch.setenv(fanout.JOBS_ENV, "1")
    monitor.KEPT.reset()
    serial = fanout.refresh_each([plain / "runs" / r.name for r in runs], BucketsFile(), load(), None)
    assert forks == [10]
    assert _rows(split) == _rows(serial)
    assert sum(1 for v in split if v.record.spiral.signals) == 4  # the spiralling runs were seen as such


def test_a_worker_that_dies_leaves_its_share_to_the_parent(
    home: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _fleet(home, sleeper)
    parent = os.getpid()
    real_fork = fanout._fork

    def dying(share: list[Path], work: fanout.Callable[[Path], monitor.RunView]) -> tuple[int, int] | None:
        def work_then_die(d: Path) -> monitor.RunView:
            if os.getpid() != parent:
                os._exit(3)  # the worker dies before it hands anything back
            return work(d)

        return real_fork(share, work_then_die)

    monkeypatch.setattr(fanout, "_fork", dying)
    monkeypatch.setenv(fanout.JOBS_ENV, "2")
    monitor.KEPT.reset()
    views = fanout.refresh_each(runs, BucketsFile(), load(), None)
    assert [v.run_id for v in views] == [r.name for r in runs]
    assert all(v.error is None and v.record.state == "running" for v in views)
    assert all((r / "detector.pickle").exists() for r in runs)  # every run was evaluated, its share by the parent
    assert sum(1 for v in views if v.record.spiral.signals) == 4


def test_the_watcher_and_small_fleets_never_split(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fanout.JOBS_ENV, "2")
    monitor.KEPT.reset()
    assert fanout.jobs(fanout.PARALLEL_AT - 1) == 1
    monitor.KEPT.reset(keep=True)  # the watcher: its states live in its memory
    assert fanout.jobs(100) == 1
    monitor.KEPT.reset()
    monkeypatch.setenv(fanout.JOBS_ENV, "not a number")
    assert fanout.jobs(100) == 1


def test_status_over_a_fleet_pages_each_spiral_once_from_the_parent(
    home: Path, sleeper: subprocess.Popen[bytes], receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    runs = _fleet(home, sleeper)
    env = {fanout.JOBS_ENV: "2"}
    for _ in range(2):  # a second status finds the pages sent
        p = cli("status", "--json", env=env)
        assert p.returncode == 0, p.stderr
    spiralling = [r.name for i, r in enumerate(runs) if i % 5 == 0]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(spiral_pages(receiver, r) == 0 for r in spiralling):
        time.sleep(0.1)
    assert [spiral_pages(receiver, r) for r in spiralling] == [1, 1, 1, 1]
    assert sum(spiral_pages(receiver, r.name) for r in runs) == 4
    assert all(state_file.read(r).notices["spiral"].delivered for r in (home / "runs" / n for n in spiralling))


SPLIT_CLI = """
import sys
from orchestrator.runs import fanout
real, marks = fanout._fork, sys.argv[1]
def noted(share, work):
    with open(marks, "a") as fh:
        fh.write(f"{len(share)}\\n")
    return real(share, work)
fanout._fork = noted
if sys.argv[2] == "status":
    from orchestrator.cli import main
    sys.argv = ["orchestrator", "status", "--json"]
    main()
else:  # the pass as a program calls it, with no notifier at all
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.runs.watch import one_pass
    one_pass(BucketsFile(), load(), None)
"""


@pytest.mark.parametrize("caller", ["status", "one_pass"])
def test_a_split_pass_with_no_notifier_exports_each_ended_runs_trace_once(
    home: Path, tmp_path: Path, sleeper: subprocess.Popen[bytes], caller: str
) -> None:
    """`status` with telemetry and no notify: section, and one_pass(..., notifier=None) as a program calls it."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")
    from tests.telemetry.test_otlp import OtlpReceiver, configure

    otlp = OtlpReceiver()
    try:
        configure(home, otlp.url)  # telemetry, and no notify: section
        runs = _fleet(home, sleeper)
        sleeper.kill()
        sleeper.wait()  # every run's supervisor and agent are gone: this pass ends them all (lost)
        forks = tmp_path / "forks.txt"
        for _ in range(2):  # the second pass finds every trace exported
            p = subprocess.run(
                [sys.executable, "-c", SPLIT_CLI, str(forks), caller],
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={**os.environ, fanout.JOBS_ENV: "2"},
                timeout=120,
            )
            assert p.returncode == 0, p.stderr
        assert forks.read_text().split() == ["10", "10"], "a pass was not split (a thread ran before it?)"
        wait(lambda: all(otlp.runs(r.name) for r in runs), timeout=30, what="every run's trace")
        assert [len(otlp.runs(r.name)) for r in runs] == [1] * len(runs)
        assert all(state_file.read(r).state == "lost" for r in runs)
    finally:
        otlp.stop()
