"""The `logs` command's options and output (the command line registers it)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator import jsonout


def logs_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing new calls until the run ends.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object a line (JSON Lines), with a version key.")
    ] = False,
) -> None:
    """A run's tool calls, one line each: time, minute, tool, command or file; failed and denied calls marked."""
    from orchestrator.runs.logs import tool_calls
    from orchestrator.runs.monitor import find_run, refresh_now

    run_dir = find_run(run)
    # while the log is quiet, what a watcher pass does for this run: a dead one is recorded, and -f ends
    for call in tool_calls(run_dir, follow, check=(lambda: refresh_now(run_dir)) if follow else None):
        if as_json:
            sys.stdout.write(jsonout.line(call))
            sys.stdout.flush()
        else:
            typer.echo(call["line"])
