"""Hostile input through the CLI: one-line errors (exit 2), never a traceback, nothing left half-made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.infra import git as git_wrapper
from tests.helpers import (
    ROOT,
    Receiver,
    cli,
    copy_case,
    launch,
    one_line_error,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    write_config,
)


def _run_folders(home: Path) -> list[Path]:
    runs = home / "runs"
    return sorted(runs.iterdir()) if runs.is_dir() else []


def _ticket_for(tmp_path: Path, repo_text: str) -> Path:
    t = ticket(tmp_path, Path("REPO-PLACEHOLDER"), "say hi")
    t.write_text(t.read_text().replace('"REPO-PLACEHOLDER"', json.dumps(repo_text)))
    return t


# ---- item 5: a notify block that status and watch refuse is refused by launch too ---------------


def test_launch_refuses_a_notify_block_status_refuses(tmp_path: Path, repo: Path, home: Path) -> None:
    write_config(home, notify={"urls": ["json://localhost:1/x"], "colour": "red"})
    status = one_line_error(cli("status"), "notify")
    watch = one_line_error(cli("watch", "--once"), "notify")
    launched = one_line_error(cli("launch", str(ticket(tmp_path, repo, "say hi"))), "notify")
    assert launched == status == watch
    assert _run_folders(home) == []  # refused before any run folder was made


# ---- item 6: names too long, non-finite ticks, dangerous clone transports ---------------------


def test_a_300_character_ticket_or_run_id_is_aone_line_error(home: Path) -> None:
    long = "a" * 300
    one_line_error(cli("launch", long), "File name too long")
    one_line_error(cli("kill", long), "no run")
    one_line_error(cli("launch", "x/" + long + ".md"))


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--tick", "inf"], "--tick"),
        (["--tick", "nan"], "--tick"),
        (["--tick", "-inf"], "--tick"),
        (["--tick", "0"], "--tick"),
        (["--tick", "1e400"], "--tick"),
        (["--idle-exit", "nan"], "--idle-exit"),
        (["--idle-exit", "inf"], "--idle-exit"),
    ],
)
def test_watch_refuses_non_finite_ticks(home: Path, args: list[str], needle: str) -> None:
    one_line_error(cli("watch", "--once", *args), needle)


@pytest.mark.parametrize(
    "repo_text, needle",
    [
        ("ext::sh -c x", "ext:: transport"),
        ("ext::sh -c touch% /tmp/pwned", "ext:: transport"),
        ("fd::3", "fd:: transport"),
        ("FD::3,4", "FD:: transport"),
        ("testgit::/srv/repo", "testgit:: transport"),
        ("hg://example.com/repo", "hg:// transport is refused"),
        ("--upload-pack=touch /tmp/pwned", "starts with '-'"),
        ("-u touch /tmp/pwned", "starts with '-'"),
    ],
)
def test_launch_refuses_transports_git_would_run_a_command_for(
    tmp_path: Path, home: Path, repo_text: str, needle: str
) -> None:
    t = _ticket_for(tmp_path, repo_text)
    line = one_line_error(cli("launch", str(t)), needle)
    assert f"{t}:" in line  # file and line of the ticket
    assert _run_folders(home) == []  # nothing ran: no run left `launching`, then `lost`


@pytest.mark.parametrize("repo_text", ["file://{repo}", "{repo}"])
def test_launch_still_clones_plain_paths_and_file_urls(tmp_path: Path, repo: Path, home: Path, repo_text: str) -> None:
    t = _ticket_for(tmp_path, repo_text.format(repo=repo))
    p = cli("launch", str(t))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.strip().splitlines()[-1]
    assert (home / "runs" / run_id / "clone" / "src" / "app.py").is_file()


def test_the_clone_restricts_git_protocols(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.infra import proc

    seen: dict[str, Any] = {}
    real = proc.run_watched

    def spy(argv: list[str], **kwargs: Any) -> tuple[int, bytes, str | None]:
        seen.update(kwargs["env"])
        return real(argv, **kwargs)

    monkeypatch.setattr(proc, "run_watched", spy)
    git_wrapper.clone(str(repo), tmp_path / "c", base=None, branch="ticket/x")
    assert seen["GIT_ALLOW_PROTOCOL"] == "file:git:ssh:https:http" and seen["GIT_TERMINAL_PROMPT"] == "0"
    assert (tmp_path / "c" / "src" / "app.py").is_file()


def test_the_clone_wrapper_itself_refuses_ext(tmp_path: Path) -> None:
    from orchestrator.infra.errors import UserError

    marker = tmp_path / "pwned"
    with pytest.raises(UserError, match="ext::|refused|failed"):
        git_wrapper.clone(f"ext::sh -c touch% {marker}", tmp_path / "c", base=None, branch="ticket/x")
    assert not marker.exists()


# ---- item 7: YAML alias bombs, NaN minutes -------------------------------------------------------

_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi", strict=True)
)


CASE = "healthy-001-steady-feature"


def _case_with(tmp_path: Path, extra: str) -> Path:
    case = copy_case(CASE, tmp_path)
    (case / "case.yaml").write_text((case / "case.yaml").read_text() + extra)
    return case


def test_replay_refuses_a_billion_laughs_case_file_quickly(tmp_path: Path) -> None:
    case = _case_with(tmp_path, "x-bomb:\n" + "".join("  " + ln + "\n" for ln in _BOMB.splitlines()))
    started = time.monotonic()
    p = cli("replay", str(case))
    took = time.monotonic() - started
    one_line_error(p, "case.yaml", "aliases expand to more than")
    assert took < 5, f"took {took:.1f} s"


def test_replay_refuses_a_self_referring_alias(tmp_path: Path) -> None:
    case = _case_with(tmp_path, "x-loop: &loop [*loop]\n")
    one_line_error(cli("replay", str(case)), "case.yaml", "refers to its own anchor")


def test_a_ticket_alias_bomb_is_refused(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "say hi")
    text = t.read_text().replace("---\n", "---\n" + _BOMB.replace(": &", "x: &", 1), 1)
    t.write_text(text)
    one_line_error(cli("launch", str(t)), str(t), "aliases expand to more than")
    assert _run_folders(home) == []


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-1"])
def test_case_notify_after_min_must_be_a_real_number(tmp_path: Path, value: str) -> None:
    case = copy_case(CASE, tmp_path)
    text = (case / "case.yaml").read_text()
    assert "expect:" in text
    text = text.replace("expect:", f"expect:\n  notify_after_min: {value}", 1)
    (case / "case.yaml").write_text(text)
    one_line_error(cli("replay", str(case)), "notify_after_min")


def test_a_ticket_too_long_for_one_argument_is_refused_before_anything_runs(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    t = ticket(tmp_path, repo, "exit 0\n# " + "x" * 140_000)  # the fake agent takes its prompt as an argument
    one_line_error(cli("launch", str(t)), "body is 136 KiB", "Linux caps at 128 KiB", "prompt: stdin")
    assert _run_folders(home) == []  # before: a run that failed with 'Argument list too long'


def test_a_relative_repo_is_the_one_beside_where_launch_ran_for_a_queued_run_too(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    where = repo.parent / "work"
    where.mkdir()
    t = ticket(tmp_path, Path("../origin"), "exit 0")  # relative to where launch runs: tmp_path/origin
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "launch", str(t)],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.returncode == 0, p.stderr
    record = json.loads(next((home / "runs").glob("*/state.json")).read_text())
    assert record["repo"] == str(repo)
    one_line_error(cli("launch", str(ticket(tmp_path, Path("../nowhere"), "exit 0", name="t2"))), "no such folder")


def test_a_long_stdin_prompt_reaches_an_agent_that_prints_before_it_reads(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    agent = tmp_path / "chatty.py"  # 2000 lines (~150 KB, more than a pipe holds) before it reads its prompt
    agent.write_text(
        "import json, sys\n"
        "for i in range(2000):\n"
        "    print(json.dumps({'tool': 'Read', 'path': f'src/file_{i:04d}.py', 'note': 'x' * 40}), flush=True)\n"
        "prompt = sys.stdin.read()\n"
        "open('prompt_len.txt', 'w').write(str(len(prompt)))\n"
    )
    write_config(home, command=[sys.executable, str(agent)])
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["agents"]["fake"]["prompt"] = "stdin"
    (home / "config.yaml").write_text(json.dumps(cfg))
    body = "Fix it.\n" + "y" * 180_000
    run_id = cli("launch", str(ticket(tmp_path, repo, body, work=False))).stdout.strip().splitlines()[-1]
    run = home / "runs" / run_id
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and json.loads((run / "state.json").read_text())["state"] == "running":
        time.sleep(0.2)
    assert json.loads((run / "state.json").read_text())["state"] == "succeeded"
    assert (run / "clone" / "prompt_len.txt").read_text() == str(len(body))
    assert len((run / "events.jsonl").read_text().splitlines()) == 2000
    huge = cli("launch", str(ticket(tmp_path, repo, "z" * (5 * 2**20), name="huge")))  # kept in the record
    assert huge.returncode == 2 and "a prompt is at most 4 MiB" in huge.stderr, huge.stderr


def test_a_ticket_saved_with_a_byte_order_mark_is_read(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}')
    t.write_text("\ufeff" + t.read_text())
    p = cli("launch", str(t))
    assert p.returncode == 0, p.stderr


def test_a_ceiling_a_generic_agent_cannot_be_held_to_is_refused(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "exit 0", max_tokens=1000)  # the fake agent logs in the generic format
    one_line_error(cli("launch", str(t)), "max_tokens cannot be held", "'generic' format, which reports no token usage")
    assert _run_folders(home) == []


def _silent_server() -> Any:
    import socket

    server = socket.socket()  # accepts, then never answers: a remote (http, git://) that hangs
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server


def _ticket_at(tmp_path: Path, url: str) -> Path:
    t = ticket(tmp_path, Path("REPO"), "exit 0")
    t.write_text(t.read_text().replace('"REPO"', f'"{url}"'))
    return t


@pytest.mark.parametrize(
    ("scheme", "said", "within_s"),
    [("http", "Operation too slow", 30), ("git", "no progress for 7 s", 40)],  # curl's bound; then ours, any transport
)
def test_a_clone_from_a_remote_that_stalls_ends(
    tmp_path: Path, home: Path, scheme: str, said: str, within_s: float
) -> None:
    server = _silent_server()
    try:
        t = _ticket_at(tmp_path, f"{scheme}://127.0.0.1:{server.getsockname()[1]}/x.git")
        t0 = time.monotonic()
        p = cli("launch", str(t), env={"ORCHESTRATOR_CLONE_STALL_SECONDS": "2"}, timeout=60)
        assert p.returncode == 1 and said in p.stderr, p.stderr
        assert time.monotonic() - t0 < within_s
    finally:
        server.close()


def test_kill_ends_a_clone_that_hangs(tmp_path: Path, home: Path) -> None:
    server = _silent_server()
    try:
        t = _ticket_at(tmp_path, f"git://127.0.0.1:{server.getsockname()[1]}/x.git")
        launcher = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "launch", str(t)], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not list((home / "runs").glob("*/.clone-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        run_id = next((home / "runs").iterdir()).name
        t0 = time.monotonic()
        assert cli("kill", run_id).returncode == 0
        _, err = launcher.communicate(timeout=30)
        assert time.monotonic() - t0 < 30 and launcher.returncode == 1, err  # not the 60 s stall bound
        assert "killed during launch" in err
        left = subprocess.run(["pgrep", "-f", f"127.0.0.1:{server.getsockname()[1]}"], capture_output=True)
        assert left.stdout.strip() == b"", left.stdout  # the clone and its transport are gone
    finally:
        server.close()


def test_a_state_folder_reached_through_a_symlink_still_pages_a_spiral(
    tmp_path: Path, repo: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent logs its working folder with the symlinks resolved (getcwd): under a linked state
    folder (macOS's /tmp and /var, a home on another disk) every path in the log is the real one.
    Read against the linked path, no file was the run's own and this spiral, a probe the run wrote
    and reruns, never paged (suspicion 0)."""
    real = tmp_path / "real-state"
    real.mkdir()
    linked = tmp_path / "linked-state"
    linked.symlink_to(real)
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(linked))
    write_config(linked, notify={"urls": [receiver.url]})
    watcher = start_watcher(0.2)
    try:
        case = ROOT / "corpus" / "spiral-probe-counter-claude-stream-json"
        run_id = launch(ticket(tmp_path, repo, "re-enact", agent="demo", demo_case=str(case), speed=40.0))
        wait(lambda: state(linked, run_id)["state"] != "running", timeout=120, what="the run's end")
        assert str(real) in (linked / "runs" / run_id / "events.jsonl").read_text()  # the log's paths are real
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=30, what="the page")
        assert f"workdir: {real}/runs/{run_id}/clone\n" in (linked / "runs" / run_id / "case.yaml").read_text()
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
