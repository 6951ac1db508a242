"""The `status` command's options and output (the command line registers it)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator.commands.options import JsonOpt, console, print_json


def status_command(
    as_json: JsonOpt = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="Every column: ticket, bucket, spend, guidance, reason.")
    ] = False,
) -> None:
    """Every run at a glance: state, elapsed vs expected, region, spiral signals, page, why it ended.

    Also enforces liveness on the way (dead, silent or overdue runs are
    stopped and recorded), so nothing stays `running` without a process. A run
    whose cache must be rebuilt from a long log (an upgrade) is left to the
    watcher: shown as last recorded, `evaluating (N of M runs)`.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.notify.channels import NO_TARGET, from_config
    from orchestrator.runs.pipeline import NOTICES
    from orchestrator.runs.watch import one_pass
    from orchestrator.tables import no_runs_yet, status_table, unchecked

    cfg = load()
    notifier = from_config(cfg, NOTICES)
    views = one_pass(BucketsFile(), cfg, notifier, leave_cold=True)  # a cold run: left to the watcher
    sys.stderr.writelines(unchecked(views))
    if not notifier.configured and views and not as_json:
        sys.stderr.write(f"status: {NO_TARGET}\n")
    rows = [v.to_dict() for v in views]
    if as_json:
        print_json({"runs": rows})
    elif rows:
        console().print(status_table(rows, wide=wide))
    else:
        typer.echo(no_runs_yet())
