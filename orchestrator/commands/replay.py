"""The `replay` command's options and output (the command line registers it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.commands.options import JsonOpt, console, print_json
from orchestrator.infra.errors import UserError


def replay_command(
    case: Annotated[Path, typer.Argument(help="A case folder (holding case.yaml and events.jsonl).")],
    as_json: JsonOpt = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also draw the case's timeline as one HTML file here (as `report`).")
    ] = None,
) -> None:
    """Replay one recorded run through the detector on a 30 s clock.

    Says whether, when and why a page would have been sent, and whether that
    matches the case's `expect:`. Exit 0 when it matches, 1 when not.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.corpus.replay import replay_case
    from orchestrator.record.layout import CaseFiles
    from orchestrator.tables import replay_detail

    if not CaseFiles(case).is_case():
        raise UserError(f"{case}: not a case folder (no case.yaml)")
    result = replay_case(case, BucketsFile()).to_dict()
    if report is not None:
        from orchestrator.commands.report import write_case_report

        sys.stderr.write(f"report: {write_case_report(case, report)}\n")  # stdout keeps the table or JSON
    if as_json:
        print_json(result)
    else:
        replay_detail(result, console())
    raise typer.Exit(0 if result["pass"] else 1)
