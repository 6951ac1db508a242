"""The `history` command's options and output (the command line registers it; orchestrator/ledger does the work)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt, console
from orchestrator.infra.errors import UserError
from orchestrator.record.model import ACTIVE, ENDED, QUEUED

STATES = (QUEUED, *ACTIVE, *ENDED)

GROUPINGS = ("ending", "ticket", "agent", "bucket")


def history_command(
    since: Annotated[
        str | None, typer.Option(help="Only runs launched since: a date, a time, or an age like 7d.")
    ] = None,
    ticket: Annotated[str | None, typer.Option(help="Only this ticket's runs.")] = None,
    state: Annotated[str | None, typer.Option(help="Only runs that ended so (or are running).")] = None,
    limit: Annotated[
        int | None, typer.Option(help="At most this many runs, newest first (default 200; not with --by).", min=1)
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="ending|ticket|agent|bucket",
            help="One row per ending, ticket, agent or bucket: runs, paged, tokens, cost, median wall time.",
        ),
    ] = None,
    pages: Annotated[
        bool,
        typer.Option(
            "--pages",
            help="The precision of the pages (after --since, --ticket, --state), from `feedback`: pages, "
            "judged, useful, false alarms, useful / judged; for all, by rule and by bucket.",
        ),
    ] = False,
    sql: Annotated[
        str | None,
        typer.Option(
            help="Run this SQL instead (tables: runs, endings, signals, notifications, guidance, "
            "escalations, pages, page_feedback; view: events, every run's raw log)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Past and present runs from the ledger: endings, spend, signals, pages.

    The ledger is refreshed from the run folders first (only changed runs are
    re-read). --by groups the runs (after --since, --ticket, --state): the
    cost and its mean are over the priced runs, and runs with tokens but no
    known price are counted apart as unpriced, never as $0. --pages counts
    the pages and the verdicts people gave them (`feedback RUN useful|false-alarm`):
    precision = useful / judged, "-" while none is judged.
    """
    from orchestrator.config import load
    from orchestrator.ledger import queries
    from orchestrator.ledger import store as ledger
    from orchestrator.ledger.since import parse_since
    from orchestrator.tables import history_groups_table, history_table, page_precision_table, sql_table

    # bad input is refused before the ledger is touched
    if pages and (by is not None or sql or limit is not None):
        other = "--by" if by is not None else ("--sql" if sql else "--limit")
        raise UserError(f"--pages does not go with {other}: it counts every page of the runs listed")
    if by is not None and by not in GROUPINGS:
        raise UserError(f"--by must be one of {', '.join(GROUPINGS)}, got {by!r}")
    if by is not None and sql:
        raise UserError("--by and --sql do not go together: group in the SQL instead")
    filters = [name for name, v in (("--since", since), ("--ticket", ticket), ("--state", state)) if v is not None]
    if sql and (filters or limit is not None):
        raise UserError(f"--sql does not go with {', '.join(filters or ['--limit'])}: filter in the SQL instead")
    if by is not None and limit is not None:
        raise UserError("--limit does not go with --by: every group is shown")
    if state is not None and state not in STATES:
        raise UserError(f"--state must be one of {', '.join(STATES)}, got {state!r}")
    after = parse_since(since)
    stats = ledger.refresh(load().prices)
    if stats.unreadable_runs:
        named = ", ".join(stats.unreadable_runs[:3]) + (" ..." if len(stats.unreadable_runs) > 3 else "")
        n = len(stats.unreadable_runs)
        sys.stderr.write(f"warning: {n} run folder(s) could not be read into the ledger and are not shown: {named}\n")
    if sql:
        cols, table = queries.run_sql(sql)
        if as_json:
            sys.stdout.write(jsonout.document(jsonout.records(cols, table)))
        else:
            console().print(sql_table(cols, table))
        return
    if pages:
        from orchestrator.ledger.pages import page_precision

        precision = page_precision(since=after, ticket=ticket, state=state)
        if as_json:
            sys.stdout.write(jsonout.document(precision.to_dict()))
        elif not precision.all.pages:
            typer.echo("no pages match")
        else:
            console().print(page_precision_table(precision.to_dict()))
        return
    if by is not None:
        groups = queries.history_groups(by=by, since=after, ticket=ticket, state=state)
        if as_json:
            sys.stdout.write(jsonout.document({"by": by, "groups": groups}))
        elif not groups:
            typer.echo("no runs match")
        else:
            console().print(history_groups_table(by, groups))
        return
    rows = queries.history(since=after, ticket=ticket, state=state, limit=limit or 200)
    if as_json:
        sys.stdout.write(jsonout.document({"runs": rows}))
    elif not rows:
        typer.echo("no runs match")
    else:
        console().print(history_table(rows))
