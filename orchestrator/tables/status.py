"""`status`'s table: laid out for the width it is printed at (80 columns, a phone), or --wide."""

from __future__ import annotations

import re
import time
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from orchestrator.infra.printable import printable
from spiral.timestamps import parse_ts


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f}s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def _spend(r: dict[str, Any]) -> str:
    ceiling = "".join(
        (
            f" /${r['max_usd']:g}" if r.get("max_usd") is not None else "",
            f" /{r['max_tokens'] / 1000:g}k" if r.get("max_tokens") is not None else "",
        )
    )
    if not r.get("tokens"):
        return "-" + ceiling
    cost = "unpriced" if r.get("cost_usd") is None else f"${r['cost_usd']:.2f}"
    return f"{r['tokens'] / 1000:.0f}k tok {cost}{ceiling}"


# one letter per signal for the narrow table; a legend under it names the ones shown
SIGNAL_CODES = {
    "debris": "D",
    "repetition": "R",
    "mutation_stall": "M",
    "sustained_bash": "B",
    "polling": "P",
    "same_error": "E",
    "drift": "F",
    "stuck_check": "C",
}
_STATE_COLOURS = {
    "running": "cyan",
    "succeeded": "green",
    "failed": "red",
    "stalled": "yellow",
    "killed": "magenta",
    "lost": "red",
    "over_budget": "red",
    "no_change": "yellow",
    "gave_up": "red",
    "queued": "blue",
    "launching": "cyan",
}
_REGION_COLOURS = {"soft": "yellow", "stuck": "red"}
_GLANCE = ("run", "state", "elapsed", "signals", "page", "note", "last")
_GAP = 2  # between two columns of the glance table (box.SIMPLE_HEAD, collapsed padding)
_RUN_WANT, _NOTE_WANT = 20, 40  # a note column narrower than this would cut notes: they go under their runs
_RUN_MIN = 12  # a run id narrower than this and each run becomes a few lines of its own (a phone)


class StatusTable:
    """`status`'s table, laid out for the width it is printed at.

    Wide enough (an 80-column terminal): one line per run, signals as one-letter codes with
    their suspicion, a note column for the ending's reason or what else needs saying, and a
    legend of the codes shown. Narrower (a phone over SSH): a few short lines per run.
    `wide`: every column of the full record (ticket, bucket, spend and ceilings, guidance...).
    """

    def __init__(self, rows: list[dict[str, Any]], wide: bool = False) -> None:
        self.rows = rows
        self.wide = wide

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield _wide_table(self.rows, options.max_width) if self.wide else _glance_table(self.rows, options.max_width)


def status_table(rows: list[dict[str, Any]], wide: bool = False) -> StatusTable:
    return StatusTable(rows, wide)


def _glance_table(rows: list[dict[str, Any]], width: int) -> RenderableType:
    """One line per run; the note in a column of its own when it has the room, else on a line under its run."""
    cells = [_glance_cells(r) for r in rows]
    natural = [max([len(c)] + [row[i].cell_len for row in cells]) for i, c in enumerate(_GLANCE)]
    run_w, note_w = natural[0], natural[5]
    room = width - sum(natural) + run_w + note_w - _GAP * (len(_GLANCE) - 1)  # for the run id and the note
    ids = [r["id"] for r in rows]
    if room - min(run_w, _RUN_WANT) >= min(note_w, _NOTE_WANT):  # the notes whole, or a wide column for them
        run_w = min(run_w, max(_RUN_WANT, room - note_w))
        widths = natural[:5] + [room - run_w if note_w > room - run_w else note_w, natural[6]]
        table = _glance_frame(_GLANCE, [run_w, *widths[1:]], _legend(rows, _shorten_ids(cells, ids, run_w)))
        for row in cells:
            table.add_row(*row)
        return table
    run_w = min(run_w, room + _GAP)  # the note goes under its run: its column's room is the run's
    if run_w < _RUN_MIN:
        return _phone_table(rows, cells, width)
    columns = [c for c in _GLANCE if c != "note"]
    widths = [run_w, *natural[1:5], natural[6]]
    legend = _legend(rows, _shorten_ids(cells, ids, run_w))
    parts: list[RenderableType] = []
    for i, (*first, note, last) in enumerate(cells):
        # a table per run, all of the same column widths, so that a note can take a whole line between them
        table = _glance_frame(columns, widths, None, header=i == 0)
        table.add_row(*first, last)
        parts.append(table)
        if note.plain != "-":
            parts.append(Text.assemble("  └ ", note, no_wrap=True, overflow="ellipsis"))
    if legend:
        parts.append(Text(legend, style="dim"))
    return Group(*parts)


def _glance_frame(
    columns: list[str] | tuple[str, ...], widths: list[int], legend: str | None, header: bool = True
) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        show_header=header,
        pad_edge=False,
        collapse_padding=True,
        caption=legend,
        caption_justify="left",
        caption_style="dim",
    )
    for name, w in zip(columns, widths, strict=True):
        # fixed widths: every column holds its cells whole but the run id and the note, cut with an ellipsis
        table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=w, max_width=w)
    return table


def _phone_table(rows: list[dict[str, Any]], cells: list[list[Text]], width: int) -> Table:
    """A few lines per run: the run, its state and signals; elapsed, last activity, page; the note."""
    table = Table(box=None, show_header=False, padding=(0, 0, 1, 0), caption_justify="left", caption_style="dim")
    table.add_column(no_wrap=True, overflow="ellipsis", max_width=width)
    shortened = False
    for r, (run, state, elapsed, signals, page, note, last) in zip(rows, cells, strict=True):
        head = Text.assemble(" ", state, *((" ", signals) if signals.plain != "-" else ()))
        run = Text(r["id"], style="bold")
        if run.cell_len + head.cell_len > width:
            cut = _short_id(r["id"], [x["id"] for x in rows], max(4, width - head.cell_len))
            run, shortened = Text(cut, style="bold"), True
        lines = [Text.assemble(run, head)]
        lines.append(Text.assemble("  ", elapsed, "  ", last, "  page ", page))
        if note.plain != "-":
            lines.append(Text.assemble("  ", note))
        table.add_row(Text("\n").join(lines))
    table.caption = _legend(rows, shortened)
    return table


def _glance_cells(r: dict[str, Any]) -> list[Text]:
    state = Text(r["state"], style=_STATE_COLOURS.get(r["state"], "white"))
    if r.get("error"):
        state = Text("error", style="red")
    elif r["state"] == "queued" and r.get("queue_position"):
        state.append(f" #{r['queue_position']}")
    region = r.get("region") or "healthy"
    elapsed = Text(f"{r['elapsed_min']:.0f}/{r['expected_min']:g}m")
    if r.get("evaluating"):  # its cache is being rebuilt: the row is as last recorded
        elapsed.append(f" evaluating ({r['evaluating']})", style="cyan")
    elif region != "healthy":
        elapsed.append(f" {region}", style=_REGION_COLOURS.get(region, ""))
    codes = _codes(r.get("signals") or []) or _codes(r.get("hints") or []).lower()
    susp = r.get("suspicion") or 0
    signals = Text(" ".join(x for x in (codes, f"{susp:.3g}" if susp else "") if x) or "-")
    return [
        Text(r["id"]),
        state,
        elapsed,
        signals,
        _page(r, "{:.0f}"),
        _note(r),
        Text(_ago(r.get("last_activity_real_s"))),
    ]


def _codes(names: list[str]) -> str:
    return "".join(SIGNAL_CODES.get(n, f"[{n}]") for n in names)


def _page(r: dict[str, Any], number: str = "{:g}") -> Text:
    at = r.get("tripped_at_min")
    if r.get("notified"):
        return Text(f"sent @{number.format(at)}m")
    if at is None:
        return Text("-")
    if r.get("page_error"):
        return Text.assemble(("undelivered", "red"), f" @{number.format(at)}m")
    return Text(f"due @{number.format(at)}m")


def _note(r: dict[str, Any]) -> Text:
    """What else a glance needs: why it could not be read, the provider, the hold, the spend near
    its ceiling, why it ended, the latest guidance, an unchecked success."""
    parts: list[Text] = []
    if r.get("setting_up"):
        parts.append(Text("setting up", style="cyan"))
    if r.get("error"):
        parts.append(Text(printable(str(r["error"])), style="red"))
    if r.get("provider"):
        parts.append(Text(printable(f"provider: {r['provider']['text']}"), style="yellow"))
    if r.get("held"):
        parts.append(Text("held: daily ceiling", style="yellow"))
    if _near_ceiling(r):
        parts.append(Text(_spend(r)))
    if r.get("reason") and r["state"] not in ("succeeded", "over_budget") and not r.get("error"):
        parts.append(Text(printable(str(r["reason"]))))
    if r.get("guidance"):
        parts.append(Text.from_markup(_guidance(r)))
    if r["state"] == "succeeded" and "verified" in r and r["verified"] is None:
        parts.append(Text("unverified", style="yellow"))  # the agent's own word: the ticket has no `verify:` check
    if r.get("delivered"):
        d = r["delivered"]
        done = d.get("pr_url") or (f"pushed {d['branch']}" if d.get("pushed_at") else None)
        parts.append(Text(printable(done), style="green") if done else Text("delivery failed", style="red"))
    # a notice other than the page (an ending's, the budget's...) that has not reached anyone: said, not `-`
    undelivered = [
        k for k, n in (r.get("notices") or {}).items() if k != "spiral" and not n["delivered"] and n["last_error"]
    ]
    if undelivered:
        parts.append(Text(f"{', '.join(undelivered)} notice undelivered", style="red"))
    return Text("; ").join(parts) if parts else Text("-")


def _near_ceiling(r: dict[str, Any]) -> bool:
    """Spend is worth a glance once it reaches budget.WARN_AT of a ceiling (or stopped the run)."""
    if r["state"] == "over_budget":
        return True
    shares = [
        (r.get("cost_usd") or 0) / r["max_usd"] if r.get("max_usd") else 0,
        (r.get("tokens") or 0) / r["max_tokens"] if r.get("max_tokens") else 0,
    ]
    return max(shares) >= 0.7


def _shorten_ids(cells: list[list[Text]], ids: list[str], width: int) -> bool:
    short = False
    for row, run_id in zip(cells, ids, strict=True):
        if len(run_id) > width:
            row[0], short = Text(_short_id(run_id, ids, width)), True
    return short


def _short_id(run_id: str, ids: list[str], width: int) -> str:
    """The id cut to `width`: its first characters and an ellipsis while they are a unique prefix
    (which `logs`, `nudge` and `kill` take), else its start, an ellipsis and its timestamp's tail."""
    head = run_id[: max(1, width - 1)]
    if width < 8 or not any(o != run_id and o.startswith(head) for o in ids):
        return head + "…"
    tail = run_id[-6:] if not run_id[-2:-1] == "-" else run_id[-8:]  # HHMMSS, or HHMMSS-n
    return run_id[: max(1, width - 1 - len(tail))] + "…" + tail


def _legend(rows: list[dict[str, Any]], shortened: bool) -> str | None:
    seen = {n for r in rows for n in r.get("signals") or []}
    hinted = {n for r in rows if not r.get("signals") for n in r.get("hints") or []}
    names = [n for n in SIGNAL_CODES if n in seen | hinted] + sorted((seen | hinted) - set(SIGNAL_CODES))
    parts = [f"{SIGNAL_CODES[n]}={n}" for n in names if n in SIGNAL_CODES]
    if hinted:
        parts.append("lowercase: seen before it was stopped")
    if shortened:
        parts.append("…=id cut short (--wide: whole)")
    return "  ".join(parts) or None


# --wide's columns
_WIDE = (
    "run",
    "ticket",
    "bucket",
    "state",
    "elapsed",
    "region",
    "signals",
    "susp",
    "page",
    "guidance",
    "spend",
    "reason",
    "last",
    "on",
)


def _wide_table(rows: list[dict[str, Any]], width: int) -> Table:
    """Every fact the status table has had, the ending's reason too: in columns when the width holds them
    all (about 140), else one block of `field value` lines per run, so that nothing is dropped or cut."""
    cells = [_wide_cells(r) for r in rows]
    # each column at least as wide as its longest word (a signal's name, a header, a run id stay whole)
    least = [
        max(len(max(re.split(r"[ ,]+", c.plain), key=len)) for c in (Text(h), *col))
        for h, *col in zip(_WIDE, *cells, strict=True)
    ]
    short = [max(len(h), *(c.cell_len for c in col)) for h, *col in zip(_WIDE, *cells, strict=True)]
    for k, name in enumerate(_WIDE):
        if name in ("run", "bucket", "elapsed", "susp", "page", "last"):
            least[k] = short[k]  # short facts stay on one line
    least[1] = min(least[1], 6)  # a ticket's id folds (the run id holds it whole)
    if width < sum(least) + _GAP * (len(least) - 1):
        table = Table(box=None, show_header=False, pad_edge=False, collapse_padding=True)
        table.add_column(no_wrap=True, style="dim")
        table.add_column(overflow="fold")
        for i, (run, *rest) in enumerate(cells):
            table.add_row(Text(r"run", style="bold"), Text.assemble((run.plain, "bold"), "  ", rest[2]))
            for name, cell in zip(_WIDE[1:], rest, strict=True):
                if name != "state":
                    table.add_row(name, cell)
            if i < len(cells) - 1:
                table.add_row("", "")
        return table
    widths = short
    while sum(widths) > width - _GAP * (len(widths) - 1):  # narrow the widest column that can wrap, a step at a time
        i = max((k for k in range(len(widths)) if widths[k] > least[k]), key=lambda k: widths[k])
        widths[i] -= 1
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for name, w in zip(_WIDE, widths, strict=True):
        table.add_column(name, overflow="fold" if name == "ticket" else "ellipsis", min_width=w, max_width=w)
    for row in cells:
        table.add_row(*row)
    return table


def _wide_cells(r: dict[str, Any]) -> list[Text]:
    state = Text(r["state"], style=_STATE_COLOURS.get(r["state"], "white"))
    if r["state"] == "succeeded" and "verified" in r and r["verified"] is None:
        state.append(" unverified", style="yellow")  # the agent's own word: the ticket has no `verify:` check
    if r.get("error"):
        state = Text.assemble(("error", "red"), f" ({r['state']})")
    elif r["state"] == "queued" and r.get("queue_position"):
        state.append(f" #{r['queue_position']}")
        if r.get("held"):
            state.append(" (held: daily ceiling)", style="yellow")
    hints = r.get("hints") or []
    signals = ", ".join(r["signals"]) or ("hints: " + ", ".join(hints) if hints else "-")
    # the agent waiting on its model API is the provider's trouble, not a spiral: say so where the region goes
    region = Text(f"provider: {r['provider']['text']}", "yellow") if r.get("provider") else Text(r["region"])
    if r.get("evaluating"):
        region = Text(f"evaluating ({r['evaluating']})", "cyan")
    return [
        Text(r["id"]),
        Text(str(r.get("ticket") or "-")),
        Text(str(r.get("bucket") or "-")),
        state,
        Text(f"{r['elapsed_min']:.0f}/{r['expected_min']:g} min"),
        region,
        Text(signals),
        Text(f"{r['suspicion']:g}"),
        _page(r),
        Text.from_markup(_guidance(r)),
        Text(_spend(r)),
        Text(printable(str(r.get("error") or r.get("reason") or "-"))),
        Text(_ago(r.get("last_activity_real_s"))),
        Text(str(r.get("executes_on") or "-")),  # where it executes: local:<host>, ray:<node>
    ]


def _guidance(r: dict[str, Any]) -> str:
    """The latest message to the agent and where it stands: queued 2m ago / received @71.5m / undelivered."""
    sent = r.get("guidance") or []
    if not sent:
        return "-"
    g = sent[-1]
    more = f" (+{len(sent) - 1} earlier)" if len(sent) > 1 else ""
    who = "ladder " if g.get("by") == "escalation" else ""
    if g.get("undelivered"):
        return f"[red]{who}{g['id']} undelivered[/]{more}"
    if g.get("received_at_min") is not None:
        answer = f", {g['answer']}" if g.get("answer") else ""
        return f"{who}{g['id']} received @{g['received_at_min']:g}m{answer}{more}"
    queued = parse_ts(g.get("queued_at"))
    ago = _ago(time.time() - queued) if queued is not None else "?"
    return f"{who}{g['id']} queued {ago}{more}"
