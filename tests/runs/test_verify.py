"""The ticket's `verify:` check: the orchestrator, not the agent, decides that a run succeeded.

Real git repositories, the real fake agent (tests/fake_agent.py), real supervisors and checks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from rich.console import Console

from tests.helpers import cli, launch, one_line_error, state, status_json, ticket, wait

ENDED = ("succeeded", "failed", "stalled", "killed", "lost")
PY = sys.executable


def _ended(home: Path, run_id: str, timeout: float = 60) -> dict[str, Any]:
    wait(lambda: state(home, run_id)["state"] in ENDED, timeout=timeout, what=f"{run_id} to end")
    return state(home, run_id)


def _check(code: str) -> list[str]:
    """A check in Python, as an argv (no shell)."""
    return [PY, "-c", code]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_passing_check_makes_the_run_succeed_and_both_are_recorded(tmp_path: Path, repo: Path, home: Path) -> None:
    check = _check(
        "import pathlib, sys; print('checking done.txt'); sys.exit(0 if pathlib.Path('done.txt').exists() else 1)"
    )
    t = ticket(tmp_path, repo, 'write done.txt\nsay {"tool": "Bash", "command": "true"}', verify=check)
    run_id = launch(t)
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s["reason"]
    assert s["reason"].startswith("agent exited 0; verify passed (exit 0, ") and s["reason"].endswith(" s)")
    assert s["agent_claim"] == {"ending": "succeeded", "reason": "agent exited 0"}
    v = s["verify_result"]
    assert v["argv"] == check and v["exit_code"] == 0 and v["passed"] is True and v["timed_out"] is False
    assert v["tail"] == ["checking done.txt"] and 0 <= v["seconds"] < 30
    assert s["verify"] == check and s["verify_timeout_s"] == 600  # frozen at launch
    assert "checking done.txt" in (home / "runs" / run_id / "verify.log").read_text()


def test_a_failing_check_fails_the_run_naming_the_check_and_its_last_line(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    check = _check(
        "import sys\n"
        "print('collected 3 items')\n"
        "print('API_KEY=abcd1234efgh5678 in the environment', file=sys.stderr)\n"
        "print('FAILED tests/test_app.py::test_hi - assert 1 == 2')\n"
        "sys.exit(1)"
    )
    t = ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "true"}', verify=check)
    run_id = launch(t)
    s = _ended(home, run_id)
    assert s["state"] == "failed"
    assert s["reason"].startswith("verify failed (exit 1): ")
    assert s["reason"].endswith("FAILED tests/test_app.py::test_hi - assert 1 == 2")
    assert s["agent_claim"]["ending"] == "succeeded"  # what the agent said, kept next to what was found
    v = s["verify_result"]
    assert v["exit_code"] == 1 and v["passed"] is False and v["timed_out"] is False
    assert len(v["tail"]) == 3 and "abcd1234efgh5678" not in json.dumps([v["tail"], s["reason"]])  # redacted
    assert "API_KEY=[REDACTED]" in v["tail"][1]
    assert s["exit_code"] == 0  # the agent's own exit code stays recorded


def test_a_check_past_its_timeout_fails_the_run_and_leaves_no_process(tmp_path: Path, repo: Path, home: Path) -> None:
    # the shell form; the check leaves a background child of its own, which must go with it
    t = ticket(
        tmp_path,
        repo,
        'say {"tool": "Bash", "command": "true"}',
        verify="sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; echo waiting; wait",
        verify_timeout_seconds=1,
    )
    run_id = launch(t)
    s = _ended(home, run_id, timeout=40)
    assert s["state"] == "failed" and s["reason"].startswith("verify timed out after 1 s"), s["reason"]
    v = s["verify_result"]
    assert v["timed_out"] is True and v["passed"] is False and v["exit_code"] is None and v["seconds"] >= 1
    clone = home / "runs" / run_id / "clone"
    for name in ("bg.pid", "sh.pid"):
        pid = int((clone / name).read_text())
        wait(lambda pid=pid: _gone(pid), timeout=10, what=f"{name} process to be gone")


def test_the_shell_form_runs_under_sh(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "write done.txt yes", verify="test -f done.txt && grep -q yes done.txt && echo ok")
    run_id = launch(t)
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s["reason"]
    assert s["verify_result"]["argv"][:2] == ["sh", "-c"] and s["verify_result"]["tail"] == ["ok"]


def test_a_check_that_cannot_start_fails_the_run(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "write done.txt", verify=["no-such-check-binary", "--all"])
    s = _ended(home, launch(t))
    assert s["state"] == "failed" and s["reason"].startswith("verify could not start: no-such-check-binary: ")


def test_an_agent_that_failed_is_not_verified(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "exit 3", verify=_check("open('verified.txt', 'w')"))
    run_id = launch(t)
    s = _ended(home, run_id)
    assert s["state"] == "failed" and s["reason"] == "agent exited 3"
    assert s["agent_claim"] == {"ending": "failed", "reason": "agent exited 3"} and s["verify_result"] is None
    assert not (home / "runs" / run_id / "clone" / "verified.txt").exists()


def test_a_killed_run_is_never_verified(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "true"}\nsleep 60', verify=_check("open('v.txt', 'w')"))
    run_id = launch(t)
    wait(lambda: state(home, run_id)["state"] == "running", what="running")
    assert cli("kill", run_id).returncode == 0
    s = _ended(home, run_id)
    assert s["state"] == "killed" and s["verify_result"] is None
    assert not (home / "runs" / run_id / "clone" / "v.txt").exists()
    assert not (home / "runs" / run_id / "verify.log").exists()


def test_a_kill_during_the_check_stops_it_and_records_killed(tmp_path: Path, repo: Path, home: Path) -> None:
    t = ticket(tmp_path, repo, "write done.txt", verify="echo $$ > check.pid; sleep 60")
    run_id = launch(t)
    pidfile = home / "runs" / run_id / "clone" / "check.pid"
    wait(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="the check to start")
    assert cli("kill", run_id).returncode == 0
    s = _ended(home, run_id)
    assert s["state"] == "killed" and s["verify_result"] is None
    wait(lambda: _gone(int(pidfile.read_text())), timeout=10, what="the check to be gone")


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ({"verify": 5}, "verify must be a command"),
        ({"verify": []}, "verify must be a command"),
        ({"verify": {"run": "pytest"}}, "verify must be a command"),
        ({"verify": ["pytest", 3]}, "verify[1] must be a non-empty string"),
        ({"verify": ["pytest", ""]}, "verify[1] must be a non-empty string"),
        ({"verify": "  "}, "verify must be a non-empty command"),
        ({"verify": "pytest", "verify_timeout_seconds": 0}, "verify_timeout_seconds"),
        ({"verify": "pytest", "verify_timeout_seconds": "soon"}, "verify_timeout_seconds"),
    ],
)
def test_bad_verify_values_are_one_line_errors_with_file_and_line(
    tmp_path: Path, repo: Path, home: Path, front: dict[str, Any], needle: str
) -> None:
    bad = ticket(tmp_path, repo, "write done.txt", **front)
    line = one_line_error(cli("launch", str(bad)), f"{bad}:", needle)
    n = int(line.split(f"{bad}:", 1)[1].split(":", 1)[0])
    key = "verify_timeout_seconds" if "verify_timeout_seconds" in front else "verify"
    assert bad.read_text().splitlines()[n - 1].startswith(f"{key}:"), line
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())  # nothing was launched


def test_a_run_without_a_check_keeps_the_agents_word_and_is_unverified(tmp_path: Path, repo: Path, home: Path) -> None:
    from orchestrator.record.model import RunRecord, VerifyResult
    from orchestrator.tables import status_table

    run_id = launch(ticket(tmp_path, repo, "write done.txt"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded" and s["reason"] == "agent exited 0"
    assert s["verify"] == [] and s["verify_result"] is None and s["agent_claim"]["ending"] == "succeeded"
    assert RunRecord(state="succeeded").verified is None
    assert RunRecord(verify_result=VerifyResult(passed=True)).verified is True
    assert RunRecord(verify_result=VerifyResult(passed=False)).verified is False

    def rendered(**row: Any) -> str:
        base = {"id": run_id, "ticket": "t1", "bucket": "small", "state": "succeeded", "elapsed_min": 0.1}
        base |= {"expected_min": 1, "region": "healthy", "signals": [], "hints": [], "suspicion": 0}
        base |= {"notified": False, "tripped_at_min": None, "last_activity_s": None, "tokens": None}
        console = Console(record=True, width=250)
        console.print(status_table([base | row]))
        return console.export_text()

    assert "unverified" in rendered(verified=None)
    assert "unverified" not in rendered(verified=True)


def test_a_record_from_before_verify_still_reads() -> None:
    from orchestrator.record.model import from_builtins

    old = from_builtins({"version": 2, "run_id": "r", "state": "succeeded", "reason": "agent exited 0"}, "r")
    assert old.verify == [] and old.verify_timeout_s == 600 and old.verify_result is None and old.agent_claim is None
    assert old.verified is None


def test_status_says_unverified_for_a_run_without_a_check(tmp_path: Path, repo: Path, home: Path) -> None:
    plain = launch(ticket(tmp_path, repo, "write done.txt", name="plain"))
    checked = launch(ticket(tmp_path, repo, "write done.txt", name="checked", verify=["true"]))
    _ended(home, plain), _ended(home, checked)
    rows = {r["id"]: r for r in status_json()["runs"]}
    assert rows[plain]["verified"] is None and rows[checked]["verified"] is True
    table = cli("status", env={"COLUMNS": "250"}).stdout
    assert [line for line in table.splitlines() if plain in line and "unverified" in line]
    assert not [line for line in table.splitlines() if checked in line and "unverified" in line]


def test_a_check_that_exits_at_once_is_still_waited_for(tmp_path: Path) -> None:
    """A check quicker than its own spawn (`true`) was reaped by the dropped Popen before the supervisor
    looked at it, and the run failed "verify could not start: process PID not found" (seen in CI)."""
    from orchestrator.infra import proc
    from orchestrator.record.layout import RunDir
    from orchestrator.runs.supervisor import verify

    started = proc.start_detached(["true"], cwd=tmp_path, log=tmp_path / "quick.log")
    wait(lambda: psutil.Process(started.pid).status() == psutil.STATUS_ZOMBIE, timeout=10, what="true to exit")
    assert psutil.Process(started.pid).wait(timeout=5) == 0  # still there to be waited for, exit code and all

    rd = RunDir(tmp_path / "runs" / "r1")
    (rd.path / "clone").mkdir(parents=True)
    results = [verify(rd, ["true"], 10.0) for _ in range(20)]
    assert all(r is not None and r.passed and r.exit_code == 0 and r.error is None for r in results), results
