"""The `report` command (the command line registers it), and the file writing `replay --report` shares."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.infra.errors import UserError


def report_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the HTML file (default: report.html in the run folder)."),
    ] = None,
) -> None:
    """Write a run's timeline as one self-contained HTML file and print its path.

    Tool calls over time by kind, each signal's on/off intervals, suspicion against
    the threshold, the healthy / soft / stuck regions, the page, guidance and the
    ending, spend over time; below it the evidence and the last calls. The file
    opens in any browser with no network (the chart's JavaScript is embedded).
    """
    from orchestrator.config import load
    from orchestrator.report import REPORT_HTML, render_run
    from orchestrator.runs.monitor import find_run

    found = find_run(run)
    dest = out if out is not None else found / REPORT_HTML
    typer.echo(str(write_report(render_run(found, price_overrides=load().prices), dest)))


def write_case_report(case: Path, dest: Path) -> Path:
    """`replay CASE --report FILE`: the case's timeline written to `dest`."""
    from orchestrator.report import render_case

    return write_report(render_case(case), dest)


def write_report(text: str, dest: Path) -> Path:
    from orchestrator.infra.atomic import write_text_atomic

    try:
        write_text_atomic(dest, text)
    except OSError as exc:
        raise UserError(f"{dest}: cannot write the report: {exc.strerror or exc}") from None
    return dest
