"""The `nudge` command's options and output (the command line registers it; nudge.py does the work)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt


def nudge_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    text: Annotated[str | None, typer.Argument(help="What the agent should do instead, in your words.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Read the guidance text from this file.")] = None,
    redirect: Annotated[
        bool, typer.Option("--redirect", help="Stock wording: stop repeating, re-read the task, change approach.")
    ] = False,
    wrap_up: Annotated[
        bool, typer.Option("--wrap-up", help="Stock wording: keep what works, clean up, say what is left, finish.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Queue guidance for a running agent, delivered at its next turn boundary.

    Claude Code and Codex get it through a hook after their next tool call (never
    mid-call), in the very next model request; other agents read the inbox named
    by $ORCHESTRATOR_GUIDANCE_DIR. `status` shows the receipt; a message not
    received within guidance_deliver_minutes is taken back and reported. The run
    is refreshed first, as a watcher pass would: one whose supervisor is gone is
    recorded `lost` and the message refused.
    """
    from orchestrator.runs.monitor import find_run, refresh_now
    from orchestrator.runs.steering.nudge import compose
    from orchestrator.runs.steering.nudge import nudge as do_nudge

    body, kind = compose(text, file, redirect, wrap_up)
    found = find_run(run)
    refresh_now(found)  # a run whose supervisor died (and no watcher saw it) is recorded so, and refused
    g = do_nudge(found, body, kind)
    if as_json:
        sys.stdout.write(
            jsonout.document(
                {"run_id": found.name, "guidance": g.id, "kind": g.kind, "via": g.via, "queued_at": g.queued_at}
            )
        )
    else:
        typer.echo(f"{g.id} queued for {found.name} ({g.via}): it reaches the agent after its next tool call")
