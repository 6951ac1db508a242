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
) -> None:
    """A read-only local web page of every run (the rows of `status`, refreshed live), each opening its report.

    It shows what the watcher last recorded and changes nothing: keep a watcher
    running for the rows to move. /api/runs gives the same rows as JSON (with a
    version key). Ctrl-C stops it.
    """
    from orchestrator.serve.server import make_server, serve_forever

    def say(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    serve_forever(make_server(host, port, token), say)
