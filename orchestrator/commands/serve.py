"""The `serve` command's options and output (the command line registers it; orchestrator/serve does the work)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer


def serve_command(
    host: Annotated[
        str, typer.Option(help="Address to listen on; beyond 127.0.0.1 / localhost only with a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free one, printed).", min=0, max=65535)] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="ORCHESTRATOR_SERVE_TOKEN",
            show_envvar=True,
            help="Every request must carry it (?token= once, then a cookie; or Authorization: Bearer).",
        ),
    ] = None,
    actions: Annotated[
        bool | None,
        typer.Option(
            "--actions/--no-actions",
            help="Buttons on each run's page (nudge, snooze, kill, verdicts); default: config.yaml's serve.actions.",
        ),
    ] = None,
    allow_remote_actions: Annotated[
        bool, typer.Option("--allow-remote-actions", help="Take actions on an address beyond this machine.")
    ] = False,
) -> None:
    """A local web page of every run (the rows of `status`, refreshed live), each opening its run page.

    It shows what the watcher last recorded: keep a watcher running for the
    rows to move. /runs/<id> is a run's page (where a page's link lands on
    a phone), /runs/<id>/report its report, /api/runs the rows as JSON.

    Read-only unless --actions: then each live run's page has buttons
    (nudge, redirect, wrap up, snooze the ladder, kill, and "useful" /
    "false alarm" on each page), each a POST with a token made for that
    run and action, used once, expiring (serve.action_ttl_hours, 24 h).
    Ctrl-C stops it.
    """
    from orchestrator.config import load
    from orchestrator.serve.server import is_local, make_server, serve_forever

    def say(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    settings = load().serve
    on = settings.actions if actions is None else actions
    server = make_server(host, port, token, actions_on=on, remote_actions=allow_remote_actions, settings=settings)
    if on and not is_local(host):
        sys.stderr.write(
            f"serve: warning: actions are on for {host}, beyond this machine: anyone holding a run page's "
            "tokens can act on that run until they expire\n"
        )
    serve_forever(server, say)
