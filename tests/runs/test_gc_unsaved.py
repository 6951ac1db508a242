"""`gc` keeps a run's work: nothing pushes it anywhere, so before a clone goes, its uncommitted changes
(untracked files too) and its unpushed commits are saved in the run folder, and can be put back."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from orchestrator.record.layout import RunDir
from tests.helpers import cli
from tests.runs.test_gc import age, finished, run_gc, tree


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_unsaved_work_is_saved_before_the_clone_goes_and_can_be_put_back(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    run_id = finished(tmp_path, repo, home, "feature")  # the agent wrote src/feature.py, never committed
    rd = RunDir(home / "runs" / run_id)
    (rd.clone / "src" / "app.py").write_text("print('changed')\n")
    (rd.clone / "notes").mkdir()
    (rd.clone / "notes" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    git("add", "notes", cwd=rd.clone)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "agent's commit", cwd=rd.clone)
    branch = git("rev-parse", "--abbrev-ref", "HEAD", cwd=rd.clone).strip()
    head = git("rev-parse", "HEAD", cwd=rd.clone).strip()
    age(home, run_id, 9)
    # the user's own diff settings must not make a patch git apply refuses
    Path(os.environ["HOME"], ".gitconfig").write_text("[color]\n\tui = always\n[diff]\n\tnoprefix = true\n")

    before = tree(rd.path)
    dry = cli("gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"unsaved work (2 changed paths, 1 unpushed commit) goes to {run_id}/unsaved/ first" in dry.stdout
    assert tree(rd.path) == before  # a dry run writes nothing, in the clone's .git either

    out = run_gc()
    [c] = out["clones"]
    assert c["removed"] and (c["unsaved_paths"], c["unsaved_commits"]) == (2, 1), c
    assert c["saved"] == ["unsaved/work.patch", "unsaved/commits.bundle"]
    assert not rd.clone.exists() and "its unsaved work saved as unsaved/work.patch" in out["_stderr"]

    back = tmp_path / "back"  # a fresh clone of the origin, then the saved work put back
    git("clone", "-q", str(repo), str(back), cwd=tmp_path)
    git("fetch", "-q", str(rd.path / "unsaved" / "commits.bundle"), f"{branch}:{branch}", cwd=back)
    git("checkout", "-q", branch, cwd=back)
    assert git("rev-parse", "HEAD", cwd=back).strip() == head
    git("apply", "--binary", str(rd.path / "unsaved" / "work.patch"), cwd=back)
    assert (back / "src" / "app.py").read_text() == "print('changed')\n"
    assert (back / "src" / "feature.py").read_text() == "done\n"
    assert (back / "notes" / "blob.bin").read_bytes() == bytes(range(256)) * 4


def test_a_clone_whose_work_cannot_be_saved_stays_unless_discarded(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = finished(tmp_path, repo, home, "broken")
    rd = RunDir(home / "runs" / run_id)
    (rd.clone / ".git" / "HEAD").write_text("garbage\n")  # git can no longer read it
    age(home, run_id, 9)
    p = cli("gc", "--json")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert rd.clone.is_dir() and "left in place" in p.stderr and "--discard-unsaved" in p.stderr
    out = run_gc("--discard-unsaved")
    assert out["clones"][0]["removed"] and not rd.clone.exists() and not (rd.path / "unsaved").exists()


def test_a_clean_clone_saves_nothing(tmp_path: Path, repo: Path, home: Path) -> None:
    # a clean clone: the agent changed nothing, so the run ended no_change (kept as long as a flagged run)
    run_id = finished(tmp_path, repo, home, "clean", body='say {"tool": "Bash", "command": "ls"}', end="no_change")
    age(home, run_id, 31)
    [c] = run_gc()["clones"]
    assert c["removed"] and c["saved"] == [] and (c["unsaved_paths"], c["unsaved_commits"]) == (0, 0)
    assert not (home / "runs" / run_id / "unsaved").exists()


def test_work_off_every_branch_is_kept_and_what_a_patch_cannot_hold_is_refused(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    # the agent itself changed nothing (no_change: kept as long as a flagged run, so aged past that)
    run_id = finished(tmp_path, repo, home, "detached", body='say {"tool": "Bash", "command": "ls"}', end="no_change")
    rd = RunDir(home / "runs" / run_id)
    ident = ["-c", "user.email=a@b", "-c", "user.name=a"]
    git("checkout", "-q", "--detach", cwd=rd.clone)  # a commit on no branch, and a stash
    (rd.clone / "d.txt").write_text("detached\n")
    git("add", "d.txt", cwd=rd.clone)
    git(*ident, "commit", "-q", "-m", "on no branch", cwd=rd.clone)
    detached = git("rev-parse", "HEAD", cwd=rd.clone).strip()
    (rd.clone / "src" / "app.py").write_text("print('stashed')\n")
    git(*ident, "stash", "-q", cwd=rd.clone)
    age(home, run_id, 31)
    [c] = run_gc()["clones"]
    assert c["removed"] and c["saved"] == ["unsaved/commits.bundle"], c
    heads = git("bundle", "list-heads", str(rd.path / "unsaved" / "commits.bundle"), cwd=tmp_path)
    assert f"{detached} HEAD" in heads and "refs/stash" in heads

    nested = finished(tmp_path, repo, home, "nested", body='say {"tool": "Bash", "command": "ls"}', end="no_change")
    nd = RunDir(home / "runs" / nested)
    git("init", "-q", str(nd.clone / "vendor"), cwd=tmp_path)  # a repository of its own inside the clone
    (nd.clone / "vendor" / "lib.py").write_text("x = 1\n")
    git("add", "lib.py", cwd=nd.clone / "vendor")
    git(*ident, "commit", "-q", "-m", "v", cwd=nd.clone / "vendor")
    age(home, nested, 31)
    p = cli("gc", "--json")
    assert p.returncode == 1 and "nested repository" in p.stderr and nd.clone.is_dir(), p.stderr
