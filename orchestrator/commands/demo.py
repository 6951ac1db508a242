"""The `demo` command's options and output (the command line registers it)."""

from __future__ import annotations

import os
import shlex
from typing import Annotated

import typer

from orchestrator.commands.options import console
from orchestrator.infra.cli_name import CLI


def demo_command(
    speed: Annotated[
        float, typer.Option(help="Clock speed-up: recorded minutes per real minute.", min=1, max=1000)
    ] = 60.0,
    here: Annotated[
        bool,
        typer.Option("--here", help="Keep the demo's runs in your state folder, beside your own runs."),
    ] = False,
) -> None:
    """The embedded default: two demo-agent runs, one healthy and one spiraling.

    Builds a sample repo, launches the built-in demo agent on two tickets
    (re-enacting recorded corpus runs on a 60x clock), shows status live and
    ends, within 3 minutes, with which run would have paged and why. Needs no
    agent, no API key and no network.

    Its runs go to a state folder of their own (`demo/` in yours), so your
    `status` and `history` stay yours; the summary says how to look at them.
    Your config.yaml's notification targets still get the demo's page.
    """
    from orchestrator.config import load
    from orchestrator.demo.console import show_demo
    from orchestrator.infra.paths import home

    cfg = load()  # yours: its notify targets get the demo's page too
    prefix = ""
    if not here:
        own = home() / "demo"
        os.environ["ORCHESTRATOR_HOME"] = str(own)  # the runs, and their supervisors, live there
        prefix = f"ORCHESTRATOR_HOME={shlex.quote(str(own))} "
    show_demo(console(), speed, cfg, f"{prefix}{CLI}")
