"""The run ledger: a DuckDB index over the run folders (the only duckdb user).

The run folders stay the source of truth; the ledger can always be rebuilt
from them. DuckDB lets one process at a time hold the file read-write and
then refuses every other process, even read-only, so connections here are
short-lived and opening retries for a few seconds before giving up.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import LockBusy, held
from orchestrator.infra.paths import home, runs_dir
from orchestrator.ledger.prices import fingerprint as prices_fingerprint
from orchestrator.ledger.rows import LedgerRows, read_run
from orchestrator.record.layout import RunDir

SCHEMA_VERSION = 5
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
    # 4: the run's work handed back (issue 34, `deliver:`): its branch, commit, push and PR, or why not.
    """
    ALTER TABLE runs ADD COLUMN delivered_branch VARCHAR;
    ALTER TABLE runs ADD COLUMN delivered_commit VARCHAR;
    ALTER TABLE runs ADD COLUMN pushed_at TIMESTAMP;
    ALTER TABLE runs ADD COLUMN pr_url VARCHAR;
    ALTER TABLE runs ADD COLUMN delivery_error VARCHAR;
    DELETE FROM meta WHERE key = 'prices';
    """,
    # 5: feedback that measures us (issue 35, `feedback RUN useful|false-alarm`): every page a run
    # tripped (the first, then each later episode's) with the signals it named, and the verdict that
    # counts for each judged page (the latest), so `history --pages` and `calibrate` can tell the
    # precision of the pages by rule and by bucket (joined on runs). Every run is read again.
    """
    CREATE TABLE pages (run_id VARCHAR, episode INTEGER, tripped_at_min DOUBLE, signals VARCHAR[]);
    CREATE TABLE page_feedback (run_id VARCHAR, episode INTEGER, verdict VARCHAR, signals VARCHAR[],
                                given_at TIMESTAMP, via VARCHAR);
    DELETE FROM meta WHERE key = 'prices';
    """,
]

# the tables of run rows (each keyed by run_id), as a refresh replaces a run's
TABLES = ("runs", "endings", "signals", "notifications", "guidance", "escalations", "pages", "page_feedback")

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
    "delivered_branch",
    "delivered_commit",
    "pushed_at",
    "pr_url",
    "delivery_error",
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
            stack.enter_context(held(_lock_file(path), timeout=OPEN_RETRY_S))
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
        except duckdb.Error as exc:  # a damaged block ("Corrupt database file: computed checksum ..."), ...
            _set_aside(path, f"could not be opened ({_first_line(exc)})")
            read_only = False
            continue
        try:
            schema_version(con)  # a file cut short (a full disk, a copy stopped midway) opens, then fails here
            return con
        except duckdb.Error as exc:
            con.close()
            _set_aside(path, f"could not be read ({_first_line(exc)})")
            read_only = False


P = ParamSpec("P")
R = TypeVar("R")
_CORRUPT = ("corrupt database file", "checksum", "could not read enough bytes")


def recovering(operation: Callable[P, R]) -> Callable[P, R]:
    """A ledger operation that survives a damaged file: a block that fails its checksum in the middle of
    the file (found only when a query reads it) sets the ledger aside, rebuilds it from the run folders,
    and runs the operation once more. The ledger is only an index: nothing is lost."""

    @functools.wraps(operation)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        import duckdb

        try:
            return operation(*args, **kwargs)
        except duckdb.Error as exc:
            path = ledger_path()
            if not any(c in _first_line(exc).lower() for c in _CORRUPT) or not path.exists():
                raise
            with held(_lock_file(path), timeout=OPEN_RETRY_S):
                _set_aside(path, f"could not be read ({_first_line(exc)})")
        _refresh(rebuild=True)
        return operation(*args, **kwargs)

    return run


def _lock_file(path: Path) -> Path:
    """The lock every command takes around the ledger (DuckDB admits one process at a time)."""
    return path.parent / (path.name + ".lock")


def _first_line(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0]


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


def _refresh(
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
            for table in TABLES:
                con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM stale)")
        _append(con, "runs", [tuple(r.row[c] for c in RUN_COLUMNS) for r in records], RUN_COLUMNS)
        _append(con, "endings", [(r.row["run_id"], *r.ending) for r in records if r.ending], None)
        _append(con, "signals", [(r.row["run_id"], s, p) for r in records for s, p in r.signals], None)
        _append(con, "notifications", [(r.row["run_id"], *n) for r in records for n in r.notices], None)
        _append(con, "guidance", [(r.row["run_id"], *g) for r in records for g in r.guidance], None)
        _append(con, "escalations", [(r.row["run_id"], *e) for r in records for e in r.escalations], None)
        _append(con, "pages", [(r.row["run_id"], *p) for r in records for p in r.pages], None)
        _append(con, "page_feedback", [(r.row["run_id"], *f) for r in records for f in r.feedback], None)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('prices', ?)", [fingerprint])
        con.execute("COMMIT")
    stats.indexed = len(records)
    stats.removed = len([g for g in gone if g not in present])
    stats.seconds = time.perf_counter() - t0
    return stats


refresh = recovering(_refresh)


def _append(con: Any, table: str, rows: list[tuple[Any, ...]], columns: list[str] | None) -> None:
    if not rows:
        return
    ap = con.appender(table, columns=columns) if columns else con.appender(table)
    ap.append_rows(rows)
    ap.flush()
