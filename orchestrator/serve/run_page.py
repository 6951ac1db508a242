"""One run's page on `serve`: where a page's link lands on a phone. What the watcher last recorded
(state, evidence, the pages and their verdicts, guidance and its receipts, the actions taken) and,
with `serve --actions`, a button per action (a form POST carrying a token made for this run and
that action alone). No script; every text escaped; laid out for a 412 px screen first.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from orchestrator.infra.action_tokens import mint_many
from orchestrator.infra.serve_config import action_path
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.serve.actions import LABELS

STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; padding: .8em; max-width: 46em; color: #222; }
h1 { font-size: 1.15em; margin: .2em 0; overflow-wrap: anywhere; }
h2 { font-size: 1em; margin: 1.2em 0 .3em; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15em .8em; margin: 0; }
dt { color: #666; } dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
ul { padding-left: 1.2em; margin: .2em 0; } li { overflow-wrap: anywhere; }
.hot { background: #fde2e2; border-left: 4px solid #b00; padding: .4em .6em; }
.note { background: #eef6ee; border-left: 4px solid #080; padding: .4em .6em; overflow-wrap: anywhere; }
.refused { background: #fff6d5; border-left: 4px solid #a60; padding: .4em .6em; overflow-wrap: anywhere; }
.buttons { display: flex; flex-wrap: wrap; gap: .5em; }
.buttons form { margin: 0; }
button { font: inherit; padding: .55em .9em; border-radius: .4em; border: 1px solid #888; background: #f4f4f4; }
button.danger { border-color: #b00; color: #b00; }
a { color: #06c; } .muted { color: #666; }
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (
    f"default-src 'none'; style-src {_hash(STYLE)}; img-src data:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def _e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def _items(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>" if lines else '<p class="muted">none</p>'


def _button(run_id: str, action: str, token: str, extra: str = "", label: str | None = None) -> str:
    cls = ' class="danger"' if action == "kill" else ""
    return (
        f'<form method="post" action="{_e(action_path(run_id, action))}">'
        f'<input type="hidden" name="token" value="{_e(token)}">{extra}'
        f'<button type="submit" name="do" value="{_e(action)}"{cls}>{_e(label or LABELS[action])}</button></form>'
    )


def _guidance(record: RunRecord) -> list[str]:
    out = []
    for g in record.guidance:
        if g.received_at is not None:
            how = f"received {g.received_at}" + (f" ({g.received_via})" if g.received_via else "")
        elif g.undelivered:
            how = f"not received: {g.undelivered}"
        else:
            how = f"queued {g.queued_at}, not received yet"
        out.append(f"{g.id} {g.kind} by {g.by}: {how}")
    return out


def _pages(record: RunRecord) -> list[str]:
    from orchestrator.record.pages import pages, verdicts

    judged = verdicts(record)
    out = []
    for n, _, signals in pages(record):
        notice = record.notices.get("spiral" if n == 1 else f"spiral-{n}")
        sent = "sent" if notice is not None and notice.delivered else "not sent yet"
        v = judged.get(n)
        out.append(f"page {n}: {', '.join(signals) or 'no signals'} ({sent})" + (f"; judged {v.verdict}" if v else ""))
    return out


def html(row: dict[str, Any], record: RunRecord, offered: dict[str, str] | None, said: tuple[str, str] | None) -> str:
    """The page. `offered`: action -> token (None: actions off); `said`: (css class, text) of the last action's answer."""
    run_id = str(row["id"])
    hot = bool(row.get("notified")) or (record.active and row.get("tripped_at_min") is not None)
    facts = [
        ("state", row["state"] + (f" — {row['reason']}" if row.get("reason") else "")),
        ("ticket", row.get("ticket")),
        ("agent", row.get("agent")),
        ("bucket", row.get("bucket")),
        (
            "elapsed",
            f"{float(row.get('elapsed_min') or 0):.1f} of {float(row.get('expected_min') or 0):.0f} min expected",
        ),
        ("region", row.get("region")),
        (
            "signals",
            ", ".join(row.get("signals") or []) + (f" (suspicion {row['suspicion']})" if row.get("suspicion") else ""),
        ),
    ]
    if record.ladder.snoozed_until:
        facts.append(("ladder", f"snoozed until {record.ladder.snoozed_until}"))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts if v not in (None, ""))
    parts = [f"<h1>{_e(run_id)}</h1>", f'<div class="{"hot" if hot else ""}"><dl>{dl}</dl></div>']
    if said is not None:
        parts.append(f'<p class="{_e(said[0])}" id="said">{_e(said[1])}</p>')
    if offered:
        buttons = "".join(_button(run_id, a, t) for a, t in offered.items())
        parts.append(f'<h2>Act</h2><div class="buttons" id="buttons">{buttons}</div>')
    parts += ["<h2>Evidence</h2>", _items(list(row.get("evidence") or []))]
    parts += ["<h2>Pages</h2>", _items(_pages(record))]
    parts += ["<h2>Guidance</h2>", f'<div id="guidance">{_items(_guidance(record))}</div>']
    taken = [f"{a.at} {a.action}: {a.result}" for a in reversed(record.actions)][:20]
    parts += ["<h2>Actions taken</h2>", f'<div id="actions">{_items(taken)}</div>']
    report = f"/runs/{quote(run_id, safe='')}/report"
    parts.append(f'<p><a href="{_e(report)}">Full report</a> · <a href="/">All runs</a></p>')
    return _doc(f"run {run_id}", "\n".join(parts))


def render(run_dir: Path, key: bytes | None, ttl_s: float, did: str | None, now: float) -> str:
    """The run page as its record stands now: buttons (fresh tokens) when `key` is given (actions on);
    `did`: the action just taken, whose outcome the page says first."""
    from orchestrator.record import state_file
    from orchestrator.serve import actions, rows

    rd = RunDir(run_dir)
    record = state_file.read_shared(rd)
    row = rows.view_of(rd.path, now).to_dict()
    offered = None if key is None else mint_many(key, rd.run_id, actions.offered(record), ttl_s, now)
    said = None
    last = next((a for a in reversed(record.actions) if a.action == did), None) if did else None
    if last is not None:
        said = ("note" if last.ok else "refused", f"{last.action}: {last.result}")
    return html(row, record, offered, said)


CONFIRMED = '<input type="hidden" name="confirm" value="yes">'


def confirm_html(run_id: str, token: str) -> str:
    """Kill asks first: the same token, sent again with the confirmation."""
    body = (
        f"<h1>Kill {_e(run_id)}?</h1><p>The agent and its whole process tree are stopped and the run is "
        "recorded <code>killed</code>. Its clone stays.</p>"
        f'<div class="buttons">{_button(run_id, "kill", token, CONFIRMED, "Kill now")}'
        f'<a href="/runs/{_e(quote(run_id, safe=""))}">Cancel</a></div>'
    )
    return _doc(f"kill {run_id}?", body)


def _doc(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{_e(title)}</title>
<link rel="icon" href="data:,">
<style>{STYLE}</style>
</head>
<body>
{body}
</body>
</html>
"""
