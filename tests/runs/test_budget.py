"""Spend ceilings (issue 13): a run's max_usd / max_tokens, the 70 % notice, the over_budget ending,
and the fleet's daily ceiling that holds the queue. Real runs of the fake agent printing Claude
stream-json usage lines (priced by the ledger's prices), a real watcher, a real HTTP receiver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.record.model import Ceilings, RunRecord, SpendTotals
from orchestrator.runs import budget
from orchestrator.runs.events import Event, Kind
from tests.helpers import FAKE_AGENT, Receiver, claude_usage, cli, launch, start_watcher, state, ticket, wait

MODEL = "claude-sonnet-4-5-20250929"  # $3 / $15 per million tokens in / out


def spender(messages: int, pause: float = 0.25) -> str:
    """A fake-agent script: one assistant line with usage per step; each costs $0.045 (10k in, 1k out)."""
    steps = []
    for i in range(messages):
        steps += [f"say {json.dumps(claude_usage(f'm{i}', MODEL, 10_000, 1_000))}", f"sleep {pause}"]
    return "\n".join(steps)


def config(home: Path, receiver: Receiver, **keys: Any) -> None:
    cfg: dict[str, Any] = {
        "agents": {
            "fake": {"command": [sys.executable, str(FAKE_AGENT)], "format": "claude-stream-json"},
        },
        "notify": {"urls": [receiver.url]},
    }
    cfg.update(keys)
    (home / "config.yaml").write_text(json.dumps(cfg))


@pytest.fixture
def watcher() -> Any:
    w = start_watcher(0.2)
    yield w
    w.terminate()
    w.wait(timeout=20)


@pytest.fixture
def cfg_home(tmp_path: Path) -> Path:
    h = tmp_path / "orchestrator-home"
    h.mkdir(parents=True, exist_ok=True)
    return h


def test_shares_and_the_stop_are_pure_facts_of_the_record() -> None:
    r = RunRecord(ceilings=Ceilings(max_usd=1.0, max_tokens=10_000))
    assert budget.check(r, SpendTotals(tokens=5_000, cost_usd=0.2)) == ([], None)
    events, stop = budget.check(r, SpendTotals(tokens=7_500, cost_usd=0.2))
    assert (
        events == [Event(Kind.BUDGET, "budget 75%: 7500 of 10000 tokens")]
        and stop is None
        and r.ceilings.warned_at == 0.75
    )
    events, stop = budget.check(r, SpendTotals(tokens=8_000, cost_usd=1.01))
    assert events == [] and stop is not None and stop.end_as == "over_budget"
    assert stop.reason == "spend ceiling reached: $1.01 of $1.00 (101%)"
    unpriced = RunRecord(ceilings=Ceilings(max_usd=1.0))
    events, stop = budget.check(unpriced, SpendTotals(tokens=10**9, cost_usd=None))
    assert stop is None and unpriced.ceilings.unpriced and "not enforced" in events[0].text


def test_a_run_is_noticed_at_70_percent_and_stopped_at_its_ceiling(
    tmp_path: Path, repo: Path, cfg_home: Path, receiver: Receiver, watcher: Any
) -> None:
    config(cfg_home, receiver)
    run_id = launch(ticket(tmp_path, repo, spender(40), max_usd=0.2))
    wait(lambda: state(cfg_home, run_id)["state"] == "over_budget", timeout=40, what="the ceiling's stop")
    s = state(cfg_home, run_id)
    # checked each watcher tick: it may overshoot by what one tick spends, never stop early
    spent = float(s["reason"].split("$", 1)[1].split(" ", 1)[0])
    assert s["reason"].startswith("spend ceiling reached: $") and "of $0.20" in s["reason"] and spent >= 0.2
    assert s["ceilings"]["warned_at"] >= 0.7
    wait(lambda: "run " + run_id + " stopped at its spend ceiling" in receiver.titles(), timeout=20, what="ending")
    assert any(t.startswith(f"run {run_id}: ") and "of its spend ceiling" in t for t in receiver.titles())
    row = next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == run_id)
    assert row["max_usd"] == 0.2 and row["state"] == "over_budget"
    assert "/$0.2" in cli("status").stdout
    # its own ending in the ledger
    q = "SELECT state, count(*) AS n FROM endings GROUP BY state"
    assert json.loads(cli("history", "--sql", q, "--json").stdout)["rows"] == [{"state": "over_budget", "n": 1}]


def test_a_token_ceiling_from_the_profile_applies_to_its_runs(
    tmp_path: Path, repo: Path, cfg_home: Path, receiver: Receiver, watcher: Any
) -> None:
    config(cfg_home, receiver)
    cfg = json.loads((cfg_home / "config.yaml").read_text())
    cfg["agents"]["fake"]["max_tokens"] = 50_000  # five messages of 11k
    (cfg_home / "config.yaml").write_text(json.dumps(cfg))
    run_id = launch(ticket(tmp_path, repo, spender(40)))
    wait(lambda: state(cfg_home, run_id)["state"] == "over_budget", timeout=40, what="the ceiling's stop")
    assert "of 50000 tokens" in state(cfg_home, run_id)["reason"]


def test_the_daily_ceiling_holds_the_queue_and_says_so(
    tmp_path: Path, repo: Path, cfg_home: Path, receiver: Receiver, watcher: Any
) -> None:
    config(cfg_home, receiver, max_parallel=1, daily_max_usd=0.1)
    first = launch(ticket(tmp_path, repo, spender(3, pause=0.1), name="a"))
    p = cli("launch", str(ticket(tmp_path, repo, spender(1), name="b")))
    second = p.stdout.split()[-1]
    wait(lambda: state(cfg_home, first)["state"] == "succeeded", timeout=30, what="the first run")
    wait(lambda: state(cfg_home, second).get("held") is not None, timeout=20, what="the hold")
    s = state(cfg_home, second)
    assert s["state"] == "queued" and "daily spend ceiling is reached ($0.14 of $0.10" in s["held"], s["held"]
    wait(lambda: any("held by the daily spend ceiling" in t for t in receiver.titles()), timeout=20, what="notice")
    assert "held: daily ceiling" in cli("status").stdout
    config(cfg_home, receiver, max_parallel=1, daily_max_usd=5.0)  # raised: the queue moves again
    wait(lambda: state(cfg_home, second)["state"] == "succeeded", timeout=30, what="the held run")
    assert state(cfg_home, second)["held"] is None


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ({"max_usd": 0}, "max_usd must be a positive number of dollars"),
        ({"max_usd": "lots"}, "max_usd must be a positive number of dollars"),
        ({"max_tokens": 1.5}, "max_tokens must be a positive whole number of tokens"),
    ],
)
def test_bad_ceilings_are_one_line_errors_with_the_line(
    tmp_path: Path, repo: Path, home: Path, front: dict[str, Any], needle: str
) -> None:
    t = ticket(tmp_path, repo, "sleep 0", **front)
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "launch", str(t)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and needle in p.stderr and f"{t}:" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    (home / "config.yaml").write_text("daily_max_usd: -3\n")
    p = cli("status")
    assert p.returncode == 2 and "config.yaml:1: daily_max_usd must be a positive number of dollars" in p.stderr


def test_no_usage_yet_is_not_an_unpriced_model() -> None:
    r = RunRecord(ceilings=Ceilings(max_usd=1.0))
    assert budget.check(r, SpendTotals(tokens=0, cost_usd=None)) == ([], None)  # a first pass before any usage
    assert not r.ceilings.unpriced
    events, _ = budget.check(r, SpendTotals(tokens=10, cost_usd=None, unpriced_models=["m-9"]))
    assert r.ceilings.unpriced and [str(e) for e in events] == ["budget: max_usd not enforced (the model is unpriced)"]
