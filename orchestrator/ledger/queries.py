"""The ledger's read queries: `history`, `history --by`, `history --sql` (pages.py: `history --pages`;
store.py keeps the file, its connections and the refresh from the run folders)."""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime
from typing import Any

from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.ledger.store import connect, recovering
from orchestrator.record.layout import EVENTS

# ---- queries -----------------------------------------------------------------------------


def filters(since: datetime | None, ticket: str | None, state: str | None) -> tuple[list[str], list[Any]]:
    """The WHERE clauses (on `runs r`) and their arguments shared by `history`, `history --by` and
    `history --pages` (ledger/pages.py)."""
    where: list[str] = []
    args: list[Any] = []
    for clause, value in (("r.created_at >= ?", since), ("r.ticket_id = ?", ticket), ("r.state = ?", state)):
        if value is not None and value != "":
            where.append(clause)
            args.append(value)
    return where, args


@recovering
def history(*, since: datetime | None, ticket: str | None, state: str | None, limit: int) -> list[dict[str, Any]]:
    where, args = filters(since, ticket, state)
    sql = f"""
        SELECT r.run_id, r.ticket_id, r.bucket, r.agent, r.state, r.reason, r.created_at, r.wall_min,
               r.tool_calls, r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens AS tokens,
               r.cost_usd, r.unpriced_models, r.tripped_at_min, r.notified,
               r.delivered_branch, r.pushed_at, r.pr_url, r.delivery_error,
               coalesce((SELECT list(s.signal ORDER BY s.signal) FROM signals s WHERE s.run_id = r.run_id), []) AS signals
        FROM runs r {"WHERE " + " AND ".join(where) if where else ""}
        ORDER BY r.created_at DESC NULLS LAST, r.run_id DESC LIMIT {int(limit)}"""
    with connect(read_only=True) as con:
        cur = con.execute(sql, args)
        cols = [d[0] for d in cur.description]
        return [_jsonable(dict(zip(cols, row, strict=False))) for row in cur.fetchall()]


# `history --by`: the column each grouping reads
GROUP_BY = {"ending": "r.state", "ticket": "r.ticket_id", "agent": "r.agent", "bucket": "r.bucket"}


@recovering
def history_groups(*, by: str, since: datetime | None, ticket: str | None, state: str | None) -> list[dict[str, Any]]:
    """One row per ending (state), ticket, agent or bucket over the runs `history` would list.

    Cost is null-safe: `cost_usd` and `mean_cost_usd` are over the priced runs only (null when
    there are none), `unpriced_runs` counts the runs with tokens but no price, never as $0;
    runs that reported no usage at all are neither. Largest groups first.
    """
    if by not in GROUP_BY:
        raise UserError(f"--by must be one of {', '.join(GROUP_BY)}, got {by!r}")
    where, args = filters(since, ticket, state)
    tokens = "r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens"
    sql = f"""
        SELECT {GROUP_BY[by]} AS "group", count(*) AS runs,
               count(*) FILTER (WHERE r.notified) AS paged,
               count(r.cost_usd) AS priced_runs,
               count(*) FILTER (WHERE r.cost_usd IS NULL AND coalesce({tokens}, 0) > 0) AS unpriced_runs,
               sum(r.cost_usd) AS cost_usd, avg(r.cost_usd) AS mean_cost_usd,
               coalesce(sum({tokens}), 0) AS tokens,
               median(r.wall_min) AS median_wall_min
        FROM runs r {"WHERE " + " AND ".join(where) if where else ""}
        GROUP BY 1 ORDER BY runs DESC, 1 NULLS LAST"""
    with connect(read_only=True) as con:
        cur = con.execute(sql, args)
        cols = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            g = dict(zip(cols, row, strict=False))
            for k in ("cost_usd", "mean_cost_usd"):
                g[k] = None if g[k] is None else round(float(g[k]), 8)
            g["median_wall_min"] = None if g["median_wall_min"] is None else round(float(g["median_wall_min"]), 3)
            g["tokens"] = int(g["tokens"])
            out.append(g)
        return out


@recovering
def run_sql(query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Ad-hoc SQL over the ledger; `events` is a view over every run's raw events.jsonl."""
    import duckdb

    with connect(read_only=True) as con:
        if re.search(r"\bevents\b", query, re.I):  # a view over every run's log costs a glob and a bind
            _events_view(con)
        try:
            cur = con.execute(query)
        except duckdb.Error as exc:
            raise UserError(f"SQL error: {str(exc).splitlines()[0]}") from None
        if cur.description is None:
            return [], []
        return [d[0] for d in cur.description], cur.fetchall()


def _events_view(con: Any) -> None:
    """The temp view `events` over every run's events.jsonl that is a readable file (others: a warning)."""
    import duckdb

    root = runs_dir()
    files: list[str] = []
    left_out: list[str] = []
    for p in sorted(root.glob(f"*/{EVENTS}")) if root.is_dir() else []:
        (files if p.is_file() and os.access(p, os.R_OK) else left_out).append(str(p))
    if left_out:
        more = f" (and {len(left_out) - 1} more)" if len(left_out) > 1 else ""
        sys.stderr.write(f"warning: {left_out[0]}{more}: not a readable file; left out of the events view\n")
    if not files:
        return
    # an explicit file list, not a glob: a state folder's own path may hold [ or *
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    try:
        con.execute(f"""CREATE TEMP VIEW events AS
            SELECT regexp_extract(filename, '.*/runs/([^/]+)/events.jsonl$', 1) AS run_id, ts, data
            FROM read_json([{listed}], format='newline_delimited', filename=true,
                           columns={{'ts': 'VARCHAR', 'data': 'JSON'}}, ignore_errors=true)""")
    except duckdb.Error as exc:
        sys.stderr.write(f"warning: the events view could not be made: {str(exc).splitlines()[0]}\n")


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() + "Z" if isinstance(v, datetime) else v) for k, v in row.items()}
