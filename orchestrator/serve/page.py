"""The live page: the rows drawn as an HTML table, refreshed by a little script polling /api/runs.

Everything shown comes from agents' logs (run ids, reasons, evidence): the table is
escaped here, and the script only ever sets text (never HTML), under a Content Security
Policy that allows no script but its own.
"""

from __future__ import annotations

import base64
import hashlib
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

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
p.note { color: #666; margin: 0 0 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; }
td.reason, td.evidence { max-width: 28em; overflow-wrap: anywhere; }
ul.evidence { margin: .2em 0 0; padding-left: 1.2em; color: #555; font-size: .9em; }
.s-running, .s-launching { color: #06c; } .s-succeeded { color: #080; }
.s-failed, .s-lost, .s-killed, .s-over_budget, .s-gave_up, .s-unreadable { color: #b00; } .s-no_change { color: #a60; } .s-queued { color: #888; }
.r-soft { background: #fff6d5; } .r-stuck { background: #fde2e2; }
#status.stale { color: #b00; }
"""

SCRIPT = """
(function () {
  "use strict";
  var POLL = __POLL_MS__;
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
    if (r.tripped_at_min !== null && r.tripped_at_min !== undefined) return "due";
    return "";
  }
  function state(r) {
    return r.state + (r.queue_position ? " #" + r.queue_position : "") + (r.held ? " (held)" : "");
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function row(r) {
    var tr = document.createElement("tr");
    tr.className = "r-" + String(r.region || "");
    var td = document.createElement("td"), a = document.createElement("a");
    a.href = "/runs/" + encodeURIComponent(r.id) + "/report";
    a.textContent = r.id;
    td.appendChild(a); tr.appendChild(td);
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
    data.runs.forEach(function (r) { fresh.appendChild(row(r)); });
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


def row_html(r: dict[str, Any]) -> str:
    """One run as a table row, every text escaped (the script draws the same from /api/runs)."""
    why = f"error: {r['error']}" if r.get("error") else (r.get("reason") or "")
    evidence = r.get("evidence") or []
    ev = ('<ul class="evidence">' + "".join(f"<li>{_e(e)}</li>" for e in evidence) + "</ul>") if evidence else ""
    suspicion = f" ({_num(r['suspicion'], 2)})" if r.get("suspicion") else ""
    link = f"/runs/{quote(str(r['id']), safe='')}/report"
    cells = [
        f'<td><a href="{_e(link)}">{_e(r["id"])}</a></td>',
        f"<td>{_e(r.get('ticket') or '')}</td>",
        f"<td>{_e(r.get('agent') or '')}</td>",
        f"<td>{_e(r.get('bucket') or '')}</td>",
        f'<td class="s-{_e(r["state"])}">{_e(_state(r))}</td>',
        f'<td class="reason">{_e(why)}{ev}</td>',
        f"<td>{_num(r.get('elapsed_min'), 1)} / {_num(r.get('expected_min'), 0)} min</td>",
        f"<td>{_e(r.get('region') or '')}</td>",
        f"<td>{_e(', '.join(str(s) for s in r.get('signals') or []))}{_e(suspicion)}</td>",
        f"<td>{_e(_page(r))}</td>",
        f"<td>{_e(_ago(_first(r.get('last_activity_real_s'), r.get('last_activity_s'))))}</td>",
        f"<td>{_e(_spend(r))}</td>",
    ]
    return f'<tr class="r-{_e(r.get("region") or "")}">' + "".join(cells) + "</tr>"


def page_html(rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "\n".join(row_html(r) for r in rows)
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
<p class="note">What the watcher last recorded in each run (this page changes nothing); a run's id opens its report.
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
