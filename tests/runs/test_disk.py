"""A full or read-only state folder: one-line errors, named endings, no page for a dead run,
never a run folder without a state. Needs root (mount); skipped with the reason otherwise."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.infra import proc
from tests.helpers import (
    FAST,
    Receiver,
    cli,
    one_line_error,
    orchestrator_home,
    start_watcher,
    state,
    ticket,
    wait,
    wait_passes,
    write_config,
)

SIZE = "3m"
# an agent whose every output line is bigger than a tmpfs page, so each one needs new space
LOUD_AGENT = """
import json, time
for i in range(100000):
    print(json.dumps({"tool": "Bash", "command": "python tmp_loop.py", "pad": "x" * 6000}), flush=True)
    time.sleep(0.01)
"""


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=20)


def _umount(path: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if subprocess.run(["umount", str(path)], capture_output=True, timeout=20).returncode == 0:
            return
        time.sleep(0.2)
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=20)  # last resort: detach


def _stop_all_runs(home: Path) -> None:
    for st in (home / "runs").glob("*/state.json") if (home / "runs").is_dir() else []:
        try:
            rec = json.loads(st.read_text())
        except (OSError, ValueError):
            continue
        for key in ("agent_pid", "supervisor"):
            ref = rec.get(key)
            if ref:
                proc.kill_tree(proc.ProcRef(ref["pid"], ref["create_time"]), grace_s=1)


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    """$ORCHESTRATOR_HOME on a small tmpfs of its own, with the `fake` agent configured."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    home = Path(os.environ["ORCHESTRATOR_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    p = _mount("-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(home))
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        write_config(orchestrator_home())
        yield home
    finally:
        _stop_all_runs(home)
        _umount(home)


@pytest.fixture
def read_only_view(small_home: Path, tmp_path: Path) -> Iterator[Path]:
    """The same state folder, bind-mounted read-only elsewhere (root ignores chmod)."""
    view = tmp_path / "ro-view"
    view.mkdir()
    p = _mount("--bind", str(small_home), str(view))
    if p.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {p.stderr.strip()}")
    try:
        p = _mount("-o", "remount,ro,bind", str(view))
        if p.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {p.stderr.strip()}")
        yield view
    finally:
        _umount(view)


def _fill(home: Path, leave: int = 0) -> Path:
    """Fill the file system under `home`, then give back `leave` bytes."""
    filler = home / "filler"
    with filler.open("wb", buffering=0) as fh:
        for chunk in (65536, 4096, 1):
            try:
                while fh.write(b"\0" * chunk):
                    pass
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def _every_run_folder_has_a_state(home: Path) -> list[str]:
    runs = home / "runs"
    folders = sorted(runs.iterdir()) if runs.is_dir() else []
    for d in folders:
        assert (d / "state.json").is_file(), f"{d} has no state.json"
    return [d.name for d in folders]


def test_launch_on_a_full_disk_leaves_no_run_folder(tmp_path: Path, repo: Path, small_home: Path) -> None:
    (small_home / "runs").mkdir()
    _fill(small_home)
    p = cli("launch", str(ticket(tmp_path, repo, "say hi")))
    one_line_error(p, "No space left on device")
    assert _every_run_folder_has_a_state(small_home) == []
    for args in (["watch", "--once"], ["status"]):
        p = cli(*args)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)


def test_launch_that_runs_out_of_space_cloning_records_a_failed_run(
    tmp_path: Path, repo: Path, small_home: Path
) -> None:
    (small_home / "runs").mkdir()
    _fill(small_home, leave=48 * 1024)  # room for the record, not for a clone
    p = cli("launch", str(ticket(tmp_path, repo, "say hi")))
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    (run_id,) = _every_run_folder_has_a_state(small_home)
    s = state(small_home, run_id)
    assert s["state"] == "failed", s  # never left `launching`, to be found `lost` later
    assert s["reason"] and s["agent_pid"] is None
    assert s["reason"] in p.stderr


def test_a_supervisor_on_a_full_disk_stops_the_agent_and_records_why(
    tmp_path: Path, repo: Path, small_home: Path
) -> None:
    receiver = Receiver().start()
    watcher = None
    try:
        write_config(
            small_home,
            command=[sys.executable, "-c", LOUD_AGENT],
            notify={"urls": [receiver.url], "events": ["spiral", "stalled", "lost"]},
        )
        # (the loud agent is a fast loop: with the sustained-loop page on it may page before the disk
        # fills, rightly; this test is about the disk, so the page waits for the soft band, never reached)
        quiet = {**FAST, "rules": {"sustained": {"enabled": False}}}
        p = cli("launch", str(ticket(tmp_path, repo, "go", overrides=quiet)))
        assert p.returncode == 0, p.stderr
        run_id = p.stdout.strip().splitlines()[-1]
        watcher = start_watcher(tick=0.2)
        wait(lambda: state(small_home, run_id)["state"] not in ("launching", "running"), 60, "the run to end")
        s = state(small_home, run_id)
        assert s["state"] == "failed", s
        assert s["reason"] == "disk full: cannot write events.jsonl (No space left on device)", s
        agent = s["agent_pid"]
        assert not proc.ProcRef(agent["pid"], agent["create_time"]).alive()
        wait_passes(5, home=small_home)  # several watcher passes over the ended run
        s = state(small_home, run_id)
        assert s["state"] == "failed" and not s.get("notices"), s
        assert receiver.titles() == []  # nothing paged for a run the disk ended
        assert _every_run_folder_has_a_state(small_home) == [run_id]
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait(timeout=10)
        receiver.stop()


def test_a_read_only_state_folder_gives_one_line_errors(
    tmp_path: Path, repo: Path, small_home: Path, read_only_view: Path
) -> None:
    # no snapshot falls due while the disk is full (one that cannot be written ends the run `failed`)
    p = cli("launch", str(ticket(tmp_path, repo, "say hi\nsleep 60", overrides={"snapshot_every_seconds": 3600})))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.strip().splitlines()[-1]
    ro = {"ORCHESTRATOR_HOME": str(read_only_view)}
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "say hi", name="t2")), env=ro), "Read-only file system")
    one_line_error(cli("watch", "--once", env=ro), "Read-only file system")
    one_line_error(cli("kill", run_id, env=ro), "Read-only file system")
    status = cli("status", env=ro)
    assert "Traceback" not in status.stderr, status.stderr
    assert _every_run_folder_has_a_state(small_home) == [run_id]
    assert state(small_home, run_id)["state"] == "running"  # nothing was recorded through the read-only view
    p = cli("kill", run_id)
    assert p.returncode == 0, p.stderr


def test_kill_on_a_full_disk_still_stops_the_run_and_records_it(tmp_path: Path, repo: Path, small_home: Path) -> None:
    p = cli("launch", str(ticket(tmp_path, repo, "say hi\nsleep 60")))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.strip().splitlines()[-1]
    events = small_home / "runs" / run_id / "events.jsonl"
    # the agent's one line written before the disk fills (written after, it ends the run `failed` first)
    wait(lambda: "hi" in events.read_text(), timeout=30, what="the agent's line")
    s = state(small_home, run_id)
    _fill(small_home)
    p = cli("kill", run_id)
    assert p.returncode == 0, p.stderr
    final = state(small_home, run_id)
    assert final["state"] == "killed", final
    for key in ("agent_pid", "supervisor"):
        ref = final[key] or s[key]
        assert not proc.ProcRef(ref["pid"], ref["create_time"]).alive(), key
