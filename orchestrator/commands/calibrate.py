"""The `calibrate` command's options and output (the command line registers it; orchestrator/ledger does the work)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt


def calibrate_command(
    min_runs: Annotated[
        int, typer.Option(help="Refuse to propose timings for a bucket with fewer succeeded runs.", min=1)
    ] = 20,
    write: Annotated[bool, typer.Option("--write", help="Apply the proposal to buckets.yaml.")] = False,
    cases: Annotated[
        list[Path] | None,
        typer.Option(
            "--cases",
            help="Learn from the recorded cases under this folder (repeatable) instead of the ledger: those "
            "whose `outcome:` is resolved or succeeded, or, without one, that are not expected to spiral.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Per bucket, from the runs that succeeded: median and p90 wall-clock and tool calls, and
    the expected / soft-band / stuck bands they imply (in minutes and in calls), as a diff against buckets.yaml.

    Once pages have verdicts (`feedback`), a last line names the rules
    behind the false alarms: per rule, false alarms of its judged pages.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.ledger import calibrate as cal
    from orchestrator.tables import calibration_lines

    buckets = BucketsFile()
    if cases:
        result = cal.calibrate_cases(buckets, cases, min_runs)
    else:
        from orchestrator.config import load

        result = cal.calibrate(buckets, load().prices, min_runs)
    if write:
        cal.apply(result, buckets.path)
    if as_json:  # one JSON document: what was written is a key of it, not a line after it
        sys.stdout.write(jsonout.document({**result.to_dict(), "written": str(buckets.path) if write else None}))
    else:
        for text in calibration_lines(result):
            typer.echo(text)
        if write:
            typer.echo(f"wrote {buckets.path}")
