"""The `snooze` command's options and output (the command line registers it; runs/snooze.py does the work)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.runs.snooze import DEFAULT_MINUTES


def snooze_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    minutes: Annotated[float, typer.Option("--minutes", help="How long to hold the ladder.")] = DEFAULT_MINUTES,
    off: Annotated[bool, typer.Option("--off", help="Lift the hold now.")] = False,
) -> None:
    """Hold a run's escalation ladder until the time is up.

    No rung is climbed meanwhile (no nudge queued, no stop); pages and
    notices still come. `status --json` and the run page show
    `ladder_snoozed_until`; the run page of `serve --actions` has the
    same button.
    """
    from orchestrator.runs.monitor import find_run
    from orchestrator.runs.snooze import snooze

    found = find_run(run)
    until = snooze(found, None if off else minutes)
    typer.echo(f"{found.name}: ladder " + (f"snoozed until {until}" if until else "no longer snoozed"))
