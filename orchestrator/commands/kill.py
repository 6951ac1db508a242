"""The `kill` command's options and output (the command line registers it; runs/kill.py does the work)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator.infra.errors import UserError


def kill_command(run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]) -> None:
    """Stop a run's agent, its process tree and session (SIGINT, SIGTERM, SIGKILL, confirmed) and record `killed`.

    A process the agent moved into a session of its own outside the clone (`setsid`) is not
    found; the supervisor's log names what it left running.

    A run whose supervisor and agent have both died already (no watcher saw it)
    is recorded `lost`, as a watcher pass would record it, and left as it is.
    """
    from orchestrator.runs.kill import gone_unseen, kill_run
    from orchestrator.runs.monitor import find_run, refresh_now

    try:
        found = find_run(run)
    except OSError as exc:  # e.g. an id longer than a file name may be
        raise UserError(f"no run {run[:60] + ('...' if len(run) > 60 else '')!r}: {exc.strerror}") from None
    if gone_unseen(found):
        refresh_now(found)  # recorded `lost` (and its notice sent) as a watcher would: kill_run then says so
    try:
        final = kill_run(found)
    except KeyboardInterrupt:
        sys.stderr.write(
            f"kill interrupted: the stop of {found.name} is recorded, and the next watcher pass (or `status`)"
            " carries it out within a minute\n"
        )
        raise typer.Exit(130) from None
    typer.echo(f"{final.run_id}: {final.state} ({final.reason})")
