"""The run ledger: a DuckDB index over the run folders (the only duckdb user).

The run folders stay the source of truth; the ledger can always be rebuilt
from them. DuckDB lets one process at a time hold the file read-write and
then refuses every other process, even read-only, so connections here are
short-lived and opening retries for a few seconds before giving up.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import LockBusy, held
from orchestrator.infra.paths import home, runs_dir
from orchestrator.ledger.prices import fingerprint as prices_fingerprint
from orchestrator.ledger.rows import LedgerRows, read_run
from orchestrator.record.layout import EVENTS, RunDir

SCHEMA_VERSION = 3
OPEN_RETRY_S = 10.0

# Each entry migrates the schema from version i to i + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, ticket_id VARCHAR, bucket VARCHAR, agent VARCHAR, format VARCHAR,
        state VARCHAR, reason VARCHAR, created_at TIMESTAMP, started_at TIMESTAMP, ended_at TIMESTAMP,
        wall_min DOUBLE, time_scale DOUBLE, exit_code INTEGER, tool_calls INTEGER,
        tripped_at_min DOUBLE, notified BOOLEAN,
        state_mtime DOUBLE, events_size BIGINT, indexed_at TIMESTAMP);
    CREATE TABLE endings (run_id VARCHAR PRIMARY KEY, state VARCHAR, reason VARCHAR, ended_at TIMESTAMP,
                          exit_code INTEGER);
    CREATE TABLE signals (run_id VARCHAR, signal VARCHAR, paged BOOLEAN);
    CREATE TABLE notifications (run_id VARCHAR, event VARCHAR, delivered BOOLEAN, attempts INTEGER,
                                delivered_at TIMESTAMP, last_error VARCHAR);
    """,
    """
    ALTER TABLE runs ADD COLUMN input_tokens BIGINT;
    ALTER TABLE runs ADD COLUMN output_tokens BIGINT;
    ALTER TABLE runs ADD COLUMN cache_read_tokens BIGINT;
    ALTER TABLE runs ADD COLUMN cache_write_tokens BIGINT;
    ALTER TABLE runs ADD COLUMN cost_usd DOUBLE;
    ALTER TABLE runs ADD COLUMN unpriced_models VARCHAR;
    DELETE FROM meta WHERE key = 'prices';
    """,
    # 3: guidance and the escalation ladder (issue 12): every message with its receipt and its answer,
    # so `history --sql` can tell how often guidance works. Runs indexed before are read again.
    """
    CREATE TABLE guidance (run_id VARCHAR, id VARCHAR, kind VARCHAR, sent_by VARCHAR, via VARCHAR,
                           queued_at TIMESTAMP, queued_at_min DOUBLE, received_at TIMESTAMP,
                           received_at_min DOUBLE, undelivered VARCHAR, signals_at_receipt VARCHAR,
                           answer VARCHAR, answer_at_min DOUBLE);
    CREATE TABLE escalations (run_id VARCHAR, rung INTEGER, action VARCHAR, climbed_at TIMESTAMP, at_min DOUBLE,
                              why VARCHAR, guidance_id VARCHAR);
    DELETE FROM meta WHERE key = 'prices';
    """,
]

RUN_COLUMNS = [
    "run_id",
    "ticket_id",
    "bucket",
    "agent",
    "format",
    "state",
    "reason",
    "created_at",
    "started_at",
    "ended_at",
    "wall_min",
    "time_scale",
    "exit_code",
    "tool_calls",
    "tripped_at_min",
    "notified",
    "state_mtime",
    "events_size",
    "indexed_at",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "unpriced_models",
]


def ledger_path() -> Path:
    return home() / "ledger.duckdb"


@contextmanager
def connect(read_only: bool = False) -> Iterator[Any]:
    """A short-lived connection, taken under the ledger's lock file: DuckDB admits one process at a
    time, and the lock makes ours queue instead of failing (and keeps one from opening a file another
    is still creating). A file that is not a DuckDB database is set aside and the ledger rebuilt."""
    import duckdb  # ~80 ms to import: only for the commands that need the ledger

    path = ledger_path()
    if "?" in str(path):  # DuckDB reads what follows a "?" in a database path as options
        raise UserError(f"{path}: DuckDB cannot open a ledger under a path with '?'; set ORCHESTRATOR_HOME elsewhere")
    with ExitStack() as stack:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(held(path.parent / (path.name + ".lock"), timeout=OPEN_RETRY_S))
        except LockBusy:
            raise UserError(f"{path}: ledger busy for {OPEN_RETRY_S:g} s (another command holds it)") from None
        except OSError as exc:
            raise UserError(f"{path.parent}: cannot use it as the state folder: {exc.strerror}") from None
        yield stack.enter_context(_connection(duckdb, path, read_only))


@contextmanager
def _connection(duckdb: Any, path: Path, read_only: bool) -> Iterator[Any]:
    if read_only and not path.exists():
        read_only = False  # nothing to read yet: create it
    con = _open(duckdb, path, read_only)
    try:
        if not read_only:
            migrate(con)
        yield con
    finally:
        con.close()


def _open(duckdb: Any, path: Path, read_only: bool) -> Any:
    deadline = time.monotonic() + OPEN_RETRY_S
    delay = 0.02
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            text = str(exc)
            if "not a valid DuckDB database" in text:
                _set_aside(path, "was not a DuckDB database")
                read_only = False
                continue
            if "lock" not in text.lower() or time.monotonic() > deadline:
                raise UserError(f"{path}: ledger busy or unreadable: {text.splitlines()[0]}") from None
            time.sleep(delay)  # a process outside ours (say, the duckdb CLI) has the file
            delay = min(delay * 2, 0.5)
            continue
        try:
            schema_version(con)  # a file cut short (a full disk, a copy stopped midway) opens, then fails here
            return con
        except duckdb.Error as exc:
            con.close()
            _set_aside(path, f"could not be read ({(str(exc) or type(exc).__name__).splitlines()[0]})")
            read_only = False


def _set_aside(path: Path, why: str) -> None:
    """Move an unusable ledger out of the way (kept, for a look): it is only an index, rebuilt from the runs."""
    aside = path.with_name(f"{path.name}.unreadable-{time.time_ns()}")  # (two in one second: both kept)
    path.rename(aside)
    sys.stderr.write(f"warning: {path} {why}; moved to {aside.name}, rebuilding the ledger from the run folders\n")


def schema_version(con: Any) -> int:
    has_meta = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchone()[0]
    if not has_meta:
        return 0
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(con: Any) -> None:
    version = schema_version(con)
    if version > SCHEMA_VERSION:
        raise UserError(f"{ledger_path()}: ledger schema {version} is newer than this program ({SCHEMA_VERSION})")
    for target in range(version, SCHEMA_VERSION):
        con.execute("BEGIN")
        con.execute(MIGRATIONS[target])
        con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target + 1)])
        con.execute("COMMIT")


# ---- refresh / rebuild -------------------------------------------------------------------


@dataclass
class RefreshStats:
    scanned: int = 0
    indexed: int = 0
    removed: int = 0
    unreadable: int = 0
    seconds: float = 0.0
    unreadable_runs: list[str] = field(default_factory=list)  # their names, for a warning


def refresh(
    prices: dict[str, tuple[float, float, float, float]] | None = None,
    *,
    rebuild: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshStats:
    """Bring the ledger up to date with the run folders (only changed runs are re-read)."""
    t0 = time.perf_counter()
    prices = prices or {}
    stats = RefreshStats()
    root = runs_dir()
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    stats.scanned = len(folders)
    fingerprint = prices_fingerprint(prices)  # the overrides and genai-prices' version
    with connect() as con:
        known = {
            r[0]: (r[1], r[2]) for r in con.execute("SELECT run_id, state_mtime, events_size FROM runs").fetchall()
        }
        row = con.execute("SELECT value FROM meta WHERE key = 'prices'").fetchone()
    if rebuild or (row[0] if row else None) != fingerprint:
        # new prices (or a forced rebuild): every run is read again, and the old rows are
        # replaced in the same transaction as the new ones, so readers never see an empty ledger
        stale_all = set(known)
        known = {}
    else:
        stale_all = set()
    # read the folders with no connection held, so other commands are not locked out meanwhile
    records: list[LedgerRows] = []
    present = set()
    for i, folder in enumerate(folders):
        present.add(folder.name)
        try:
            files = RunDir(folder)
            mtime = files.state_json.stat().st_mtime
            size = files.events.stat().st_size if files.events.exists() else 0
        except OSError:
            stats.unreadable += 1
            if os.path.lexists(files.state_json):  # (none: not a run, or one being made)
                stats.unreadable_runs.append(folder.name)
            continue
        if known.get(folder.name) == (mtime, size):
            continue
        try:
            rec = read_run(folder, prices)
        except OSError:  # one run's file the system refuses (a folder where events.jsonl should be): that run only
            rec = None
        if rec is None:
            stats.unreadable += 1
            stats.unreadable_runs.append(folder.name)
            continue
        records.append(rec)
        if progress and i % 500 == 0:
            progress(i, len(folders))
    gone = [r for r in (set(known) | stale_all) if r not in present]
    with connect() as con:
        con.execute("BEGIN")
        stale = sorted({r.row["run_id"] for r in records} | set(gone) | stale_all)
        if stale:
            con.execute("CREATE TEMP TABLE stale (run_id VARCHAR)")
            ap = con.appender("stale")
            ap.append_rows([(r,) for r in stale])
            ap.flush()
            for table in ("runs", "endings", "signals", "notifications", "guidance", "escalations"):
                con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM stale)")
        _append(con, "runs", [tuple(r.row[c] for c in RUN_COLUMNS) for r in records], RUN_COLUMNS)
        _append(con, "endings", [(r.row["run_id"], *r.ending) for r in records if r.ending], None)
        _append(con, "signals", [(r.row["run_id"], s, p) for r in records for s, p in r.signals], None)
        _append(con, "notifications", [(r.row["run_id"], *n) for r in records for n in r.notices], None)
        _append(con, "guidance", [(r.row["run_id"], *g) for r in records for g in r.guidance], None)
        _append(con, "escalations", [(r.row["run_id"], *e) for r in records for e in r.escalations], None)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('prices', ?)", [fingerprint])
        con.execute("COMMIT")
    stats.indexed = len(records)
    stats.removed = len([g for g in gone if g not in present])
    stats.seconds = time.perf_counter() - t0
    return stats


def _append(con: Any, table: str, rows: list[tuple[Any, ...]], columns: list[str] | None) -> None:
    if not rows:
        return
    ap = con.appender(table, columns=columns) if columns else con.appender(table)
    ap.append_rows(rows)
    ap.flush()


# ---- queries -----------------------------------------------------------------------------


def _filters(since: datetime | None, ticket: str | None, state: str | None) -> tuple[list[str], list[Any]]:
    """The WHERE clauses (on `runs r`) and their arguments shared by `history` and `history --by`."""
    where: list[str] = []
    args: list[Any] = []
    for clause, value in (("r.created_at >= ?", since), ("r.ticket_id = ?", ticket), ("r.state = ?", state)):
        if value is not None and value != "":
            where.append(clause)
            args.append(value)
    return where, args


def history(*, since: datetime | None, ticket: str | None, state: str | None, limit: int) -> list[dict[str, Any]]:
    where, args = _filters(since, ticket, state)
    sql = f"""
        SELECT r.run_id, r.ticket_id, r.bucket, r.agent, r.state, r.reason, r.created_at, r.wall_min,
               r.tool_calls, r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens AS tokens,
               r.cost_usd, r.unpriced_models, r.tripped_at_min, r.notified,
               coalesce((SELECT list(s.signal ORDER BY s.signal) FROM signals s WHERE s.run_id = r.run_id), []) AS signals
        FROM runs r {"WHERE " + " AND ".join(where) if where else ""}
        ORDER BY r.created_at DESC NULLS LAST, r.run_id DESC LIMIT {int(limit)}"""
    with connect(read_only=True) as con:
        cur = con.execute(sql, args)
        cols = [d[0] for d in cur.description]
        return [_jsonable(dict(zip(cols, row, strict=False))) for row in cur.fetchall()]


# `history --by`: the column each grouping reads
GROUP_BY = {"ending": "r.state", "ticket": "r.ticket_id", "agent": "r.agent", "bucket": "r.bucket"}


def history_groups(*, by: str, since: datetime | None, ticket: str | None, state: str | None) -> list[dict[str, Any]]:
    """One row per ending (state), ticket, agent or bucket over the runs `history` would list.

    Cost is null-safe: `cost_usd` and `mean_cost_usd` are over the priced runs only (null when
    there are none), `unpriced_runs` counts the runs with tokens but no price, never as $0;
    runs that reported no usage at all are neither. Largest groups first.
    """
    if by not in GROUP_BY:
        raise UserError(f"--by must be one of {', '.join(GROUP_BY)}, got {by!r}")
    where, args = _filters(since, ticket, state)
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
