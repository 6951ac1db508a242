"""End to end with the real CLIs: Claude Code and Codex launched through the built-in
`claude` / `codex` profiles against the scripted model server on 127.0.0.1.

No test starts `watch` or polls `status` while a run is live: `launch` starts the
background watcher itself (config.yaml `watcher_tick_seconds: 0.5`), and the ticket's
tiny bucket puts the soft band 1.8 s in. Each scenario's waits are bounded (90 s).
Skipped, with the reason, where node or the pinned CLIs are missing
(`./dev.sh test` installs them; `-rs` shows why). Select with `-m real_agents`.
The two `corpus/healthy-real-*` cases are runs of the healthy scenario, recorded with
`.venv/bin/python -m tests.real_agents corpus/` (tests/real_agents.py, `save_case`).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.real_agents import (
    HELLO,
    Sandbox,
    claude_result_tokens,
    codex_turn_tokens,
    gone,
    healthy_script,
    process_tree,
    require_cli,
    sandbox,
    served_tokens,
    user_texts,
    wait_for,
)
from tests.scripted_model import EditFile, Fail, Reply, Run, Step, WriteFile, debug_loop_script

pytestmark = pytest.mark.real_agents

AGENTS = ["claude", "codex"]
# a debug script that fails, slowly enough that 40 runs of it last well into the soft band
SLOW_FAILING = "import sys, time\ntime.sleep(0.2)\nprint('debug: still failing')\nsys.exit(1)\n"


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    with sandbox(tmp_path) as b:
        yield b


def describe_process(p: psutil.Process) -> str:
    try:
        return f"pid {p.pid} ppid {p.ppid()} pgid {os.getpgid(p.pid)} sid {os.getsid(p.pid)} {p.status()} {p.cmdline()}"
    except (psutil.Error, OSError) as exc:
        return f"pid {p.pid} ({exc})"


def loop_outputs(box: Sandbox) -> int:
    return sum("debug: still failing" in t.output for t in box.model.tool_outputs())


def assert_no_page(box: Sandbox, run_id: str) -> None:
    box.settle()
    assert box.spiral_pages(run_id) == 0, box.receiver.titles()
    assert not box.state(run_id).get("spiral", {}).get("tripped_in_soft_band"), box.state(run_id)["spiral"]


# ---- 1. healthy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_healthy_run_changes_the_clone_and_counts_the_clis_tokens(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    box.model.set_script(healthy_script())
    run_id = box.launch(box.ticket(repo, "Write hello.py and run it.", agent))
    s = box.wait_ended(run_id)
    assert s["state"] == "succeeded", box.describe(run_id)

    clone = box.run_dir(run_id) / "clone"
    assert (clone / "hello.py").read_text() == HELLO
    # delivered (deliver: branch, the default): committed on its branch and pushed to the ticket's repo
    branch = s["delivered"]["branch"]
    assert s["delivered"]["pushed_at"] and branch == f"orchestrator/{run_id}", s["delivered"]
    shown = subprocess.run(["git", "show", f"{branch}:hello.py"], cwd=repo, capture_output=True, text=True, check=True)
    assert shown.stdout == HELLO
    assert any("hello from scripted" in t.output for t in box.model.tool_outputs()), box.model.tool_outputs()

    events = box.events(run_id)
    cli_total = claude_result_tokens(events) if agent == "claude" else codex_turn_tokens(events)
    assert cli_total, f"no usage total from {agent} in events.jsonl"
    assert cli_total == served_tokens(box.model)  # the CLI's own accounting of what the server reported
    tokens = box.status_row(run_id)["tokens"]
    assert tokens is not None and abs(tokens - cli_total) <= 0.01 * cli_total, (
        f"status --json tokens {tokens}, {agent}'s own total {cli_total}"
    )
    assert_no_page(box, run_id)
    # the run folder is a corpus case: the real log replays, every line understood
    p = box.cli("replay", str(box.run_dir(run_id)), "--json")
    replayed = json.loads(p.stdout)
    assert p.returncode == 0 and replayed["spiral"] is False, replayed
    assert replayed["tool_calls"] == 2 and replayed["skipped_lines"] == 0, replayed


# ---- 2. spiral ------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_spiral_pages_once_and_the_run_goes_on(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    box.model.set_script(debug_loop_script(40, program=SLOW_FAILING))
    run_id = box.launch(box.ticket(repo, "Fix the failing debug script.", agent))

    paged_while: str | None = None  # the run's state when the page was first seen
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        st = box.state(run_id)["state"]
        if paged_while is None and box.spiral_pages(run_id) >= 1:
            paged_while = st
        if st not in ("launching", "running"):
            break
        time.sleep(0.1)
    s = box.wait_ended(run_id, timeout=5)
    wait_for(lambda: box.spiral_pages(run_id) >= 1, timeout=10, what="the spiral page")
    box.settle()

    # never killed: the agent ran to its own end, where its final answer gave up (runs/endings.py)
    assert s["state"] == "gave_up" and s["agent_claim"]["reason"] == "agent exited 0", box.describe(run_id)
    assert '"I could not fix it."' in s["reason"], s["reason"]
    assert loop_outputs(box) == 40, "every loop iteration ran and reached the model"
    assert box.spiral_pages(run_id) == 1, box.receiver.titles()
    assert paged_while == "running", f"the page came when the run was {paged_while}"
    spiral = box.state(run_id)["spiral"]
    assert spiral["tripped_in_soft_band"] is True and spiral["notified"] is True, spiral


def probe_counter_script(times: int) -> list[Step]:
    """Issue 33's recording with the debris names taken away: a probe (probe_mc.py, no tmp_/debug_
    name) edited and rerun, the same wrong value each time while an attempt counter moves."""
    program = "import sys, time\nATTEMPT = 1\ntime.sleep(0.2)\nprint(f'attempt {ATTEMPT}: mc() returned 0.42, expected 0.5')\nsys.exit(1)\n"
    steps: list[Step] = [WriteFile("probe_mc.py", program)]
    for n in range(1, times + 1):
        steps.append(EditFile("probe_mc.py", f"ATTEMPT = {n}\n", f"ATTEMPT = {n + 1}\n"))
        steps.append(Run("python3 probe_mc.py"))
    steps.append(Reply("I still cannot find why mc() is wrong; stopping here."))
    return steps


@pytest.mark.parametrize("agent", AGENTS)
def test_a_probe_without_a_debris_name_whose_output_moves_only_in_a_counter_pages(
    agent: str, box: Sandbox, repo: Path
) -> None:
    require_cli(agent)
    box.model.set_script(probe_counter_script(20))
    run_id = box.launch(box.ticket(repo, "Find why mc() returns the wrong value.", agent))
    box.wait_ended(run_id, timeout=90)
    wait_for(lambda: box.spiral_pages(run_id) >= 1, timeout=10, what="the spiral page")
    spiral = box.state(run_id)["spiral"]
    assert "stuck_check" in spiral["page_signals"], spiral
    assert sum("mc() returned 0.42" in t.output for t in box.model.tool_outputs()) == 20
    assert any("probe_mc.py ran" in e and "same failure" in e for e in spiral["page_evidence"]), spiral["page_evidence"]


# ---- 3, 4. provider errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "agent, status, reason",
    [
        ("claude", 429, "provider: rate limited (429)"),
        ("claude", 529, "provider: overloaded (529)"),
        ("codex", 429, "provider: rate limited (429)"),
        ("claude", 401, "provider: authentication failed (401)"),
        ("codex", 401, "provider: authentication failed (401)"),
    ],
    ids=["claude-429", "claude-529", "codex-429", "claude-401", "codex-401"],
)
def test_persistent_provider_error_is_a_named_failure(
    agent: str, status: int, reason: str, box: Sandbox, repo: Path
) -> None:
    require_cli(agent)
    box.model.set_script([Fail(status), Reply("never reached")])
    run_id = box.launch(box.ticket(repo, "Do the task.", agent))
    s = box.wait_ended(run_id)
    assert any(e.served == f"fail {status}" for e in box.model.exchanges), "the server never failed a request"
    assert s["state"] == "failed", box.describe(run_id)
    assert (s["reason"] or "").startswith(reason), f"reason {s['reason']!r}, expected it to start with {reason!r}"
    # a failure within seconds is not silent: the watcher accounts for the ending and sends its notice
    wait_for(lambda: f"run {run_id} failed" in box.receiver.titles(), 30, "the failed notice")
    assert_no_page(box, run_id)


# ---- 3b. an agent that gives up -------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_an_answer_that_gives_up_ends_gave_up_with_its_words_and_a_notice(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    words = "I still cannot find why mc() is wrong; stopping here."
    box.model.set_script([Run("echo probing mc"), Reply(words)])
    run_id = box.launch(box.ticket(repo, "Fix mc() in calc.py.", agent, outputs=["calc.py"]))
    s = box.wait_ended(run_id)
    assert s["state"] == "gave_up", box.describe(run_id)
    assert words in (s["reason"] or ""), s["reason"]
    wait_for(lambda: f"run {run_id}: the agent gave up" in box.receiver.titles(), 30, "the gave_up notice")
    assert box.status_row(run_id)["state"] == "gave_up"


# ---- 5. a ticket body that looks like options ------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_dash_led_ticket_body_reaches_the_model_verbatim(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    body = "- item one\n- item two"
    box.model.set_script([Run("echo listed"), Reply("Both items done.")])
    run_id = box.launch(box.ticket(repo, body, agent))
    s = box.wait_ended(run_id)
    # it ran and answered, but changed no file: an exit 0 with nothing to show (runs/endings.py)
    assert s["state"] == "no_change" and s["agent_claim"]["ending"] == "succeeded", box.describe(run_id)
    assert body in user_texts(box.model), user_texts(box.model)
    assert any(t.output.strip().endswith("listed") for t in box.model.tool_outputs())


# ---- 6. kill ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_kill_mid_loop_leaves_no_agent_process(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    box.model.set_script(debug_loop_script(300, program=SLOW_FAILING))
    run_id = box.launch(box.ticket(repo, "Fix the failing debug script.", agent))
    wait_for(lambda: loop_outputs(box) >= 5, timeout=60, what="the agent to be mid-loop")
    s = box.state(run_id)
    assert s["state"] == "running", box.describe(run_id)
    tree = process_tree(s["agent_pid"]["pid"])
    assert tree, "the agent process is gone before the kill"

    k = box.cli("kill", run_id)
    assert k.returncode == 0, k.stderr
    wait_for(lambda: all(gone(p) for p in tree), timeout=15, what="every agent process to die")
    clone = str(box.run_dir(run_id) / "clone")

    def in_clone(p: psutil.Process) -> bool:
        try:
            return p.cwd().startswith(clone)
        except psutil.Error:
            return False

    left = [describe_process(p) for p in psutil.process_iter() if in_clone(p)]
    assert left == [], f"processes still in the clone after kill: {left}"

    s = box.state(run_id)
    assert s["state"] == "killed" and s["reason"] == "stopped by a person" and s["ended_at"], s
    assert "killed" in (box.run_dir(run_id) / "case.yaml").read_text()
    served = len(box.model.turn_requests())
    time.sleep(1.0)
    assert len(box.model.turn_requests()) == served, "the model still gets requests after the kill"
    assert loop_outputs(box) < 300


# ---- 7. a Claude profile without permission flags -------------------------------------------------


def test_default_deny_claude_profile_ends_tools_denied(box: Sandbox, repo: Path) -> None:
    require_cli("claude")
    plain = {
        "claude-plain": {
            "command": ["claude", "-p", "--output-format", "stream-json", "--verbose", "--"],
            "format": "claude-stream-json",
        }
    }
    box.write_config(agents=plain)
    box.model.set_script(
        [
            WriteFile("denied.txt", "d\n"),
            Run("touch made.txt"),
            Run("python3 -c \"open('p.txt','w').write('x')\""),
            Reply("I could not write anything."),
        ]
    )
    run_id = box.launch(box.ticket(repo, "Create the files.", "claude-plain"))
    s = box.wait_ended(run_id)
    clone = box.run_dir(run_id) / "clone"
    assert not any((clone / f).exists() for f in ("denied.txt", "made.txt", "p.txt")), "a denied write happened"
    assert sum(t.is_error for t in box.model.tool_outputs()) == 3, box.model.tool_outputs()
    assert s["state"] == "failed", box.describe(run_id)
    assert (s["reason"] or "").startswith("tools denied:"), f"reason {s['reason']!r}"
