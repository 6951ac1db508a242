"""`diff RUN [--stat]`: what a run changed in its real clone since its agent started, committed,
uncommitted and new files alike; and clear one-line errors when it cannot say."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import cli, launch, one_line_error, state, ticket, wait


def _finished(tmp_path: Path, repo: Path, home: Path, body: str, name: str = "t1") -> str:
    # not delivered: the work stays uncommitted in the clone (test_delivery.py diffs a delivered run)
    run_id = launch(ticket(tmp_path, repo, body, name=name, work=False, deliver="none"))
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), 60, "the run's end")
    return run_id


def test_diff_shows_edits_commits_and_new_files_and_stat_sums_them(tmp_path: Path, repo: Path, home: Path) -> None:
    body = "write src/app.py print('changed')\nwrite src/new_module.py VALUE = 1\nexit 0"
    run_id = _finished(tmp_path, repo, home, body)
    s = state(home, run_id)
    assert s["state"] == "succeeded" and s["start_commit"], s
    p = cli("diff", run_id)
    assert p.returncode == 0, p.stderr
    assert "-print('hi')" in p.stdout and "+print('changed')" in p.stdout  # a tracked file's edit
    assert "+++ b/src/new_module.py" in p.stdout and "+VALUE = 1" in p.stdout  # a new file, as a patch
    stat = cli("diff", run_id[:12], "--stat")  # a unique prefix, like every run command
    assert stat.returncode == 0, stat.stderr
    assert "src/app.py" in stat.stdout and "src/new_module.py | 1 + (new, untracked)" in stat.stdout
    # nothing in the clone's index moved: a diff reads, never stages
    status = (home / "runs" / run_id / "clone" / ".git" / "index").stat().st_mtime
    cli("diff", run_id)
    assert (home / "runs" / run_id / "clone" / ".git" / "index").stat().st_mtime == status


def test_a_run_that_changed_nothing_says_so(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = _finished(tmp_path, repo, home, 'say {"tool": "Bash", "command": "ls"}\nexit 0')
    assert state(home, run_id)["state"] == "no_change"
    p = cli("diff", run_id)
    assert p.returncode == 0 and p.stdout.startswith(f"run {run_id} changed nothing since "), p.stdout


def test_diff_errors_are_one_line(tmp_path: Path, repo: Path, home: Path) -> None:
    one_line_error(cli("diff", "no-such-run"), "no run 'no-such-run'")
    run_id = _finished(tmp_path, repo, home, "write notes.txt x\nexit 0")
    shutil.rmtree(home / "runs" / run_id / "clone")
    one_line_error(cli("diff", run_id), "its clone is gone")
