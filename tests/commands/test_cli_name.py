"""The commands a page suggests are spelled the way the user runs the tool: `./dev.sh` in a
checkout, `orchestrator` after pip install (orchestrator/infra/cli_name.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.infra.cli_name import CLI, cli_name
from orchestrator.notify.pages import ending_notice
from orchestrator.record.model import RunRecord


def test_a_checkout_says_dev_sh_and_an_installed_package_says_orchestrator(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "orchestrator").mkdir(parents=True)
    (checkout / "dev.sh").write_text("#!/bin/sh\n")
    site = tmp_path / "site-packages"
    (site / "orchestrator").mkdir(parents=True)
    assert cli_name(checkout / "orchestrator") == "./dev.sh"
    assert cli_name(site / "orchestrator") == "orchestrator"
    assert CLI == "./dev.sh"  # this test runs from the project's checkout


def test_a_notice_suggests_the_commands_under_that_name() -> None:
    record = RunRecord(run_id="t1-1", ticket_id="t1", bucket="small", state="failed", reason="agent exited 1")
    _, body = ending_notice(record, "failed", cli="orchestrator")
    assert "  orchestrator logs t1-1" in body and "./dev.sh" not in body
    _, body = ending_notice(record, "failed")
    assert f"  {CLI} logs t1-1" in body
