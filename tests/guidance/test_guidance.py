"""Guidance (issue 12): the inbox protocol, the hook, the wiring of the CLIs, the ladder, and
`nudge` end to end with a real generic agent (tests/fake_agent.py reads its inbox like any
agent following the documented protocol), a real watcher and a real HTTP receiver.

The real Claude Code and Codex CLIs are driven through the same path in tests/agents/test_real_guidance.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from orchestrator.guidance import hook, inbox, ladder, wiring
from orchestrator.record.model import Escalation, Guidance
from orchestrator.runs.events import Event, Kind
from tests.helpers import (
    CORPUS,
    TINY,
    Receiver,
    bash,
    cli,
    detector,
    launch,
    script_runs,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    write_config,
)

LOOP = json.dumps({"tool": "Bash", "command": "python tmp_loop.py"})


def spiral_then(recover: bool, n: int = 1500, watch: str | None = "recover") -> str:
    """A fake-agent script: loop on a debris script; with `watch`, read the inbox after each call and,
    once guidance arrives, go on from `label recover` (varied real work) when `recover`."""
    steps = ["write tmp_loop.py"]
    if watch is not None:
        steps.append(f"on-guidance {watch if recover else '-'}")
    steps += [f"say {LOOP}", "sleep 0.05"] * n
    steps.append("label recover")
    for i in range(30):
        steps += [f"say {json.dumps({'tool': 'Edit', 'path': f'src/m{i}.py'})}", f"write src/m{i}.py v{i}", "sleep 0.1"]
    return "\n".join(steps)


def config(home: Path, receiver: Receiver, **keys: Any) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    cfg = json.loads((home / "config.yaml").read_text())
    cfg.update(keys)
    (home / "config.yaml").write_text(json.dumps(cfg))


def tripped(home: Path, run_id: str) -> bool:
    return bool(state(home, run_id)["spiral"]["tripped_in_soft_band"])


@pytest.fixture
def watcher() -> Any:
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        p = start_watcher(0.2)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=20)


# ---- the inbox protocol -----------------------------------------------------------------------


def test_a_message_is_claimed_exactly_once_by_racing_readers(tmp_path: Path) -> None:
    gdir = tmp_path / "guidance"
    for seq in range(1, 41):
        inbox.queue(gdir, seq, f"g{seq}", f"text {seq}", "text", "2026-12-01T00:00:00Z")
    got: list[list[str]] = [[] for _ in range(4)]
    barrier = threading.Barrier(4)

    def reader(i: int) -> None:
        barrier.wait()
        got[i] = [m.id for m in inbox.claim_all(gdir, f"reader {i}")]

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    claimed = sorted(x for g in got for x in g)
    assert claimed == sorted(f"g{s}" for s in range(1, 41))  # every one once, none twice
    assert inbox.pending(gdir) == []
    receipts = inbox.claimed(gdir)
    assert len(receipts) == 40 and all(c.via and c.via.startswith("reader ") for c in receipts)


def test_a_claim_without_a_receipt_file_is_received_at_its_rename(tmp_path: Path) -> None:
    gdir = tmp_path / "guidance"
    inbox.queue(gdir, 1, "g1", "hello", "text", "")
    (gdir / "inbox" / "0001-g1.json").rename(gdir / "claimed" / "0001-g1.json")  # what any agent may do
    (c,) = inbox.claimed(gdir)
    assert c.message.text == "hello" and c.via is None and c.received_at > 0


def test_a_receipt_written_just_after_the_pass_took_the_claim_still_names_its_path(tmp_path: Path) -> None:
    """A reader renames first, then writes its receipt: a pass in between takes the claim at its rename
    (seen on a loaded machine, where the record kept no `received_via`); the next pass fills it in."""
    from orchestrator.buckets import BucketsFile
    from orchestrator.record.model import RunRecord
    from orchestrator.runs import evaluator
    from orchestrator.runs.steering import track
    from spiral.detector import Detector
    from spiral.timestamps import format_ts

    gdir = tmp_path / "guidance"
    msg = inbox.queue(gdir, 1, "g1", "stop looping", "text", "")
    started = 1_800_000_000.0
    record = RunRecord(run_id="r1", format="claude-stream-json", started_at=format_ts(started))
    record.guidance.append(Guidance(id="g1", seq=1, text="stop looping", queued_at_min=0.0))
    detector = Detector(BucketsFile().settings, bucket="small", started_at=started)
    cached = evaluator.fresh(detector, "claude-stream-json", str(tmp_path))
    (gdir / "inbox" / msg.name).rename(gdir / "claimed" / msg.name)  # the rename...
    renamed = (gdir / "claimed" / msg.name).stat().st_ctime
    assert track.receipts(gdir, record, cached, real_now=renamed + 1) == [
        Event(Kind.GUIDANCE_RECEIVED, "guidance g1 received")
    ]
    g = record.guidance[0]
    assert g.received_epoch == renamed and g.received_via is None
    via = "claude PostToolUseFailure hook after Bash"
    receipt = {"received_at": renamed + 0.001, "via": via}
    (gdir / "claimed" / (msg.name + inbox.RECEIPT)).write_text(json.dumps(receipt))  # ...then its receipt
    assert track.receipts(gdir, record, cached, real_now=renamed + 2) == [
        Event(Kind.GUIDANCE_RECEIPT, "guidance g1 receipt")
    ]
    assert g.received_via == via and g.received_epoch == renamed  # the moment the windows restarted stays
    assert track.receipts(gdir, record, cached, real_now=renamed + 3) == []  # once
    g.received_via = None  # a reader that writes no receipt: looked for a while, then not again
    assert track.receipts(gdir, record, cached, real_now=renamed + track.LATE_RECEIPT_S) == []


def test_the_hook_answers_with_the_queued_text_once_and_is_silent_otherwise(tmp_path: Path) -> None:
    gdir = tmp_path / "guidance"
    (gdir / "inbox").mkdir(parents=True)

    def run_hook(stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator.guidance.hook", str(gdir), "claude"],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        )

    quiet = run_hook('{"hook_event_name": "PostToolUse"}')
    assert quiet.returncode == 0 and quiet.stdout == ""
    inbox.queue(gdir, 1, "g1", "stop rerunning tmp_x.py", "text", "")
    event = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_1"}
    first = run_hook(json.dumps(event))
    out = json.loads(first.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUseFailure"
    assert out["additionalContext"].startswith(hook.PREFIX) and "stop rerunning tmp_x.py" in out["additionalContext"]
    (c,) = inbox.claimed(gdir)
    assert c.via == "claude PostToolUseFailure hook after Bash" and c.tool_use_id == "toolu_1"
    assert run_hook(json.dumps(event)).stdout == ""  # delivered once
    inbox.queue(gdir, 2, "g2", "again", "text", "")
    garbage = run_hook("not json at all")  # a CLI that sends nothing useful still gets the text
    assert garbage.returncode == 0 and "again" in garbage.stdout


def test_the_hook_never_fails_the_agents_call(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator.guidance.hook", str(tmp_path / "nowhere"), "codex"],
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 0 and p.stdout == ""


# ---- wiring the CLIs --------------------------------------------------------------------------


def test_claude_gets_its_hooks_on_the_argv_before_the_prompt(tmp_path: Path) -> None:
    argv = [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--",
    ]
    path = wiring.path_for(argv, None)
    assert path == wiring.CLAUDE_HOOK
    out, env = wiring.wire(argv, {"A": "1"}, path, tmp_path / "g")
    i = out.index("--settings")
    assert out[-1] == "--" and i < out.index("--")
    settings = json.loads(out[i + 1])
    for event in ("PostToolUse", "PostToolUseFailure"):
        (group,) = settings["hooks"][event]
        assert "orchestrator.guidance.hook" in group["hooks"][0]["command"]
    assert env == {"A": "1", inbox.ENV: str(tmp_path / "g")}


def test_codex_gets_its_hook_as_a_config_override() -> None:
    argv = ["/opt/bin/codex", "exec", "--json", "--"]
    path = wiring.path_for(argv, None)
    out, _ = wiring.wire(argv, {}, path, Path("/runs/r1/guidance"))
    assert path == wiring.CODEX_HOOK
    assert out[:3] == argv[:3] and out[-1] == "--"
    assert "--dangerously-bypass-hook-trust" in out and out[out.index("--enable") + 1] == "hooks"
    value = out[out.index("-c") + 1]
    assert value.startswith("hooks.PostToolUse=[{matcher=") and "orchestrator.guidance.hook" in value


def test_other_agents_get_the_inbox_and_none_refuses() -> None:
    assert wiring.path_for(["my-agent"], None) == wiring.INBOX_FILE
    assert wiring.path_for(["claude"], "inbox") == wiring.INBOX_FILE
    assert wiring.path_for(["claude"], "none") is None
    with pytest.raises(ValueError, match="needs a claude or codex command"):
        wiring.path_for(["my-agent"], "hook")


# ---- the ladder (pure) ------------------------------------------------------------------------


def test_ladder_parse_refuses_what_it_cannot_climb() -> None:
    assert ladder.parse(None) == [] and ladder.parse(False) == []
    rungs = ladder.parse([{"do": "nudge", "after_minutes": 3}, {"do": "stop", "after_minutes": 5}])
    assert [(r.action, r.after_min) for r in rungs] == [("nudge", 3.0), ("stop", 5.0)]
    bad = [
        ([], "must be a list of rungs"),
        ([{"do": "shout", "after_minutes": 1}], "do must be one of"),
        ([{"do": "nudge", "after_minutes": 0}], "after_minutes must be a positive number"),
        ([{"do": "nudge", "after_minutes": True}], "after_minutes must be a positive number"),
        ([{"do": "nudge", "after_minutes": 1, "when": 2}], "unknown key 'when'"),
        ([{"do": "stop", "after_minutes": 1}, {"do": "nudge", "after_minutes": 1}], "stop must be the last rung"),
        ([{"do": "stop", "after_minutes": 1, "text": "bye"}], "a stop rung sends no text"),
    ]
    for raw, message in bad:
        with pytest.raises(ladder.LadderError, match=message):
            ladder.parse(raw)


def test_ladder_climbs_only_on_evidence_that_goes_on_after_each_receipt() -> None:
    rungs = ladder.parse([{"do": "nudge", "after_minutes": 2}, {"do": "wrap-up", "after_minutes": 3}])

    def due(climbed: list[Escalation], guidance: list[Guidance], since: float | None, now: float) -> Any:
        return ladder.next_due(rungs, climbed, guidance, page_at_min=70.0, evidence_since_min=since, now_min=now)

    assert due([], [], 70.0, 71.9) is None  # not long enough after the page
    first = due([], [], 70.0, 72.0)
    assert first is not None and (first.rung, first.action) == (1, "nudge")
    assert due([], [], None, 80.0) is None  # the evidence stopped: nothing climbs
    step = Escalation(rung=1, action="nudge", at="", at_min=72.0, why="", guidance_id="g1")
    on_its_way = Guidance(id="g1", seq=1)
    assert due([step], [on_its_way], 70.0, 90.0) is None  # waits for the receipt
    got = Guidance(id="g1", seq=1, received_at="x", received_at_min=73.0)
    assert due([step], [got], 73.5, 76.4) is None  # 2.9 min of new evidence after the receipt
    second = due([step], [got], 73.5, 76.5)
    assert second is not None and (second.rung, second.action) == (2, "wrap-up")
    assert due([step, step], [got], 73.5, 99.0) is None  # the ladder's top


# ---- the detector restarts its windows at a receipt -------------------------------------------


def test_windows_restart_at_the_receipt_and_only_new_evidence_trips_again() -> None:
    det = detector()
    calls = script_runs("python tmp_debug.py", 30)
    det.add_calls(calls)
    end = calls[-1].ts
    assert det.evaluate(end + 1).tripped
    det.restart(end + 2)
    after = det.evaluate(end + 3)
    assert not {"repetition", "sustained_bash"} & set(after.signals)
    assert det.restarts == [(end + 2, 30)]
    det.restart(end + 2)  # the same receipt again (a rebuilt cache learns it twice): no second restart
    assert len(det.restarts) == 1
    for i in range(30):
        det.add_call(bash("python tmp_debug.py", ts=end + 10 + i))
    assert "repetition" in det.evaluate(end + 60).signals


# ---- nudge end to end (fake agent, real watcher, real receiver) -------------------------------


def _spiral_run(tmp_path: Path, repo: Path, home: Path, body: str, **front: Any) -> str:
    run_id = launch(ticket(tmp_path, repo, body, overrides=TINY, **front))
    wait(lambda: tripped(home, run_id), timeout=40, what="the page")
    return run_id


def test_guidance_reaches_an_agent_that_recovers_and_the_answer_is_recorded(
    tmp_path: Path, repo: Path, receiver: Receiver, watcher: Any
) -> None:
    home = Path(tmp_path / "orchestrator-home")
    home.mkdir(parents=True, exist_ok=True)
    config(home, receiver, guidance_answer_minutes=0.05)
    watcher()
    run_id = _spiral_run(tmp_path, repo, home, spiral_then(recover=True))
    wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=20, what="the spiral page")
    body = receiver.bodies()[0]["message"]
    assert f"./dev.sh nudge {run_id}" in body  # the page offers it beside logs and kill
    p = cli("nudge", run_id, "Stop running tmp_loop.py; write the module instead.")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"g1 queued for {run_id} (inbox file)")
    row = next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == run_id)
    assert row["guidance"][0]["id"] == "g1"
    wait(lambda: state(home, run_id)["guidance"][0]["received_at"] is not None, timeout=20, what="the receipt")
    wait(lambda: state(home, run_id)["state"] == "succeeded", timeout=60, what="the run's end")
    wait(lambda: state(home, run_id)["guidance"][0]["answer"] is not None, timeout=20, what="the answer")
    s = state(home, run_id)
    (g,) = s["guidance"]
    assert g["signals_at_receipt"] and g["answer"] == "recovered", g
    assert g["received_at_min"] >= g["queued_at_min"] and any("src/m" in c for c in g["first_calls_after"])
    assert s["spiral"]["episode"] == 2 and s["spiral"]["episodes"][0]["tripped_at_min"] is None
    assert spiral_pages(receiver, run_id) == 1
    assert not any("again" in t for t in receiver.titles())
    table = cli("status").stdout
    assert "g1 received" in table
    # the ledger can tell how often guidance works
    q = "SELECT run_id, kind, sent_by, via, answer FROM guidance"
    rows = json.loads(cli("history", "--sql", q, "--json").stdout)["rows"]
    assert rows == [{"run_id": run_id, "kind": "text", "sent_by": "person", "via": "inbox file", "answer": "recovered"}]


def test_an_ignoring_agent_climbs_the_ladder_when_it_is_on(
    tmp_path: Path, repo: Path, receiver: Receiver, watcher: Any
) -> None:
    home = Path(tmp_path / "orchestrator-home")
    home.mkdir(parents=True, exist_ok=True)
    config(home, receiver)
    watcher()
    ladder_on = [
        {"do": "nudge", "after_minutes": 0.02},
        {"do": "redirect", "after_minutes": 0.02},
        {"do": "stop", "after_minutes": 0.02},
    ]
    run_id = _spiral_run(tmp_path, repo, home, spiral_then(recover=False), escalation=ladder_on)
    wait(lambda: state(home, run_id)["state"] == "stalled", timeout=60, what="the stop rung")
    s = state(home, run_id)
    assert [e["action"] for e in s["ladder"]["climbed"]] == ["nudge", "redirect", "stop"]
    assert s["reason"].startswith("escalation ladder rung 3 (stop)")
    assert [(g["kind"], g["by"]) for g in s["guidance"]] == [("nudge", "escalation"), ("redirect", "escalation")]
    assert all(g["received_at"] is not None and g["answer"] == "ignored" for g in s["guidance"])
    wait(lambda: sum("escalation" in t for t in receiver.titles()) == 3, timeout=20, what="three rung notices")
    # each rung after the first counted from the previous rung's receipt, on evidence from after it
    assert s["ladder"]["climbed"][1]["at_min"] >= s["guidance"][0]["received_at_min"] + 0.02
    assert s["spiral"]["episode"] >= 2
    q = "SELECT rung, action, guidance_id FROM escalations ORDER BY rung"
    rows = json.loads(cli("history", "--sql", q, "--json").stdout)["rows"]
    assert [r["action"] for r in rows] == ["nudge", "redirect", "stop"] and rows[2]["guidance_id"] is None


def test_an_ignoring_agent_is_never_acted_on_when_the_ladder_is_off(
    tmp_path: Path, repo: Path, receiver: Receiver, watcher: Any
) -> None:
    home = Path(tmp_path / "orchestrator-home")
    home.mkdir(parents=True, exist_ok=True)
    config(home, receiver, guidance_answer_minutes=0.02)
    watcher()
    run_id = _spiral_run(tmp_path, repo, home, spiral_then(recover=False, n=300))
    assert cli("nudge", run_id, "--wrap-up").returncode == 0
    wait(lambda: state(home, run_id)["state"] != "running", timeout=60, what="the run's end")
    wait(lambda: state(home, run_id)["guidance"][0]["answer"] is not None, timeout=20, what="the answer")
    s = state(home, run_id)
    assert s["state"] == "succeeded" and s["ladder"]["climbed"] == []  # nothing acted on its own
    (g,) = s["guidance"]
    assert g["kind"] == "wrap-up" and "tmp_loop.py" in g["text"]  # the stock wording names the evidence
    assert g["answer"] == "ignored"
    # the windows restarted at the receipt: the loop kept going, so it paged again, once, as episode 2
    wait(lambda: any(t.endswith("again (episode 2)") for t in receiver.titles()), timeout=20, what="episode 2 page")
    assert sum(t.endswith("again (episode 2)") for t in receiver.titles()) == 1
    assert s["spiral"]["episodes"][0]["tripped_at_min"] is not None


def test_guidance_an_agent_never_reads_is_withdrawn_and_reported(
    tmp_path: Path, repo: Path, receiver: Receiver, watcher: Any
) -> None:
    home = Path(tmp_path / "orchestrator-home")
    home.mkdir(parents=True, exist_ok=True)
    config(home, receiver, guidance_deliver_minutes=0.02)
    watcher()
    run_id = _spiral_run(tmp_path, repo, home, spiral_then(recover=False, watch=None))
    assert cli("nudge", run_id, "are you there?").returncode == 0
    wait(lambda: state(home, run_id)["guidance"][0]["undelivered"] is not None, timeout=30, what="the bound")
    g = state(home, run_id)["guidance"][0]
    assert g["received_at"] is None and "not received within 0.02 min" in g["undelivered"]
    run_dir = home / "runs" / run_id
    assert not list((run_dir / "guidance" / "inbox").glob("*.json"))  # taken back: it cannot arrive late
    wait(lambda: any("guidance g1 undelivered" in t for t in receiver.titles()), timeout=20, what="the notice")
    assert "undelivered" in cli("status").stdout
    cli("kill", run_id)


def test_bad_nudges_are_one_line_errors_with_exit_2(tmp_path: Path, repo: Path, home: Path) -> None:
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["agents"]["mute"] = {**cfg["agents"]["fake"], "guidance": "none"}
    (home / "config.yaml").write_text(json.dumps(cfg))
    ended = launch(ticket(tmp_path, repo, f"say {LOOP}", name="done"))
    wait(lambda: state(home, ended)["state"] == "succeeded", what="the short run's end")
    mute = launch(ticket(tmp_path, repo, f"say {LOOP}\nsleep 30", name="mute", agent="mute"))
    live = launch(ticket(tmp_path, repo, f"say {LOOP}\nsleep 30", name="live"))
    note = tmp_path / "empty.txt"
    note.write_text("  \n")
    cases = [
        (["nudge", "nope", "hi"], "no run 'nope'"),
        (["nudge", ended, "hi"], "has ended (succeeded)"),
        (["nudge", live, ""], "the guidance text is empty"),
        (["nudge", live, "--file", str(note)], "the guidance text is empty"),
        (["nudge", live, "--file", str(tmp_path / "missing.txt")], "cannot read"),
        (["nudge", live], "exactly one of"),
        (["nudge", live, "hi", "--redirect"], "exactly one of"),
        (["nudge", live, "--redirect", "--wrap-up"], "choose one of"),
        (["nudge", mute, "hi"], "cannot take guidance"),
    ]
    try:
        for args, needle in cases:
            p = cli(*args)
            assert p.returncode == 2, (args, p.stdout, p.stderr)
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr, (args, p.stderr)
        ok = cli("nudge", live, "--redirect", "--json")
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout)["guidance"] == "g1"
    finally:
        for r in (mute, live):
            cli("kill", r)


def test_escalation_and_guidance_keys_are_checked_with_file_and_line(tmp_path: Path, repo: Path, home: Path) -> None:
    bad = ticket(tmp_path, repo, "say {}", escalation=[{"do": "nudge", "after_minutes": -1}])
    p = cli("launch", str(bad))
    assert p.returncode == 2 and f"{bad}:" in p.stderr and "after_minutes must be a positive number" in p.stderr
    line = int(p.stderr.split(f"{bad}:", 1)[1].split(":", 1)[0])
    assert "escalation" in bad.read_text().splitlines()[line - 1]
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["agents"]["fake"]["guidance"] = "hook"
    (home / "config.yaml").write_text(json.dumps(cfg))
    p = cli("status")
    assert p.returncode == 2 and "config.yaml" in p.stderr and "guidance: hook needs a claude or codex" in p.stderr
    cfg["agents"]["fake"]["guidance"] = "sometimes"
    (home / "config.yaml").write_text(json.dumps(cfg))
    p = cli("status")
    assert p.returncode == 2 and "guidance" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_the_demo_agent_reads_its_inbox(tmp_path: Path, repo: Path, home: Path) -> None:
    case = CORPUS / "spiral-001-fixture-shim"
    t = ticket(tmp_path, repo, "re-enact", agent="demo", demo_case=str(case), speed=200.0)
    run_id = launch(t)
    assert cli("nudge", run_id, "hello demo").returncode == 0
    wait(lambda: not list((home / "runs" / run_id / "guidance" / "inbox").glob("*.json")), timeout=30, what="claim")
    assert cli("status").returncode == 0  # a pass takes the receipt into the record
    (g,) = state(home, run_id)["guidance"]
    assert g["via"] == "inbox file" and g["received_at"] is not None and g["received_via"] == "demo agent, after a step"
    cli("kill", run_id)


def test_a_nudged_run_folder_replays_with_its_restarts(tmp_path: Path) -> None:
    from orchestrator.buckets import BucketsFile
    from orchestrator.corpus.replay import replay_case
    from orchestrator.record.case import load_case

    case = tmp_path / "case"
    import shutil

    shutil.copytree(CORPUS / "spiral-001-fixture-shim", case)
    before = replay_case(case, BucketsFile())
    assert before.notified_at_min is not None
    text = (case / "case.yaml").read_text()
    started = load_case(case).started_at
    from spiral.timestamps import format_ts

    # guidance received every minute from the start: the windows never fill, nothing can repeat 20 times in one
    times = ", ".join(f'"{format_ts(started + 60 * m)}"' for m in range(1, 200))
    (case / "case.yaml").write_text(text + f"guidance_received: [{times}]\n")
    assert load_case(case).guidance_received[0] == started + 60
    after = replay_case(case, BucketsFile())
    assert after.notified_at_min is None  # no window ever fills: the page the case makes without them is gone
    (case / "case.yaml").write_text(text + "guidance_received: [yesterday]\n")
    p = cli("replay", str(case))
    assert p.returncode == 2 and "guidance_received" in p.stderr and "case.yaml:" in p.stderr


def test_a_run_that_ends_right_after_the_receipt_is_answered_on_what_it_did_after(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    steps = ["write tmp_loop.py", "on-guidance recover"] + [f"say {LOOP}", "sleep 0.03"] * 60
    steps += ["await-guidance 120", "label recover"]  # between turns: the guidance is queued meanwhile
    # three edits and the end; the first edit's boundary is where the agent claims the message
    steps += [f"say {json.dumps({'tool': 'Edit', 'path': f'src/e{i}.py'})}\nwrite src/e{i}.py v{i}" for i in range(3)]
    run_id = launch(ticket(tmp_path, repo, "\n".join(steps)))
    wait(lambda: (home / "runs" / run_id / "events.jsonl").read_text().count("tmp_loop") >= 60, what="the loop")
    assert cli("status").returncode == 0  # one pass: the verdict at the receipt is the loop's
    assert cli("nudge", run_id, "stop looping").returncode == 0
    # no watcher: nothing looks at the run until it has ended
    wait(lambda: state(home, run_id)["state"] == "succeeded", timeout=40, what="the run's end")
    assert cli("status").returncode == 0
    (g,) = state(home, run_id)["guidance"]
    assert g["received_at"] is not None and g["signals_at_receipt"], g
    assert g["answer"] == "recovered", g
    assert [c for c in g["first_calls_after"] if c.startswith("Edit src/e")], g["first_calls_after"]
    case = (home / "runs" / run_id / "case.yaml").read_text()
    assert "guidance_received:" in case  # the case file learnt its restart: it replays as it was judged


def test_a_recovered_answer_is_revised_when_the_agent_trips_again_later() -> None:
    from orchestrator.guidance.policy import Policy
    from orchestrator.record.model import Episode, RunRecord, SpiralState
    from orchestrator.runs.steering.track import _answer
    from spiral.verdict import Verdict

    quiet = Verdict(elapsed_min=16.0, expected_min=20.0, region="soft", findings=(), suspicion=0, threshold=2)
    g = Guidance(id="g1", seq=1, received_at="x", received_at_min=10.0, signals_at_receipt=["repetition"])
    r = RunRecord(guidance=[g], spiral=SpiralState(episode=2, episodes=[Episode(n=2, since_min=10.0)]))
    assert _answer(r, 0, quiet, 16.0, Policy(answer_min=5)) == "recovered"
    g.answer = "recovered"
    assert _answer(r, 0, quiet, 17.0, Policy(answer_min=5)) is None  # stays, while nothing new tripped
    r.spiral.episodes[0].tripped_at_min = 21.0  # the loop came back: it paged on what it did after g1
    assert _answer(r, 0, quiet, 22.0, Policy(answer_min=5)) == "ignored"
