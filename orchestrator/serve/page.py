"""The live page: the rows drawn as an HTML table, refreshed by a little script polling /api/runs.

Everything shown comes from agents' logs (run ids, reasons, evidence): the table is
escaped here, and the script only ever sets text (never HTML), under a Content Security
Policy that allows no script but its own.

Read on a phone as often as on a desk (a page arrives, the person opens this): the most
urgent runs come first (`by_urgency`, and the script's `byUrgency` in the same order), a
live run whose detector tripped is marked `hot`, and up to 1000 px (a phone, a tablet: the
twelve columns need about that much) each row is a card of labelled cells (`data-label`)
that never scrolls sideways.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from typing import Any
from urllib.parse import quote

POLL_MS = 3000
COLUMNS = [
    "run",
    "ticket",
    "agent",
    "bucket",
    "state",
    "reason",
    "elapsed",
    "region",
    "signals",
    "page",
    "last",
    "spend",
]
LIVE = ("launching", "running")  # the agent is (about to be) at work
WAITING = ("queued",)

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
p.note { color: #666; margin: 0 0 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .5em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; }
td.reason, td.evidence { min-width: 10em; max-width: 28em; overflow-wrap: anywhere; }
td.c-run, td.c-ticket, td.c-page { min-width: 4em; overflow-wrap: anywhere; }
td.c-state, td.c-bucket, td.c-last, td.c-spend { white-space: nowrap; }
ul.evidence { margin: .2em 0 0; padding-left: 1.2em; color: #555; font-size: .9em; }
.s-running, .s-launching { color: #06c; } .s-succeeded { color: #080; }
.s-failed, .s-lost, .s-killed, .s-over_budget, .s-gave_up, .s-unreadable { color: #b00; } .s-no_change { color: #a60; } .s-queued { color: #888; }
.r-soft { background: #fff6d5; } .r-stuck { background: #fde2e2; }
tr.hot { background: #fdd; } tr.hot td:first-child { box-shadow: inset 4px 0 #c00; } tr.hot td.c-page { color: #b00; font-weight: 600; }
#status.stale { color: #b00; }
@media (max-width: 1000px) {
  body { margin: .7em; }
  table, tbody, tr, td { display: block; width: auto; }
  thead { display: none; }
  tr { border: 1px solid #ccc; border-radius: 6px; margin: 0 0 .7em; padding: .35em .6em; }
  tr.hot { border: 2px solid #c00; }
  tr.hot td:first-child { box-shadow: none; }
  td, td.reason { border: 0; padding: .1em 0 .1em 5.8em; position: relative; max-width: none; overflow-wrap: anywhere; }
  td.c-state, td.c-bucket, td.c-last, td.c-spend { white-space: normal; }
  td:empty { display: none; }
  td::before { content: attr(data-label); position: absolute; left: 0; width: 5.3em; color: #777; font-size: .85em; line-height: 1.65; }
  td.c-run { font-weight: 600; }
}
"""

SCRIPT = (
    """
(function () {
  "use strict";
  var POLL = __POLL_MS__, LABELS = __COLUMNS__, LIVE = __LIVE__, WAITING = __WAITING__;
  function set(x) { return x !== null && x !== undefined; }
  // as by_urgency in page.py: a live run that paged (or should have) first, then the others at work or
  // queued, then the rest, each group in the order the server gave
  function hot(r) { return LIVE.indexOf(r.state) >= 0 && Boolean(r.notified || r.page_error || set(r.tripped_at_min) || r.at_threshold); }
  function urgency(r) { return hot(r) ? 0 : (LIVE.indexOf(r.state) >= 0 || WAITING.indexOf(r.state) >= 0) ? 1 : 2; }
  function byUrgency(runs) {
    return runs.map(function (r, i) { return [urgency(r), i, r]; })
      .sort(function (a, b) { return (a[0] - b[0]) || (a[1] - b[1]); })
      .map(function (x) { return x[2]; });
  }
  function num(x, d) { return (x === null || x === undefined) ? "" : Number(x).toFixed(d); }
  function ago(s) {
    if (s === null || s === undefined) return "";
    if (s < 90) return Math.round(s) + "s ago";
    if (s < 5400) return Math.round(s / 60) + "m ago";
    return (s / 3600).toFixed(1) + "h ago";
  }
  function spend(r) {
    if (r.cost_usd !== null && r.cost_usd !== undefined) return "$" + Number(r.cost_usd).toFixed(2);
    if (r.tokens !== null && r.tokens !== undefined) return r.tokens + " tok (unpriced)";
    return "";
  }
  function page(r) {
    if (r.page_error) return "failed: " + r.page_error;
    if (r.notified) return "sent";
    if (set(r.tripped_at_min)) return "due";
    return "";
  }
  function state(r) {
    return r.state + (r.queue_position ? " #" + r.queue_position : "") + (r.held ? " (held)" : "");
  }
  function cell(tr, text, cls) {  // the next column's cell, labelled for the phone's cards
    var td = document.createElement("td"), label = LABELS[tr.cells.length];
    td.textContent = text;
    td.className = "c-" + label + (cls ? " " + cls : "");
    td.setAttribute("data-label", label);
    tr.appendChild(td);
    return td;
  }
  function row(r) {
    var tr = document.createElement("tr");
    tr.className = "r-" + String(r.region || "") + (hot(r) ? " hot" : "");
    var td = cell(tr, ""), a = document.createElement("a");
    a.href = "/runs/" + encodeURIComponent(r.id);
    a.textContent = r.id;
    td.appendChild(a);
    cell(tr, r.ticket || ""); cell(tr, r.agent || ""); cell(tr, r.bucket || "");
    cell(tr, state(r), "s-" + String(r.state));
    var why = cell(tr, r.error ? "error: " + r.error : (r.reason || ""), "reason");
    if ((r.evidence || []).length) {
      var ul = document.createElement("ul");
      ul.className = "evidence";
      r.evidence.forEach(function (e) { var li = document.createElement("li"); li.textContent = e; ul.appendChild(li); });
      why.appendChild(ul);
    }
    cell(tr, num(r.elapsed_min, 1) + " / " + num(r.expected_min, 0) + " min");
    cell(tr, r.region || "");
    cell(tr, (r.signals || []).join(", ") + (r.suspicion ? " (" + num(r.suspicion, 2) + ")" : ""));
    cell(tr, page(r)); cell(tr, ago(r.last_activity_real_s != null ? r.last_activity_real_s : r.last_activity_s)); cell(tr, spend(r));
    return tr;
  }
  function show(data) {
    var body = document.getElementById("rows");
    var fresh = document.createElement("tbody");
    fresh.id = "rows";
    byUrgency(data.runs).forEach(function (r) { fresh.appendChild(row(r)); });
    body.parentNode.replaceChild(fresh, body);
    document.getElementById("empty").hidden = data.runs.length > 0;
    var st = document.getElementById("status");
    st.textContent = "updated " + new Date().toLocaleTimeString() + ", " + data.runs.length + " runs";
    st.className = "";
  }
  function poll() {
    fetch("/api/runs", {credentials: "same-origin", cache: "no-store"})
      .then(function (res) { if (!res.ok) throw new Error("HTTP " + res.status); return res.json(); })
      .then(show)
      .catch(function (err) {
        var st = document.getElementById("status");
        st.textContent = "not updated: " + err.message;
        st.className = "stale";
      })
      .then(function () { setTimeout(poll, POLL); });
  }
  setTimeout(poll, POLL);
})();
""".replace("__POLL_MS__", str(POLL_MS))
    .replace("__COLUMNS__", json.dumps(COLUMNS))
    .replace("__LIVE__", json.dumps(LIVE))
    .replace("__WAITING__", json.dumps(WAITING))
)


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (
    f"default-src 'none'; script-src {_hash(SCRIPT)}; style-src {_hash(STYLE)}; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _num(x: Any, digits: int) -> str:
    return "" if x is None else f"{float(x):.{digits}f}"


def _ago(s: float | None) -> str:
    if s is None:
        return ""
    if s < 90:
        return f"{round(s)}s ago"
    if s < 5400:
        return f"{round(s / 60)}m ago"
    return f"{s / 3600:.1f}h ago"


def _first(*xs: Any) -> Any:
    return next((x for x in xs if x is not None), None)


def _spend(r: dict[str, Any]) -> str:
    if r.get("cost_usd") is not None:
        return f"${r['cost_usd']:.2f}"
    if r.get("tokens") is not None:
        return f"{r['tokens']} tok (unpriced)"
    return ""


def _page(r: dict[str, Any]) -> str:
    if r.get("page_error"):
        return f"failed: {r['page_error']}"
    if r.get("notified"):
        return "sent"
    return "due" if r.get("tripped_at_min") is not None else ""


def _state(r: dict[str, Any]) -> str:
    return (
        f"{r['state']}"
        + (f" #{r['queue_position']}" if r.get("queue_position") else "")
        + (" (held)" if r.get("held") else "")
    )


def _e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def hot(r: dict[str, Any]) -> bool:
    """A live run at the threshold: its suspicion is at or over it now (`at_threshold`, in any band), or
    it paged (sent, due or failed)."""
    paged = r.get("notified") or r.get("page_error") or r.get("tripped_at_min") is not None
    return r.get("state") in LIVE and bool(paged or r.get("at_threshold"))


def urgency(r: dict[str, Any]) -> int:
    """0: a live run that paged; 1: the others at work or queued; 2: the rest (ended, unreadable)."""
    if hot(r):
        return 0
    return 1 if r.get("state") in LIVE + WAITING else 2


def by_urgency(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows most urgent first, each group in the order given (the script's `byUrgency` sorts alike)."""
    return sorted(rows, key=urgency)


def row_html(r: dict[str, Any]) -> str:
    """One run as a table row, every text escaped (the script draws the same from /api/runs)."""
    why = f"error: {r['error']}" if r.get("error") else (r.get("reason") or "")
    evidence = r.get("evidence") or []
    ev = ('<ul class="evidence">' + "".join(f"<li>{_e(e)}</li>" for e in evidence) + "</ul>") if evidence else ""
    suspicion = f" ({_num(r['suspicion'], 2)})" if r.get("suspicion") else ""
    link = f"/runs/{quote(str(r['id']), safe='')}"  # its run page (which links to the report)
    cells = [  # (extra class, inner HTML), one per column
        ("", f'<a href="{_e(link)}">{_e(r["id"])}</a>'),
        ("", _e(r.get("ticket") or "")),
        ("", _e(r.get("agent") or "")),
        ("", _e(r.get("bucket") or "")),
        (f"s-{_e(r['state'])}", _e(_state(r))),
        ("reason", f"{_e(why)}{ev}"),
        ("", f"{_num(r.get('elapsed_min'), 1)} / {_num(r.get('expected_min'), 0)} min"),
        ("", _e(r.get("region") or "")),
        ("", f"{_e(', '.join(str(s) for s in r.get('signals') or []))}{_e(suspicion)}"),
        ("", _e(_page(r))),
        ("", _e(_ago(_first(r.get("last_activity_real_s"), r.get("last_activity_s"))))),
        ("", _e(_spend(r))),
    ]
    tds = "".join(
        f'<td class="c-{label}{" " + cls if cls else ""}" data-label="{label}">{inner}</td>'
        for label, (cls, inner) in zip(COLUMNS, cells, strict=True)
    )
    return f'<tr class="r-{_e(r.get("region") or "")}{" hot" if hot(r) else ""}">{tds}</tr>'


def page_html(rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "\n".join(row_html(r) for r in by_urgency(rows))
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>orchestrator runs</title>
<link rel="icon" href="data:,">
<noscript><meta http-equiv="refresh" content="{POLL_MS // 1000 * 2}"></noscript>
<style>{STYLE}</style>
</head>
<body>
<h1>Runs</h1>
<p class="note">What the watcher last recorded in each run; a run's id opens its page.
<span id="status">{len(rows)} runs</span></p>
<table>
<thead><tr>{head}</tr></thead>
<tbody id="rows">
{body}
</tbody>
</table>
<p id="empty"{"" if not rows else " hidden"}>No runs yet: <code>./dev.sh launch TICKET</code> starts one.</p>
<script>{SCRIPT}</script>
</body>
</html>
"""
