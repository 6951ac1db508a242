"""The `watch` command's options and output (the command line registers it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.infra.errors import UserError

if TYPE_CHECKING:
    from orchestrator.runs.view import RunView


def watch_command(
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit.")] = False,
    tick: Annotated[float, typer.Option(help="Seconds between passes (0.1 to a day).")] = 30.0,
    idle_exit: Annotated[
        float | None,
        typer.Option(
            help="Exit once no run has been active, and no notice waited to be retried, for this many seconds (at least 0.1)."
        ),
    ] = None,
    wake: Annotated[
        bool,
        typer.Option(
            "--wake/--no-wake",
            help="Between ticks, evaluate a live run as soon as its log grows (default), "
            "so a page goes out about a second after the trip; --no-wake evaluates at ticks only.",
        ),
    ] = True,
) -> None:
    """The background watcher: each tick, evaluate every active run, enforce
    liveness, and send due notifications (retrying failed ones with backoff).
    Between ticks, a run whose log grew is evaluated within about a second.

    Detection must not depend on anyone calling `status`: keep one watcher
    running (only one may run at a time; a second one exits with a message).
    `status` sends too; either way a run's page goes out once.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.notify.channels import check_targets, from_config
    from orchestrator.runs.pipeline import NOTICES
    from orchestrator.runs.watch import watch as do_watch
    from orchestrator.tables import unchecked, watch_events

    def report(views: list[RunView]) -> None:
        sys.stderr.writelines(unchecked(views))
        for text in watch_events(views):
            typer.echo(text)

    day = 86400.0  # time.sleep refuses far longer, and nobody means it
    if not 0.1 <= tick <= day:  # NaN fails this too
        raise UserError(f"--tick must be a number of seconds from 0.1 to {day:g}, got {tick}")
    if idle_exit is not None and not 0.1 <= idle_exit < float("inf"):
        raise UserError(f"--idle-exit must be a finite number of seconds (at least 0.1), got {idle_exit}")
    cfg = load()
    notifier = from_config(cfg, NOTICES)
    try:  # a target no page could reach is said now, not found by the first page; liveness goes on regardless
        check_targets(notifier, cfg)
    except UserError as exc:
        sys.stderr.write(f"warning: {exc}; its pages will fail, the rest of the watching goes on\n")
    do_watch(
        BucketsFile(), cfg, once=once, tick_s=tick, report=report, notifier=notifier, idle_exit_s=idle_exit, wake=wake
    )
