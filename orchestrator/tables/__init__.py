"""Readable renderings of command results: rich tables, and plain lines."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from orchestrator.infra.printable import printable
from orchestrator.runs import events
from orchestrator.tables.status import SIGNAL_CODES, StatusTable, status_table

__all__ = ["SIGNAL_CODES", "StatusTable", "status_table"]  # status's table lives in tables/status.py

if TYPE_CHECKING:
    from orchestrator.ledger.calibrate import Calibration
    from orchestrator.ledger.store import RefreshStats
    from orchestrator.runs.view import RunView


def replay_table(results: list[dict[str, Any]], console: Console) -> None:
    table = Table(show_lines=False)
    for col in ("case", "expect", "got", "paged at", "signals", "susp", "result"):
        table.add_column(col)
    for r in results:
        got = "page" if r["spiral"] else "quiet"
        exp = "page" if r["expected_spiral"] else "quiet"
        at = f"{r['notified_at_min']:g} min" if r["notified_at_min"] is not None else "-"
        ok = (
            Text("pass", style="green") if r["pass"] else Text.assemble(("FAIL", "red"), " " + "; ".join(r["failures"]))
        )
        table.add_row(*_plain(r["id"], exp, got, at, ", ".join(r["signals"]) or "-", f"{r['suspicion']:g}"), ok)
    console.print(table)


def replay_detail(r: dict[str, Any], console: Console) -> None:
    replay_table([r], console)
    for line in r["evidence"]:
        console.print(f"  - {printable(line)}", markup=False, highlight=False)
    if r["skipped_lines"]:
        console.print(f"  ({r['skipped_lines']} unreadable log lines skipped)")


def eval_summary(summary: dict[str, Any], console: Console) -> None:
    replay_table(summary["cases"], console)
    for b in summary.get("broken", []):
        console.print(f"[red]BROKEN[/] {escape(printable(b['case']))}: {escape(printable(b['error']))}")
    console.print(
        f"{summary['passed']} passed, {summary['failed']} failed"
        + (f" ({len(summary['broken'])} could not be replayed)" if summary.get("broken") else "")
        + f"  |  tp {summary['tp']} fp {summary['fp']} "
        f"tn {summary['tn']} fn {summary['fn']}  |  precision {summary['precision']:.2f} "
        f"recall {summary['recall']:.2f} fpr {summary['fpr']:.2f}"
    )


def _plain(*cells: str) -> list[Text]:
    """Cells shown as they are: a ticket id, a reason or a query's value is data, never rich markup
    (`[/]` in one stopped `history` with a traceback), and never a terminal escape."""
    return [Text(printable(c)) for c in cells]


def no_runs_yet() -> str:
    from orchestrator.infra.cli_name import CLI
    from orchestrator.infra.paths import runs_dir

    return f"no runs yet in {runs_dir()}; start one with `{CLI} launch TICKET` or try `{CLI} demo`"


def unchecked(views: Iterable[RunView]) -> list[str]:
    """Warning lines (for stderr) for the runs a pass could not look at."""
    return [f"warning: run {v.run_id} could not be checked: {v.error}\n" for v in views if v.error]


def watch_events(views: Iterable[RunView]) -> list[str]:
    """What a watcher pass did worth a line: stops, trips, pages (not the routine evaluations)."""
    return [f"{v.run_id}: {ev}" for v in views for ev in v.events if ev.kind not in events.QUIET]


def history_table(rows: list[dict[str, Any]]) -> Table:
    table = Table()
    cols = ("run", "ticket", "bucket", "state", "launched", "wall", "calls", "tokens", "cost", "signals", "page")
    delivered = any(r.get("delivered_branch") for r in rows)  # a column only when some run delivered
    for col in (*cols, "delivered") if delivered else cols:
        table.add_column(col, no_wrap=col in ("run", "launched"))
    for r in rows:
        cost = (
            "unpriced"
            if r["cost_usd"] is None and r["tokens"]
            else ("-" if r["cost_usd"] is None else f"${r['cost_usd']:.2f}")
        )
        page = "sent" if r["notified"] else ("undelivered" if r["tripped_at_min"] is not None else "-")
        table.add_row(
            *_plain(
                r["run_id"],
                r["ticket_id"] or "-",
                r["bucket"] or "-",
                f"{r['state']}" + (f" ({r['reason']})" if r["reason"] and r["state"] != "succeeded" else ""),
                (r["created_at"] or "-")[:16].replace("T", " "),
                "-" if r["wall_min"] is None else f"{r['wall_min']:.0f} min",
                "-" if r["tool_calls"] is None else str(r["tool_calls"]),
                f"{r['tokens']:,}" if r["tokens"] else "-",
                cost,
                ", ".join(r["signals"]) or "-",
                page,
                *([_delivered(r)] if delivered else []),
            )
        )
    return table


def _delivered(r: dict[str, Any]) -> str:
    """A run's delivery in a cell: its PR, `pushed` (its branch is orchestrator/<run>), or a failure."""
    if not r.get("delivered_branch"):
        return "-"
    if r.get("pushed_at") is None:
        return "push failed"
    return str(r.get("pr_url") or "pushed") + (" (PR command failed)" if r.get("delivery_error") else "")


def history_groups_table(by: str, groups: list[dict[str, Any]]) -> Table:
    """`history --by`: one row per group; cost over the priced runs, the unpriced ones counted apart."""
    table = Table()
    for col in (by, "runs", "paged", "tokens", "cost", "mean cost", "unpriced", "median wall"):
        table.add_column(col, justify="left" if col == by else "right", no_wrap=col == by)
    for g in groups:
        priced = g["priced_runs"]
        some = f" ({priced} of {g['runs']} priced)" if priced and priced < g["runs"] else ""
        table.add_row(
            Text("-" if g["group"] is None else str(g["group"])),
            str(g["runs"]),
            str(g["paged"]) if g["paged"] else "-",
            f"{g['tokens']:,}" if g["tokens"] else "-",
            "-" if g["cost_usd"] is None else f"${g['cost_usd']:.2f}{some}",
            "-" if g["mean_cost_usd"] is None else f"${g['mean_cost_usd']:.2f}",
            str(g["unpriced_runs"]) if g["unpriced_runs"] else "-",
            "-" if g["median_wall_min"] is None else f"{g['median_wall_min']:.1f} min",
        )
    return table


def page_precision_table(pp: dict[str, Any]) -> Table:
    """`history --pages` (ledger/pages.py's to_dict): all pages, then one row per rule, then per bucket."""
    table = Table()
    for col in ("pages of", "pages", "judged", "useful", "false alarms", "precision", "unjudged"):
        table.add_column(col, justify="left" if col == "pages of" else "right", no_wrap=col == "pages of")

    def row(label: str, t: dict[str, Any]) -> None:
        p = t["precision"]
        figures = (t["pages"], t["judged"], t["useful"], t["false_alarms"])
        table.add_row(Text(label), *map(str, figures), "-" if p is None else f"{100 * p:.0f}%", str(t["unjudged"]))

    row("all", pp["all"])
    for key in ("rule", "bucket"):
        table.add_section()
        for t in pp[f"by_{key}"]:
            row(f"{key} {printable(str(t[key] if t[key] is not None else '-'))}", t)
    return table


def sql_table(cols: list[str], rows: list[tuple[Any, ...]]) -> Table:
    table = Table()
    for c in cols:
        table.add_column(c)
    for row in rows:
        table.add_row(*_plain(*("NULL" if v is None else str(v) for v in row)))
    return table


def calibration_lines(cal: Calibration) -> list[str]:
    """Per bucket: the succeeded runs' spread and the current -> proposed timings, or why none; then,
    once people have judged pages, the rules behind the false alarms."""
    out = []
    for p in cal.proposals:
        cur = p.current
        head = f"{p.bucket}: {p.runs} succeeded runs"
        if p.proposed is None:
            out.append(
                f"{head}; need at least {cal.min_runs} to propose (keeping {cur.expected_min:g} / "
                f"{cur.soft_start_min:g} / {cur.stuck_min:g} min)"
            )
            continue
        new = p.proposed
        out.append(f"{head}, median {p.median:.1f} min, p90 {p.p90:.1f} min, longest {p.longest:.1f} min")
        if p.calls is not None:
            out.append(f"    tool calls: median {p.calls[0]:g}, p90 {p.calls[1]:g}, most {p.calls[2]}")
        rows: list[tuple[str, float, float]] = [
            ("expected_min", cur.expected_min, new.expected_min),
            ("soft_start_min", cur.soft_start_min, new.soft_start_min),
            ("stuck_min", cur.stuck_min, new.stuck_min),
        ]
        if new.expected_calls or cur.expected_calls:
            rows += [
                ("expected_calls", cur.expected_calls, new.expected_calls),
                ("soft_start_calls", cur.soft_start_calls, new.soft_start_calls),
                ("stuck_calls", cur.stuck_calls, new.stuck_calls),
            ]
        for label, a, b in rows:
            mark = "  " if a == b else "->"
            out.append(f"    {label:<16} {a:>6g} {mark} {b:g}")
    if cal.false_alarms:
        said = [f"{r['rule']} {r['false_alarms']} of {r['judged']}" for r in cal.false_alarms]
        out.append(f"false alarms by rule: {said[0]} judged pages" + "".join(f", {x}" for x in said[1:]))
    return out


def import_summary(out: Path, summary: dict[str, Any]) -> str:
    return (
        f"wrote {out}: {summary['lines']} lines, {summary['tool_calls']} tool calls, "
        f"{summary['skipped']} skipped, {summary['minutes']:.1f} min"
        + (f"; secrets redacted in {summary['redacted']} strings" if summary.get("redacted") else "")
    )


def rebuild_summary(path: Path, stats: RefreshStats) -> str:
    return (
        f"{path}: {stats.indexed} runs indexed from {stats.scanned} folders "
        f"({stats.unreadable} unreadable) in {stats.seconds:.2f} s"
    )
