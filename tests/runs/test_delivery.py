"""A succeeded run's work is delivered: committed on `orchestrator/<run id>` and pushed to the ticket's
repository (a real bare repository in tmp_path), then `pr_command:` runs; a rejected push keeps the
work in the run folder; `deliver: none` leaves it in the clone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli, git, launch, state, ticket, wait
from tests.runs.test_gc import age, run_gc

WORK = "write src/feature.py FEATURE = 1\nexit 0"


def _bare(tmp_path: Path, repo: Path) -> Path:
    bare = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=tmp_path)
    return bare


def _ended(home: Path, run_id: str) -> dict[str, object]:
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), 60, "the run's end")
    wait(lambda: state(home, run_id).get("supervisor") is None or True, 1)
    return state(home, run_id)


def _show(bare: Path, ref: str) -> str:
    p = subprocess.run(["git", "show", ref], cwd=bare, capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else ""


def test_the_work_arrives_on_its_branch_and_the_clone_counts_as_saved(tmp_path: Path, repo: Path, home: Path) -> None:
    bare = _bare(tmp_path, repo)
    run_id = launch(ticket(tmp_path, bare, WORK, name="feature", work=False))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded" and s["reason"] == "agent exited 0", s
    d = s["delivered"]
    branch = f"orchestrator/{run_id}"
    assert d["branch"] == branch and d["pushed_at"] and d["error"] is None, d
    assert _show(bare, f"{branch}:src/feature.py").strip() == "FEATURE = 1"
    log = subprocess.run(["git", "log", "-1", "--format=%s%n%an", branch], cwd=bare, capture_output=True, text=True)
    assert log.stdout.splitlines() == ["feature: write src/feature.py FEATURE = 1", "orchestrator"], log.stdout
    row = next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == run_id)
    assert row["delivered"]["commit"] == d["commit"]
    assert "+FEATURE = 1" in cli("diff", run_id).stdout  # the delivered commit, still against the start
    age(home, run_id, 9)
    [c] = run_gc()["clones"]
    assert c["removed"] and c["saved"] == [] and (c["unsaved_paths"], c["unsaved_commits"]) == (0, 0), c
    # the clone is gone: diff reads the delivered branch back from the repository
    after = cli("diff", run_id)
    assert after.returncode == 0 and "+FEATURE = 1" in after.stdout, after.stderr
    assert "src/feature.py | 1 +" in cli("diff", run_id, "--stat").stdout
    [row] = json.loads(cli("history", "--json").stdout)["runs"]
    assert (row["delivered_branch"], row["pr_url"], row["delivery_error"]) == (branch, None, None), row
    assert row["pushed_at"] is not None
    assert "pushed" in cli("history").stdout


def test_deliver_none_leaves_the_work_in_the_clone(tmp_path: Path, repo: Path, home: Path) -> None:
    bare = _bare(tmp_path, repo)
    run_id = launch(ticket(tmp_path, bare, WORK, work=False, deliver="none"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded" and s["delivered"] is None, s
    assert not _show(bare, f"orchestrator/{run_id}")
    porcelain = subprocess.run(
        ["git", "status", "--porcelain"], cwd=home / "runs" / run_id / "clone", capture_output=True, text=True
    )
    assert "?? src/feature.py" in porcelain.stdout


def test_a_rejected_push_is_named_and_the_work_is_kept(tmp_path: Path, repo: Path, home: Path) -> None:
    bare = _bare(tmp_path, repo)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch protection: pushes need review' >&2\nexit 1\n")
    hook.chmod(0o755)
    run_id = launch(ticket(tmp_path, bare, WORK, work=False))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s
    reason = str(s["reason"])
    assert f"delivery: push of orchestrator/{run_id} failed" in reason and "pushes need review" in reason, reason
    assert s["delivered"]["pushed_at"] is None and s["delivered"]["commit"]
    kept = home / "runs" / run_id / "unsaved"
    assert (kept / "commits.bundle").is_file(), sorted(p.name for p in kept.iterdir()) if kept.exists() else kept
    assert "delivery failed" in cli("status").stdout
    # once gc has removed the clone, diff reads the kept bundle (on top of the repository's commits)
    age(home, run_id, 40)
    run_gc()
    assert not (home / "runs" / run_id / "clone").exists()
    after = cli("diff", run_id)
    assert after.returncode == 0 and "+FEATURE = 1" in after.stdout and "(from " in after.stdout, after.stderr
    assert "push failed" in cli("history").stdout


def test_diff_after_gc_reads_the_patch_gc_kept(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, WORK + "\n", work=False, deliver="none"))
    assert _ended(home, run_id)["state"] == "succeeded"
    age(home, run_id, 9)
    [c] = run_gc()["clones"]
    assert c["removed"] and c["saved"], c
    stat = cli("diff", run_id, "--stat")
    assert stat.returncode == 0 and "src/feature.py" in stat.stdout, (stat.stdout, stat.stderr)
    assert "+FEATURE = 1" in cli("diff", run_id).stdout


def test_pr_command_gets_the_branch_and_its_url_is_recorded(tmp_path: Path, repo: Path, home: Path) -> None:
    bare = _bare(tmp_path, repo)
    seen = tmp_path / "pr-env.txt"
    script = tmp_path / "open_pr.py"
    script.write_text(
        "import os\n"
        f"open({str(seen)!r}, 'w').write(os.environ['ORCHESTRATOR_BRANCH'] + '|' + os.environ['ORCHESTRATOR_TITLE'])\n"
        "print('Creating pull request...')\n"
        "print('https://git.example.invalid/me/app/pull/7')\n"
    )
    front = {"pr_command": [sys.executable, str(script)]}
    run_id = launch(ticket(tmp_path, bare, WORK, name="with-pr", work=False, **front))
    s = _ended(home, run_id)
    assert s["delivered"]["pr_url"] == "https://git.example.invalid/me/app/pull/7", s["delivered"]
    assert seen.read_text() == f"orchestrator/{run_id}|with-pr: write src/feature.py FEATURE = 1"
