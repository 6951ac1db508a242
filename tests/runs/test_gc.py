"""`gc`: clones of ended runs past their retention go; records, logs and snapshots stay.

Run folders are real: the fake agent (tests/fake_agent.py) launched through `launch`;
ages are set by rewriting `ended_at` through state_file.update, as a run ended days ago.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.runs import gc
from tests.helpers import cli, launch, one_line_error, state, ticket, wait

DAY = 86400.0


def finished(tmp_path: Path, repo: Path, home: Path, name: str, body: str = "", end: str = "succeeded") -> str:
    body = body or f'say {{"tool": "Edit", "path": "src/{name}.py"}}\nwrite src/{name}.py done'
    # the body's own changes only, left in the clone (no delivery: what gc saves is what these tests look at)
    run_id = launch(ticket(tmp_path, repo, body, name=name, work=False, deliver="none"))
    wait(lambda: state(home, run_id)["state"] == end, what=f"{run_id} {end}")
    wait(lambda: not _alive(home, run_id), what=f"{run_id}'s supervisor to exit")
    return run_id


def _alive(home: Path, run_id: str) -> bool:
    record = state_file.read(home / "runs" / run_id)
    return gc.untouchable(record) is not None


def change(home: Path, run_id: str, how: Any) -> None:
    def edit(r: RunRecord) -> None:
        how(r)

    state_file.update(home / "runs" / run_id, edit)


def age(home: Path, run_id: str, days: float) -> None:
    """The run ended `days` ago."""
    when = datetime.fromtimestamp(datetime.now(UTC).timestamp() - days * DAY, UTC)
    change(home, run_id, lambda r: setattr(r, "ended_at", when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")))


def run_gc(*args: str) -> dict[str, Any]:
    p = cli("gc", "--json", *args)
    assert p.returncode == 0, (p.stdout, p.stderr)
    out: dict[str, Any] = json.loads(p.stdout)  # progress went to stderr: stdout is the document alone
    out["_stderr"] = p.stderr
    return out


def tree(path: Path) -> dict[str, tuple[int, float]]:
    """Every file under `path`: (size, mtime)."""
    found = {}
    for folder, _dirs, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(folder, f))
            found[os.path.relpath(os.path.join(folder, f), path)] = (st.st_size, st.st_mtime)
    return found


def du(path: Path) -> int:
    """Allocated bytes under `path`, each inode once (what `du -s --block-size=1` says)."""
    seen, total = set(), os.lstat(path).st_blocks * 512
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def test_an_old_healthy_clone_goes_and_history_replay_logs_still_work(tmp_path: Path, repo: Path, home: Path) -> None:
    old = finished(tmp_path, repo, home, "old")
    fresh = finished(tmp_path, repo, home, "fresh")
    rd = RunDir(home / "runs" / old)
    before = {
        "replay": cli("replay", str(rd.path), "--json"),
        "logs": cli("logs", old, "--json"),
    }
    assert before["logs"].stdout.strip() and before["replay"].returncode == 0, before["replay"].stderr
    age(home, old, 8)
    history_before = {r["run_id"]: r for r in json.loads(cli("history", "--json").stdout)["runs"]}
    kept_files = [rd.state_json, rd.events, rd.workspace, rd.case_yaml, rd.ticket]
    assert all(f.is_file() for f in kept_files) and rd.clone.is_dir()

    p = cli("gc")
    assert p.returncode == 0, p.stderr
    assert f"removed {old}/clone (succeeded, ended 8.0 days ago, retention 7 days)" in p.stdout
    assert "removed 1 of 1 clone: " in p.stdout and "kept 1 clone within retention" in p.stdout, p.stdout
    assert not rd.clone.exists() and not (rd.path / gc.TRASH).exists()
    assert (home / "runs" / fresh / "clone").is_dir()
    assert all(f.is_file() for f in kept_files)
    removed_at = state(home, old)["clone_removed_at"]
    assert removed_at and state(home, fresh)["clone_removed_at"] is None

    # the run's history reads the same as before
    after = cli("replay", str(rd.path), "--json")
    assert after.returncode == 0 and json.loads(after.stdout) == json.loads(before["replay"].stdout)
    assert cli("logs", old, "--json").stdout == before["logs"].stdout
    history_after = {r["run_id"]: r for r in json.loads(cli("history", "--json").stdout)["runs"]}
    assert history_after[old] == history_before[old] and history_after[old]["state"] == "succeeded"

    again = cli("gc")
    assert again.returncode == 0 and "no clone is past its retention" in again.stdout
    assert state(home, old)["clone_removed_at"] == removed_at


def test_spiraled_and_failed_runs_keep_their_clone_longer(tmp_path: Path, repo: Path, home: Path) -> None:
    failed = finished(tmp_path, repo, home, "bad", body="stderr boom\nexit 1", end="failed")
    spiraled = finished(tmp_path, repo, home, "loop")
    change(home, spiraled, lambda r: setattr(r.spiral, "tripped_in_soft_band", True))
    for run_id in (failed, spiraled):
        age(home, run_id, 10)

    out = run_gc()
    assert out["clones"] == [] and out["removed"] == 0
    kept = {k["run_id"]: k for k in out["kept"]}
    assert kept[failed]["flagged"] == "failed" and kept[spiraled]["flagged"] == "spiraled"
    assert all(k["keep_days"] == 30 and 19.9 < k["due_in_days"] <= 20 for k in kept.values())
    # the command line's option shortens the longer retention for this gc only
    shorter = run_gc("--dry-run", "--flagged-older-than", "9")
    assert {c["run_id"] for c in shorter["clones"]} == {failed, spiraled} and shorter["keep_days_flagged"] == 9
    assert all((home / "runs" / r / "clone").is_dir() for r in (failed, spiraled))

    for run_id in (failed, spiraled):
        age(home, run_id, 31)
    out = run_gc()
    assert {c["run_id"]: c["flagged"] for c in out["clones"]} == {failed: "failed", spiraled: "spiraled"}
    assert out["removed"] == 2 and all(c["removed"] and c["error"] is None for c in out["clones"])
    assert f"removed {failed}/clone (failed, ended 31.0 days ago, retention 30 days)" in out["_stderr"]
    assert f"removed {spiraled}/clone (succeeded, spiraled, ended 31.0 days ago, retention 30 days)" in out["_stderr"]
    assert not any((home / "runs" / r / "clone").exists() for r in (failed, spiraled))


def test_active_and_queued_runs_are_never_touched_however_old(tmp_path: Path, repo: Path, home: Path) -> None:
    running = launch(ticket(tmp_path, repo, "sleep 120", name="slow"))
    wait(lambda: state(home, running)["state"] == "running", what="the run to start")
    queued = finished(tmp_path, repo, home, "waiting")
    long_ago = "2020-01-01T00:00:00.000000Z"
    change(home, running, lambda r: setattr(r, "created_at", long_ago))
    change(home, running, lambda r: setattr(r, "ended_at", long_ago))  # a stray ending time changes nothing
    # a state gc does not know (the queue's, or a later version's) is not ended: hands off
    change(home, queued, lambda r: (setattr(r, "state", "queued"), setattr(r, "ended_at", long_ago)))
    try:
        out = run_gc("--older-than", "0", "--flagged-older-than", "0")
        assert out["clones"] == [] and out["removed"] == 0
        untouched = {u["run_id"]: u["state"] for u in out["untouched"]}
        assert untouched == {running: "running", queued: "queued"}
        assert all((home / "runs" / r / "clone").is_dir() for r in (running, queued))
        assert state(home, running)["clone_removed_at"] is None
        text = cli("gc", "--older-than", "0")
        assert f"left alone: {running} (running: not ended)" in text.stdout
    finally:
        cli("kill", running)


def test_dry_run_changes_nothing_and_says_what_it_frees(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = finished(tmp_path, repo, home, "big")
    rd = RunDir(home / "runs" / run_id)
    (rd.clone / "build.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    age(home, run_id, 9)
    before_tree, before_state = tree(rd.path), rd.state_json.read_bytes()

    out = run_gc("--dry-run")
    assert out["dry_run"] is True and out["removed"] == 0
    [c] = out["clones"]
    assert c["run_id"] == run_id and c["removed"] is False
    assert c["size_bytes"] == du(rd.clone) == out["size_bytes"]
    # git hard-links a local origin's objects into the clone: those blocks are not freed
    assert 3 * 1024 * 1024 <= c["frees_bytes"] <= c["size_bytes"]
    text = cli("gc", "--dry-run")
    assert text.returncode == 0
    assert (
        f"would remove 1 clone: {gc.human(c['size_bytes'])} on disk, frees {gc.human(c['frees_bytes'])}" in text.stdout
    )
    assert f"{run_id}/clone" in text.stdout and "MiB" in text.stdout
    assert tree(rd.path) == before_tree and rd.state_json.read_bytes() == before_state


def test_an_unreadable_record_is_skipped_and_reported(tmp_path: Path, repo: Path, home: Path) -> None:
    broken = finished(tmp_path, repo, home, "broken")
    ok = finished(tmp_path, repo, home, "ok")
    age(home, ok, 8)
    (home / "runs" / broken / "state.json").write_text('{"state": "succ')
    p = cli("gc", "--older-than", "0")
    assert p.returncode == 0, p.stderr
    assert f"skipped {broken}: " in p.stderr and "not valid JSON" in p.stderr
    assert (home / "runs" / broken / "clone").is_dir()
    assert not (home / "runs" / ok / "clone").exists()
    out = run_gc("--older-than", "0")
    assert [s["run_id"] for s in out["skipped"]] == [broken] and out["clones"] == []


def test_an_interrupted_gc_is_finished_by_the_next(
    tmp_path: Path, repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = finished(tmp_path, repo, home, "many")
    rd = RunDir(home / "runs" / run_id)
    for i in range(300):
        (rd.clone / f"gen{i}.txt").write_text("x" * 100)
    age(home, run_id, 8)
    real_unlink, calls = os.unlink, [0]

    def interrupted(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] > 100:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the removal
        real_unlink(*args, **kwargs)

    [due] = gc.plan(gc.Retention(7, 30)).due
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(os, "unlink", interrupted)
        gc.remove(due)
    trash = rd.path / gc.TRASH
    assert trash.is_dir() and any(trash.iterdir()) and not rd.clone.exists()
    assert state(home, run_id)["clone_removed_at"] is None

    # a fresh run's half-removed clone is finished too: the removal was already decided
    age(home, run_id, 1)
    p = cli("gc")
    assert p.returncode == 0, p.stderr
    assert (
        f"removed {run_id}/clone (succeeded, ended 1.0 days ago, retention 7 days, finishing an interrupted gc)"
        in p.stdout
    )
    assert not trash.exists() and state(home, run_id)["clone_removed_at"]
    assert rd.events.is_file() and rd.state_json.is_file()


@pytest.mark.parametrize(
    "text, where",
    [
        ("gc_keep_days: -1\n", "config.yaml:1: gc_keep_days must be a non-negative number, got -1"),
        ("heartbeat_seconds: 60\ngc_keep_days_flagged: soon\n", "config.yaml:2: gc_keep_days_flagged must be"),
        ("gc_keep_days: true\n", "config.yaml:1: gc_keep_days must be a non-negative number, got true"),
    ],
)
def test_bad_retention_in_config_is_a_one_line_error(text: str, where: str) -> None:
    from tests.helpers import orchestrator_home

    (orchestrator_home() / "config.yaml").write_text(text)
    for args in (["gc"], ["gc", "--dry-run", "--json"]):
        one_line_error(cli(*args), where)


def test_retention_from_config_and_bad_options(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = finished(tmp_path, repo, home, "cfg")
    age(home, run_id, 2)
    cfg = json.loads((home / "config.yaml").read_text())  # the fixture's config is JSON (JSON is YAML)
    (home / "config.yaml").write_text(json.dumps({**cfg, "gc_keep_days": 1.5, "gc_keep_days_flagged": 3}))
    out = run_gc("--dry-run")
    assert (out["keep_days"], out["keep_days_flagged"]) == (1.5, 3) and [c["run_id"] for c in out["clones"]] == [run_id]
    for bad in ("-1", "nan", "inf"):
        one_line_error(cli("gc", "--older-than", bad), "--older-than must be a number of days")
    one_line_error(cli("gc", "--flagged-older-than", "-3"), "--flagged-older-than")
