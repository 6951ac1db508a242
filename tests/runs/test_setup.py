"""A ticket's `setup:` runs in the real clone before the agent starts: its output in setup.log, a
failure ends the run `failed` with its last lines and no agent, `status` says `setting up` meanwhile."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import cli, launch, one_line_error, state, ticket, wait


def _ended(home: Path, run_id: str) -> dict[str, object]:
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), 60, "the run's end")
    return state(home, run_id)


def test_setup_prepares_the_clone_the_agent_finds(tmp_path: Path, repo: Path, home: Path) -> None:
    secrets = tmp_path / "outside.env"
    secrets.write_text("TOKEN=abc\n")
    # the agent copies what set-up brought in: it ran first, in the clone
    body = 'say {"tool": "Bash", "command": "cat .env"}\nwrite seen.txt ok'
    run_id = launch(ticket(tmp_path, repo, body, setup=f"cp {secrets} .env && echo prepared"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s
    run = home / "runs" / run_id
    assert (run / "clone" / ".env").read_text() == "TOKEN=abc\n"
    assert "prepared" in (run / "setup.log").read_text()


def test_a_failing_setup_ends_the_run_failed_and_no_agent_starts(tmp_path: Path, repo: Path, home: Path) -> None:
    body = "write agent-was-here.txt yes"
    run_id = launch(
        ticket(tmp_path, repo, body, setup=["sh", "-c", "echo installing; echo 'no such package' >&2; exit 3"])
    )
    s = _ended(home, run_id)
    assert s["state"] == "failed" and s["reason"].startswith("setup exited 3: installing | no such package"), s
    assert s["agent_pid"] is None
    assert not (home / "runs" / run_id / "clone" / "agent-was-here.txt").exists()


def test_status_says_setting_up_while_it_runs(tmp_path: Path, repo: Path, home: Path) -> None:
    go = tmp_path / "setup-may-end"  # the setup runs until the test has seen it (a loaded machine's status is slow)
    setup = ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.1; done"]
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', setup=setup))

    def row() -> dict[str, object]:
        return next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == run_id)

    wait(lambda: row()["setting_up"] is True, 10, "status to say setting up")
    assert "setting up" in cli("status").stdout
    go.touch()
    assert _ended(home, run_id)["state"] == "succeeded"
    assert row()["setting_up"] is False


def test_a_bad_setup_is_a_one_line_error(tmp_path: Path, repo: Path, home: Path) -> None:
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "x", setup=[]))), "setup must be a command")
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "x", name="t2", setup=["ok", 3]))), "setup[1]")


def _config(home: Path, **top: object) -> None:
    """The test config.yaml, with keys added at its top level (and to the fake profile: `profile`)."""
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["agents"]["fake"].update(top.pop("profile", {}))  # type: ignore[call-overload]
    cfg.update(top)
    (home / "config.yaml").write_text(json.dumps(cfg))


def test_copy_brings_files_in_before_setup_and_git_never_sees_them(tmp_path: Path, repo: Path, home: Path) -> None:
    outside = tmp_path / "secrets"
    outside.mkdir()
    (outside / "app.env").write_text("TOKEN=not-for-git\n")
    (outside / "fixtures").mkdir()
    (outside / "fixtures" / "big.json").write_text("{}\n")
    copy = [
        str(outside / "app.env"),
        {"from": "secrets/fixtures", "to": "data/fixtures"},
    ]  # (relative: the ticket's folder)
    # set-up sees the copies (it runs after them); the agent changes nothing else: only git's view decides
    run_id = launch(ticket(tmp_path, repo, "write seen.txt ok", work=False, copy=copy, setup="cat app.env"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s
    clone = home / "runs" / run_id / "clone"
    assert (clone / "app.env").read_text() == "TOKEN=not-for-git\n"
    assert (clone / "data" / "fixtures" / "big.json").is_file()
    assert "TOKEN=not-for-git" in (home / "runs" / run_id / "setup.log").read_text()
    # delivered: the branch holds the agent's work, and neither copy
    pushed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", s["delivered"]["branch"]], cwd=repo, capture_output=True, text=True
    ).stdout
    assert "seen.txt" in pushed and "app.env" not in pushed and "big.json" not in pushed
    assert "app.env" not in cli("diff", run_id, "--stat").stdout


def test_a_copy_is_refused_over_a_tracked_file_or_from_nowhere(tmp_path: Path, repo: Path, home: Path) -> None:
    source = tmp_path / "run_tests.sh"
    source.write_text("not the repo's\n")
    run_id = launch(ticket(tmp_path, repo, "write x.txt y", copy=[str(source)]))  # the sample repo tracks it
    s = _ended(home, run_id)
    assert s["state"] == "failed" and s["reason"].startswith("copy: run_tests.sh is tracked in the repository"), s
    assert s["agent_pid"] is None
    gone = str(tmp_path / "nowhere.env")
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "x", name="t2", copy=[gone]))), f"copy: {gone}: no such")


def test_profile_and_repo_blocks_give_steps_the_ticket_does_not(tmp_path: Path, repo: Path, home: Path) -> None:
    outside_env = tmp_path / "elsewhere.env"
    outside_env.write_text("A=1\n")
    _config(
        home,
        repos={str(repo): {"setup": "echo from-the-repo-block > repo-setup.txt", "copy": [str(outside_env)]}},
        profile={"deliver": "none"},
    )
    run_id = launch(ticket(tmp_path, repo, "write out.txt ok"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s
    clone = home / "runs" / run_id / "clone"
    assert (clone / "repo-setup.txt").read_text() == "from-the-repo-block\n" and (clone / "elsewhere.env").is_file()
    assert s["deliver"] == "none" and s["delivered"] is None  # the profile's deliver: none
    # the ticket's own keys come first
    run_id = launch(ticket(tmp_path, repo, "write out.txt ok", name="t2", setup="echo own > own.txt", deliver="branch"))
    s = _ended(home, run_id)
    clone = home / "runs" / run_id / "clone"
    assert (clone / "own.txt").is_file() and not (clone / "repo-setup.txt").exists()
    assert s["delivered"]["pushed_at"] is not None, s
