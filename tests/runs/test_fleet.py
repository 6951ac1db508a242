"""The queue (issue 13): a cap on runs at once, a stagger, queued runs that survive the watcher.

Real runs of the real fake agent and of the built-in demo agent, real watchers (killed with
SIGKILL and restarted in the stress test), real run folders; the cap's decision is also tested
as the pure function it is (fleet.choose).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from orchestrator.config import UserConfig
from orchestrator.runs.fleet import Seat, choose, most_at_once, positions
from tests.helpers import CORPUS, cli, start_watcher, state, ticket, wait, watcher_beat

HEALTHY_DEMO = CORPUS / "healthy-001-steady-feature"


def seats(*specs: tuple[str, str, str | None, float, float | None]) -> list[Seat]:
    return [Seat(*s) for s in specs]


def test_choose_fills_free_slots_first_come_first_served() -> None:
    cfg = UserConfig(path=Path("c"), max_parallel=2)
    s = seats(
        ("a", "running", "r1", 0, 1),
        ("q2", "queued", "r1", 20, None),
        ("q1", "queued", "r2", 10, None),
        ("q3", "queued", "r1", 30, None),
    )
    assert choose(s, cfg, now=100) == ["q1"]
    assert positions(s) == {"q1": 1, "q2": 2, "q3": 3}
    cfg.max_parallel = None
    assert choose(s, cfg, now=100) == ["q1", "q2", "q3"]  # no cap: everything starts


def test_choose_keeps_each_repo_under_its_own_cap_and_staggers_starts() -> None:
    cfg = UserConfig(path=Path("c"), max_parallel=4, max_parallel_per_repo=1)
    s = seats(("a", "running", "r1", 0, 50), ("q1", "queued", "r1", 10, None), ("q2", "queued", "r2", 20, None))
    assert choose(s, cfg, now=100) == ["q2"]  # r1 is full; r2's run may start
    cfg.stagger_s = 60
    assert choose(s, cfg, now=100) == []  # the last start was 50 s ago
    cfg.max_parallel_per_repo = None
    assert choose(s, cfg, now=111) == ["q1"]  # one start per stagger period


def test_the_per_repo_cap_sees_one_repo_through_its_spellings() -> None:
    cfg = UserConfig(path=Path("c"), max_parallel=9, max_parallel_per_repo=1)
    for running, queued in [
        ("/src/app", "file:///src/app"),
        ("/src/app/", "/src/./app"),
        ("https://GitHub.com/o/app.git", "git@github.com:o/app"),
        ("ssh://git@github.com:22/o/app", "https://github.com/o/app/"),
    ]:
        s = seats(("a", "running", running, 0, 1), ("q", "queued", queued, 10, None))
        assert choose(s, cfg, now=100) == [], (running, queued)
    others = [("/src/app", "/src/app.git"), ("https://h/o/app", "https://h/o/app2"), ("/a/r", "/b/r")]
    for running, queued in [*others, ("ssh://[::1]/a", "ssh://[::2]/a")]:
        s = seats(("a", "running", running, 0, 1), ("q", "queued", queued, 10, None))
        assert choose(s, cfg, now=100) == ["q"], (running, queued)


def _config(home: Path, **keys: Any) -> None:
    cfg = json.loads((home / "config.yaml").read_text())
    cfg.update(keys)
    (home / "config.yaml").write_text(json.dumps(cfg))


def test_tickets_past_the_cap_wait_in_the_queue_and_start_as_slots_free(tmp_path: Path, repo: Path, home: Path) -> None:
    _config(home, max_parallel=2)
    paths = [str(ticket(tmp_path, repo, "sleep 4", name=f"q{i}")) for i in range(5)]  # outlasts a loaded launch+status
    p = cli("launch", *paths, "--json")
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)["runs"]
    assert [r["state"] for r in runs].count("queued") == 3, runs
    rows = {r["id"]: r for r in json.loads(cli("status", "--json").stdout)["runs"]}
    queued = sorted((r["queue_position"], r["id"]) for r in rows.values() if r["state"] == "queued")
    assert [q for q, _ in queued] == [1, 2, 3]
    assert "queued" in cli("status").stdout
    watcher = start_watcher(0.2)
    try:
        ids = [r["run_id"] for r in runs]
        wait(lambda: all(state(home, i)["state"] == "succeeded" for i in ids), timeout=60, what="all five runs")
    finally:
        watcher.terminate()
        watcher.wait(timeout=20)
    records = [state(home, i) for i in ids]
    assert most_at_once(records) <= 2
    assert sum(r["admitted_by"] == "queue" for r in records) == 3


def test_kill_cancels_a_queued_run_and_nudge_refuses_it(tmp_path: Path, repo: Path, home: Path) -> None:
    _config(home, max_parallel=1)
    first = json.loads(cli("launch", str(ticket(tmp_path, repo, "sleep 30", name="a")), "--json").stdout)["run_id"]
    p = cli("launch", str(ticket(tmp_path, repo, "sleep 30", name="b")))
    assert p.returncode == 0 and "queued" in p.stderr
    second = p.stdout.strip().splitlines()[-1]
    assert state(home, second)["state"] == "queued"
    n = cli("nudge", second, "hi")
    assert n.returncode == 2 and "still queued" in n.stderr
    k = cli("kill", second)
    assert k.returncode == 0, k.stderr
    s = state(home, second)
    assert s["state"] == "killed" and "while queued" in s["reason"] and s["spawned_at"] is None
    assert not (home / "runs" / second / "clone").exists()
    assert cli("kill", first).returncode == 0


def test_bad_queue_settings_are_one_line_errors_with_the_line(tmp_path: Path, repo: Path, home: Path) -> None:
    agents = json.dumps(json.loads((home / "config.yaml").read_text())["agents"])
    for key, value, needle in (
        ("max_parallel", 0, "max_parallel must be a whole number of runs, at least 1"),
        ("max_parallel_per_repo", 1.5, "max_parallel_per_repo must be a whole number of runs, at least 1"),
        ("stagger_seconds", -1, "stagger_seconds must be a non-negative number"),
    ):
        (home / "config.yaml").write_text(f"{key}: {value}\nagents: {agents}\n")
        p = cli("launch", str(ticket(tmp_path, repo, "sleep 0")))
        assert p.returncode == 2 and f"config.yaml:1: {needle}" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_launch_all_takes_every_ticket_in_tickets_dir(tmp_path: Path, repo: Path, home: Path) -> None:
    folder = tmp_path / "tickets"
    folder.mkdir()
    for i in range(3):
        ticket(folder, repo, "sleep 0", name=f"all{i}")
    p = cli("launch", "--all")
    assert p.returncode == 2 and "tickets_dir" in p.stderr
    _config(home, tickets_dir=str(folder))
    p = cli("launch", "--all")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.split()) == 3


def stress(
    tmp_path: Path,
    repo: Path,
    home: Path,
    *,
    tickets: int,
    cap: int,
    kill_every_s: float,
    timeout: float,
    speed: float = 300,
) -> dict[str, Any]:
    """`tickets` demo-agent runs through a cap of `cap`, the watcher SIGKILLed and restarted meanwhile."""
    _config(home, max_parallel=cap)
    paths = [
        str(
            ticket(
                tmp_path,
                repo,
                "re-enact",
                name=f"s{i:03d}",
                agent="demo",
                demo_case=str(HEALTHY_DEMO),
                speed=speed,
                bucket="medium",
            )
        )
        for i in range(tickets)
    ]
    p = cli("launch", *paths, "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    ids = [r["run_id"] for r in json.loads(p.stdout)["runs"]]
    stop = threading.Event()
    kills = [0]
    watchers: list[subprocess.Popen[bytes]] = [start_watcher(0.2)]

    def killer() -> None:
        while True:
            w = watchers[-1]
            # each watcher makes one pass before it is killed: on a loaded machine a fixed interval
            # alone could kill every watcher before it ever looked, and nothing would move
            looked = time.monotonic() + 120
            while not stop.is_set() and watcher_beat()[0] != w.pid and time.monotonic() < looked:
                time.sleep(0.05)
            if stop.wait(kill_every_s):
                return
            os.kill(w.pid, signal.SIGKILL)
            w.wait(timeout=20)
            kills[0] += 1
            watchers.append(start_watcher(0.2))

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        wait(
            lambda: all(state(home, i)["state"] not in ("queued", "launching", "running") for i in ids),
            timeout=timeout,
            what=f"all {tickets} runs to end",
        )
    finally:
        stop.set()
        t.join(timeout=30)
        for w in watchers:
            if w.poll() is None:
                w.terminate()
                w.wait(timeout=20)
    took = time.monotonic() - t0
    records = [state(home, i) for i in ids]
    lines = len((HEALTHY_DEMO / "events.jsonl").read_text().splitlines())
    return {"records": records, "kills": kills[0], "seconds": took, "lines": lines, "ids": ids}


def test_stress_every_ticket_runs_once_under_the_cap_while_the_watcher_is_killed(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    out = stress(tmp_path, repo, home, tickets=16, cap=4, kill_every_s=1.5, timeout=240)
    records = out["records"]
    assert out["kills"] >= 2
    assert [r["state"] for r in records] == ["succeeded"] * 16, [
        (r["run_id"], r["state"], r["reason"]) for r in records
    ]
    assert most_at_once(records) <= 4
    for r in records:  # exactly once: one supervisor, one whole re-enactment in its log
        events = (Path(os.environ["ORCHESTRATOR_HOME"]) / "runs" / r["run_id"] / "events.jsonl").read_text()
        assert len(events.splitlines()) == out["lines"], r["run_id"]


def test_a_start_interrupted_around_the_spawn_goes_back_to_the_queue_and_one_supervisor_wins() -> None:
    from orchestrator.infra.proc import ProcRef
    from orchestrator.record.model import RunRecord
    from orchestrator.runs.liveness import Facts, judge
    from orchestrator.runs.supervisor import _register

    def facts(**kw: Any) -> Facts:
        base: dict[str, Any] = dict(
            state="launching",
            supervisor_alive=False,
            agent_alive=False,
            launcher_alive=False,
            since_spawn_real_s=11.0,
            silent_s=0.0,
            elapsed_min=0.0,
            stuck_min=35.0,
            heartbeat_s=1800.0,
            bucket="small",
            from_queue=True,
        )
        base.update(kw)
        return Facts(**base)

    again = judge(facts())
    assert again is not None and again.end_as == "queued"
    assert judge(facts(since_spawn_real_s=5.0)) is None  # the supervisor may still be starting
    assert judge(facts(launcher_alive=True)) is None
    assert judge(facts(supervisor_registered=True)) is None  # a supervisor took it: never started twice
    assert judge(facts(from_queue=False)) is None  # its own `launch`: the old rule (lost after 60 s)
    first = ProcRef.of(os.getpid())  # a live process holds the run
    r = RunRecord(state="launching", supervisor=first)
    assert _register(ProcRef(first.pid + 1, 1.0))(r) is False and r.supervisor == first


def test_the_daily_ceiling_waits_for_a_just_ended_runs_spend_before_it_decides() -> None:
    cfg = UserConfig(path=Path("c"), max_parallel=4, daily_max_usd=1.0)
    now = time.time()
    ended_uncounted = Seat("a", "succeeded", "r", 0, now - 5, None, None, True)
    waiting = Seat("q", "queued", "r", 1, None)
    assert choose([ended_uncounted, waiting], cfg, now) == []  # its spend may be past the ceiling: wait a pass
    counted = Seat("a", "succeeded", "r", 0, now - 5, 0.4, None, False)
    assert choose([counted, waiting], cfg, now) == ["q"]
    spent = Seat("a", "succeeded", "r", 0, now - 5, 1.2, None, False)
    assert choose([spent, waiting], cfg, now) == []
    cfg.daily_max_usd = None
    assert choose([ended_uncounted, waiting], cfg, now) == ["q"]  # no ceiling: nothing to wait for


def test_a_run_started_again_from_the_queue_drops_the_reason_it_was_requeued_for(tmp_path: Path, repo: Path) -> None:
    from orchestrator.record import state_file
    from orchestrator.record.layout import RunDir
    from orchestrator.record.model import RunRecord
    from orchestrator.runs.launch import _prepare

    rd = RunDir(tmp_path / "rq-1")
    rd.path.mkdir()
    why = "its start was interrupted before the agent started; queued again"
    record = RunRecord(run_id="rq-1", state="launching", repo=str(repo), admission=2, requeued=1, reason=why)
    state_file.write(rd, record)
    started = _prepare(rd, record, 2)
    assert started.spawned_at is not None and started.reason is None and started.requeued == 1
