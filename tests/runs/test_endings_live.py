"""Endings that mean something, end to end with the fake agent in real clones: an exit 0 that changed
nothing the ticket asked for ends `no_change` and sends its notice; one that did succeeds; with no
target configured, `launch` and `status` say pages go nowhere."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.notify.channels import NO_TARGET
from tests.helpers import Receiver, cli, state, ticket, wait, write_config


def _ended(home: Path, run_id: str) -> dict[str, object]:
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), 60, f"run {run_id} to end")
    return state(home, run_id)


def test_a_run_that_changed_only_its_own_probe_ends_no_change_and_says_so(
    tmp_path: Path, home: Path, repo: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    body = 'write probe_calc.py print(1)\nsay {"tool": "Bash", "command": "python probe_calc.py"}\nexit 0'
    p = cli("launch", str(ticket(tmp_path, repo, body, name="fix-calc", outputs=["src/calc.py"])))
    assert p.returncode == 0, p.stderr
    assert NO_TARGET not in p.stderr  # a target is configured
    run_id = p.stdout.strip().splitlines()[-1]
    s = _ended(home, run_id)
    assert s["state"] == "no_change", s
    assert "ended without changing anything the ticket asked for" in str(s["reason"])
    assert s["agent_claim"]["ending"] == "succeeded"  # what the exit alone said is kept
    p = cli("watch", "--once")
    assert p.returncode == 0, p.stderr
    wanted = f"run {run_id} ended without changing what the ticket asked for"
    wait(lambda: wanted in receiver.titles(), 30, "the no_change notice")
    rows = json.loads(cli("status", "--json").stdout)["runs"]
    assert [r["state"] for r in rows if r["id"] == run_id] == ["no_change"]


def test_a_run_that_wrote_its_declared_output_succeeds_and_no_target_is_said(
    tmp_path: Path, home: Path, repo: Path
) -> None:
    body = 'write src/calc.py x = 2\nsay {"tool": "Edit", "file": "src/calc.py"}\nexit 0'
    p = cli("launch", str(ticket(tmp_path, repo, body, name="calc", outputs=["src/calc.py"])))
    assert p.returncode == 0, p.stderr
    assert f"launch: {NO_TARGET}" in p.stderr  # no notify target in this home's config.yaml
    run_id = p.stdout.strip().splitlines()[-1]
    assert _ended(home, run_id)["state"] == "succeeded"
    p = cli("status")
    assert p.returncode == 0 and f"status: {NO_TARGET}" in p.stderr, p.stderr


def test_without_outputs_or_scope_any_new_or_changed_file_is_a_change(tmp_path: Path, home: Path, repo: Path) -> None:
    changed = cli("launch", str(ticket(tmp_path, repo, "write notes.txt done\nexit 0", name="notes")))
    nothing = cli("launch", str(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nexit 0', name="idle")))
    assert changed.returncode == 0 and nothing.returncode == 0, (changed.stderr, nothing.stderr)
    assert _ended(home, changed.stdout.strip().splitlines()[-1])["state"] == "succeeded"
    idle = _ended(home, nothing.stdout.strip().splitlines()[-1])
    assert idle["state"] == "no_change" and "any file in the clone unchanged" in str(idle["reason"])
