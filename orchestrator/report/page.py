"""The report as one self-contained HTML document: header, the chart (Plotly's JS embedded), evidence, last calls."""

from __future__ import annotations

from html import escape

from orchestrator.infra.redaction import redact_cut
from orchestrator.report.chart import figure
from orchestrator.report.text import printable
from orchestrator.report.timeline import Timeline

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 1.35em; margin: 0 0 4px; }
ul.facts { list-style: none; padding: 0; margin: 0 0 12px; color: #555; }
ul.facts li { margin: 2px 0; }
.key span { display: inline-block; margin-right: 14px; font-size: 0.9em; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px; border: 1px solid #ccc; }
h2 { font-size: 1.1em; margin: 22px 0 6px; }
pre { background: #f6f6f6; padding: 8px 10px; overflow-x: auto; font-size: 0.85em; }
ul.evidence li { margin: 3px 0; }
"""


def document(tl: Timeline) -> str:
    chart = figure(tl).to_html(
        full_html=False,
        include_plotlyjs=True,  # embedded: the file opens with no network
        config={"displaylogo": False, "responsive": True},
        div_id="timeline",
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(tl.title)}: timeline</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{escape(tl.title)}</h1>",
        '<ul class="facts">' + "".join(f"<li>{escape(f)}</li>" for f in tl.facts) + "</ul>",
        _summary(tl),
        _key(),
        chart,
        _evidence(tl),
        "<h2>Last tool calls</h2>",
        "<pre>" + escape("\n".join(map(printable, tl.last_calls)) or "(none)") + "</pre>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _summary(tl: Timeline) -> str:
    bits = []
    for name, spans in tl.signals.items():
        bits.append(f"{name} from {spans[0][0]:.0f} min")
    for m in tl.pages:
        bits.append(f"{m.label} at {m.at_min:.0f} min")
    for region, start, _ in tl.regions:
        if region != "healthy":
            bits.append(f"{region} from {start:.0f} min")
    if tl.ending is not None:
        why = f" ({tl.ending.detail})" if tl.ending.detail else ""
        bits.append(f"{tl.ending.label}{why} at {tl.ending.at_min:.0f} min")
    return f"<p><b>At a glance:</b> {escape('; '.join(bits) or 'nothing fired')}.</p>"


def _key() -> str:
    from orchestrator.report.chart import REGION_FILL

    items = [f'<span><i class="swatch" style="background:{c}"></i>{r}</span>' for r, c in REGION_FILL.items()]
    items += [
        '<span><i class="swatch" style="background:#d62728"></i>page</span>',
        '<span><i class="swatch" style="background:#1f77b4"></i>guidance received</span>',
        '<span><i class="swatch" style="background:#333"></i>ending</span>',
        '<span><i class="swatch" style="background:rgba(0,0,0,0.12)"></i>waiting on the model API</span>',
    ]
    return '<div class="key">' + "".join(items) + "</div>"


def _evidence(tl: Timeline) -> str:
    if not tl.evidence:
        return "<h2>Evidence</h2><p>No signal fired.</p>"
    when = f" at {tl.evidence_at_min:.0f} min" if tl.evidence_at_min is not None else ""
    paged = " (the page)" if tl.pages and tl.evidence_at_min == tl.pages[0].at_min else ""
    items = "".join(f"<li>{escape(redact_cut(e))}</li>" for e in tl.evidence)  # a record an older version wrote
    return f'<h2>Evidence{escape(when + paged)}</h2><ul class="evidence">{items}</ul>'
