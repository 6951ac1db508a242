"""The `feedback` command's options and output (the command line registers it; runs/feedback.py does the work)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt
from orchestrator.infra.errors import UserError


def feedback_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    verdict: Annotated[str, typer.Argument(help="useful | false-alarm: was the page a real spiral?")],
    page: Annotated[
        int | None, typer.Option("--page", min=1, help="Which of the run's pages (episode); default: its latest.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Say whether a run's page was right: `useful` (a real spiral) or `false-alarm`.

    The verdict is kept in the run's record (a later one for the same
    page replaces it) and in the ledger: `history --pages` shows the
    precision of the pages on your fleet, by rule and by bucket, and
    `calibrate` names the rules behind the false alarms. The run page
    of `serve --actions` has the same two buttons.
    """
    from orchestrator.runs.feedback import VERDICTS, give
    from orchestrator.runs.monitor import find_run

    if verdict not in VERDICTS:
        raise UserError(f"the verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    found = find_run(run)
    f = give(found, verdict, "cli", page)
    if as_json:
        sys.stdout.write(jsonout.document({"run_id": found.name, "page": f.episode, "verdict": f.verdict, "at": f.at}))
    else:
        typer.echo(f"{found.name}: page {f.episode} ({', '.join(f.signals) or 'no signals'}) judged {f.verdict}")
