"""The `ledger` command's options and output (the command line registers it as `ledger rebuild`)."""

from __future__ import annotations

import sys

import typer


def ledger_rebuild_command() -> None:
    """Drop the ledger's rows and re-read every run folder (they are the source of truth)."""
    from orchestrator.config import load
    from orchestrator.ledger.store import ledger_path, refresh
    from orchestrator.tables import rebuild_summary

    def progress(i: int, n: int) -> None:
        sys.stderr.write(f"\r  {i}/{n} run folders...")

    stats = refresh(load().prices, rebuild=True, progress=progress)
    sys.stderr.write("\r" + " " * 40 + "\r")
    typer.echo(rebuild_summary(ledger_path(), stats))
