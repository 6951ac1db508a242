"""`nudge` end to end with the real CLIs: guidance reaches Claude Code and Codex through the hooks the
built-in `claude` / `codex` profiles install (orchestrator/guidance/wiring.py), lands in the very
next model request, and the run's record says what the agent did with it.

The scripted server (tests/scripted_model.py) plays the agent: a slow failing debug loop that trips
the detector in the soft band (the ticket's tiny bucket: 1.8 s in, as in tests/agents/test_real_agents.py),
and, when the guidance text reaches it (`after_text`), either an agent that recovers (distinct files,
a passing command, an answer) or nothing changes (the loop goes on: the agent that ignores it).
The watcher is the one `launch` starts (config.yaml `watcher_tick_seconds: 0.5`); every wait is
bounded (90 s at most). Skipped, with the reason, where node or the pinned CLIs are missing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.real_agents import Sandbox, require_cli, sandbox, wait_for
from tests.scripted_model import Reply, Run, Step, WriteFile, debug_loop_script

pytestmark = pytest.mark.real_agents

AGENTS = ["claude", "codex"]
VIA = {"claude": "claude hook", "codex": "codex hook"}
# the failing debug script, slow enough that the loop lasts well past the page and the nudge
SLOW_FAILING = "import sys, time\ntime.sleep(0.2)\nprint('debug: still failing')\nsys.exit(1)\n"
ANSWER_MIN = 0.05  # config.yaml guidance_answer_minutes: 3 s for the signals at receipt to stop
FIRST_RUNG_MIN = 0.25  # 15 s after the page: time for a person's nudge to land first
RUNG_MIN = 0.05  # each rung of the ladder: 3 s of evidence after the previous one reached the agent
WAIT_S = 60.0  # any one wait below (all <= 90 s)


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    with sandbox(tmp_path, guidance_answer_minutes=ANSWER_MIN) as b:
        yield b


def marker(what: str) -> str:
    """A text no request carries unless the guidance put it there."""
    return f"{what}-{uuid.uuid4().hex[:12]}"


CHECK = "import sys, time\nsys.path.insert(0, 'src')\nimport fixed\nassert fixed.answer() == 42\ntime.sleep(2.5)\nprint('{out}')\n"


def recovering_steps() -> list[Step]:
    """What the agent does once told: remove the debug script, write distinct real files, run two
    different checks that pass (2.5 s each: the answer window, 3 s, closes while it still works), answer."""
    return [
        Run("rm tmp_debug.py"),
        WriteFile("src/fixed.py", "def answer():\n    return 42\n"),
        WriteFile("check_fixed.py", CHECK.format(out="check passed")),
        Run("python3 check_fixed.py"),
        WriteFile("check_again.py", CHECK.format(out="second check passed")),
        Run("python3 check_again.py"),
        Reply("Fixed: src/fixed.py, checked twice."),
    ]


def again_pages(box: Sandbox, run_id: str) -> int:
    return sum(1 for t in box.receiver.titles() if t.startswith(f"run {run_id} may be spiraling again"))


def escalation_titles(box: Sandbox, run_id: str) -> list[str]:
    return [t for t in box.receiver.titles() if t.startswith(f"run {run_id}: escalation ")]


def wait_paged(box: Sandbox, run_id: str) -> None:
    """The spiral page, while the run is still running (the loop goes on)."""
    wait_for(
        lambda: box.spiral_pages(run_id) >= 1 or box.state(run_id)["state"] not in ("launching", "running"),
        timeout=WAIT_S,
        what="the spiral page",
    )
    assert box.spiral_pages(run_id) == 1, (box.receiver.titles(), box.describe(run_id))
    assert box.state(run_id)["state"] == "running", f"the run ended before the nudge: {box.describe(run_id)}"


def nudge(box: Sandbox, run_id: str, *args: str) -> float:
    """`nudge RUN ARGS`; the time it was queued."""
    queued = time.time()
    p = box.cli("nudge", run_id, *args)
    assert p.returncode == 0, f"nudge exited {p.returncode}: {p.stderr.strip()}"
    assert "queued for" in p.stdout, p.stdout
    return queued


def guidance(box: Sandbox, run_id: str, gid: str = "g1") -> dict[str, Any]:
    return next(g for g in box.state(run_id).get("guidance", []) if g["id"] == gid)


def wait_received(box: Sandbox, run_id: str, gid: str = "g1") -> dict[str, Any]:
    """The receipt, with its `via`: a pass that looked between the hook's claim and its receipt file
    records the claim first and fills in `via` on a later pass (track.LATE_RECEIPT_S)."""

    def whole() -> bool:
        g = guidance(box, run_id, gid)
        return g["received_at"] is not None and g["received_via"] is not None

    wait_for(whole, WAIT_S, f"{gid}'s receipt and its via")
    return guidance(box, run_id, gid)


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def assert_received_by_hook(box: Sandbox, agent: str, g: dict[str, Any], text: str, sent: float) -> None:
    """The record's receipt names the hook, and the text was in the first model request after it."""
    assert g["via"] == VIA[agent], g
    assert g["received_via"].startswith(f"{agent} ") and " hook after " in g["received_via"], g
    queued = epoch(g["queued_at"])  # when `nudge` put it in the inbox (`sent`: when the command started)
    assert sent - 1 <= queued <= g["received_epoch"], g
    # the hook writes its receipt, then exits, then the agent sends the request it fed: a watcher pass
    # can record the receipt first, so that request may still be on its way
    deadline = time.monotonic() + 10
    while (first := box.model.first_request_containing(text)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first is not None, f"the guidance text never reached the model: {[e.served for e in box.model.exchanges]}"
    # the hook claims the message after a tool call; the request it answers into is the next one
    after = [e for e in box.model.turn_requests() if e.at >= g["received_epoch"]]
    assert after and after[0].seq == first.seq, (
        f"first request after the receipt: #{after[0].seq if after else None}, first with the text: #{first.seq}"
    )
    # ... and at most one request went out without it after it was queued: the one after a tool call
    # whose hook had just looked at the empty inbox
    missed = [e for e in box.model.turn_requests() if queued <= e.at < first.at]
    assert len(missed) <= 1, [e.served for e in missed]
    assert first.at - queued < 10, f"the text reached the model {first.at - queued:.1f} s after the nudge"


# ---- a. the agent that recovers -------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_nudge_reaches_the_next_request_and_the_agent_recovers(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    text = marker("Stop rerunning tmp_debug.py; write src/fixed.py and check it. GUIDANCE")
    box.model.set_script(debug_loop_script(150, program=SLOW_FAILING), after_text={text: recovering_steps()})
    run_id = box.launch(box.ticket(repo, "Fix the failing debug script.", agent))
    wait_paged(box, run_id)

    queued = nudge(box, run_id, text)
    g = wait_received(box, run_id)
    assert_received_by_hook(box, agent, g, text, queued)
    assert box.model.switched_at(text) is not None

    answered_while: str | None = None  # the run's state when the answer was first seen
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        st = box.state(run_id)
        if answered_while is None and st["guidance"][0]["answer"] is not None:
            answered_while = st["state"]
        if st["state"] not in ("launching", "running"):
            break
        time.sleep(0.1)
    s = box.wait_ended(run_id, timeout=5)
    assert s["state"] == "succeeded" and s["reason"] == "agent exited 0", box.describe(run_id)
    clone = box.run_dir(run_id) / "clone"
    assert (clone / "src" / "fixed.py").exists() and not (clone / "tmp_debug.py").exists()
    outputs = [t.output for t in box.model.tool_outputs()]
    assert any("second check passed" in o for o in outputs), outputs[-3:]
    assert answered_while == "running", f"the answer came when the run was {answered_while}"  # not at its end
    box.settle()
    g = guidance(box, run_id)
    assert g["answer"] == "recovered", g
    assert g["signals_at_receipt"], g  # it was sent while the spiral's signals fired
    assert box.spiral_pages(run_id) == 1 and again_pages(box, run_id) == 0, box.receiver.titles()
    st = box.state(run_id)
    assert st["spiral"]["episode"] == 2 and not any(e.get("tripped_at_min") for e in st["spiral"]["episodes"]), st[
        "spiral"
    ]
    assert not st["ladder"]["climbed"], st["ladder"]
    row = box.status_row(run_id)
    assert row["guidance_via"] == VIA[agent] and row["episode"] == 2, row
    assert [x["answer"] for x in row["guidance"]] == ["recovered"], row["guidance"]


# ---- b. the agent that ignores it, the ladder on -------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_ignored_nudge_climbs_the_ladder_to_a_stop(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    text = marker("Please stop rerunning the debug script. PERSON")
    rung1 = marker("Ladder rung one: step back and try a different approach. RUNG")
    ladder = [
        # rung 1 waits longer: the person's `nudge`, slow on a loaded machine, is queued before it
        {"do": "nudge", "after_minutes": FIRST_RUNG_MIN, "text": rung1},
        {"do": "redirect", "after_minutes": RUNG_MIN},  # the stock wording
        {"do": "stop", "after_minutes": RUNG_MIN},
    ]
    box.model.set_script(debug_loop_script(400, program=SLOW_FAILING, final=None))
    run_id = box.launch(box.ticket(repo, "Fix the failing debug script.", agent, escalation=ladder))
    wait_paged(box, run_id)
    queued = nudge(box, run_id, text)
    assert_received_by_hook(box, agent, wait_received(box, run_id), text, queued)

    s = box.wait_ended(run_id, timeout=75)
    assert s["state"] == "stalled", box.describe(run_id)
    assert s["reason"].startswith("escalation ladder rung 3 (stop)"), s["reason"]
    steps = s["ladder"]["climbed"]
    assert [(e["rung"], e["action"]) for e in steps] == [(1, "nudge"), (2, "redirect"), (3, "stop")], steps
    assert all(e["why"] and e["signals"] for e in steps), steps
    assert [e["at_min"] for e in steps] == sorted(e["at_min"] for e in steps), steps
    by_id = {g["id"]: g for g in s["guidance"]}
    assert [g["by"] for g in s["guidance"]] == ["person", "escalation", "escalation"], s["guidance"]
    for e in steps[:2]:  # each text rung was queued, and reached the agent through the hook
        g = by_id[e["guidance_id"]]
        assert g["received_at"] is not None and g["received_via"].startswith(f"{agent} "), g
    person, first_rung = box.model.first_request_containing(text), box.model.first_request_containing(rung1)
    assert first_rung is not None, "rung 1's text never reached the model"
    # (on a loaded machine rung 1 may climb before the agent's next turn: both then reach it together)
    assert person is not None and person.seq <= first_rung.seq
    assert box.model.first_request_containing("You may be going in circles.") is not None, "rung 2's stock text"
    wait_for(lambda: len(escalation_titles(box, run_id)) == 3, 15, "three escalation notices")
    titles = escalation_titles(box, run_id)
    assert titles == [f"run {run_id}: escalation {n} ({a})" for n, a in ((1, "nudge"), (2, "redirect"), (3, "stop"))]
    wait_for(
        lambda: all(box.state(run_id)["notices"].get(f"escalation-{n}", {}).get("delivered") for n in (1, 2, 3)),
        10,
        "the escalation notices recorded as delivered",
    )
    assert box.status_row(run_id)["escalations"] == steps


# ---- c. the agent that ignores it, no ladder ------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_ignored_nudge_without_a_ladder_never_acts(agent: str, box: Sandbox, repo: Path) -> None:
    require_cli(agent)
    text = marker("Please stop rerunning the debug script. PERSON")
    loops = 45
    box.model.set_script(debug_loop_script(loops, program=SLOW_FAILING))
    run_id = box.launch(box.ticket(repo, "Fix the failing debug script.", agent))
    wait_paged(box, run_id)
    queued = nudge(box, run_id, text)
    assert_received_by_hook(box, agent, wait_received(box, run_id), text, queued)

    s = box.wait_ended(run_id)
    # never stopped: it ran to its own end, whose answer gave up (runs/endings.py)
    assert s["state"] == "gave_up" and s["agent_claim"]["reason"] == "agent exited 0", box.describe(run_id)
    assert sum("debug: still failing" in t.output for t in box.model.tool_outputs()) == loops
    wait_for(lambda: guidance(box, run_id)["answer"] is not None, 10, "the guidance's answer")
    box.settle()
    s = box.state(run_id)
    assert not s["ladder"]["climbed"] and not s["ladder"]["rungs"], s["ladder"]
    assert escalation_titles(box, run_id) == [], box.receiver.titles()
    assert [g["by"] for g in s["guidance"]] == ["person"], s["guidance"]  # nothing was sent on its own
    assert s["guidance"][0]["answer"] == "ignored", s["guidance"][0]
    # the product pages again, once, for what the agent did after the nudge: that is all it does
    assert box.spiral_pages(run_id) == 1 and again_pages(box, run_id) == 1, box.receiver.titles()
    episodes = s["spiral"]["episodes"]
    assert [e["n"] for e in episodes] == [2] and episodes[0]["tripped_at_min"] is not None, episodes
