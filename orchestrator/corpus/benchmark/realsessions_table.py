"""The real-session tables: per half (dev / held-back), per source and per bucket, ours beside the
baselines, and the unattended runs by their known outcome (pure: rows in, text out)."""

from __future__ import annotations

import statistics
from typing import Any

LABELS = ("loop", "mild", "healthy")
BUCKETS = ("small", "medium")
SPLITS = ("dev", "held")
OURS = "ours"
COMMAND = "./dev.sh eval --real-sessions"


def _counts(rows: list[dict[str, Any]], bucket: str) -> dict[str, Any]:
    """Per label [paged, sessions, tripped at any time], and the median lead of the loops paged."""
    out: dict[str, Any] = {}
    for label in LABELS:
        mine = [r for r in rows if r["label"] == label]
        paged = sum(r[bucket]["paged_at_min"] is not None for r in mine)
        tripped = sum(r[bucket].get("tripped_at_min") is not None for r in mine)
        out[label] = [paged, len(mine), tripped]
    leads = [r[bucket]["lead"] for r in rows if r["label"] == "loop" and r[bucket].get("lead")]
    out["lead"] = {
        key: round(statistics.median(vals), 1) if (vals := [x[key] for x in leads if x.get(key) is not None]) else None
        for key in ("minutes", "calls", "usd")
    }
    return out


def _baselines(rows: list[dict[str, Any]], bucket: str) -> dict[str, dict[str, list[int]]]:
    """Per detector (ours, then each baseline): [loops paged, loops] and [healthy paged, healthy]."""
    names = [OURS] + list(next((r[bucket].get("baselines", {}) for r in rows), {}))
    out: dict[str, dict[str, list[int]]] = {}
    for name in names:
        cell: dict[str, list[int]] = {}
        for label in ("loop", "healthy"):
            mine = [r for r in rows if r["label"] == label]
            if name == OURS:
                paged = sum(r[bucket]["paged_at_min"] is not None for r in mine)
            else:
                paged = sum(r[bucket].get("baselines", {}).get(name) is not None for r in mine)
            cell[label] = [paged, len(mine)]
        out[name] = cell
    return out


def _outcomes(rows: list[dict[str, Any]], bucket: str) -> dict[str, list[int]]:
    return {
        o: [sum(r[bucket]["paged_at_min"] is not None for r in mine), len(mine)]
        for o in ("unresolved", "resolved")
        for mine in [[r for r in rows if r.get("outcome") == o]]
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    halves = {s: [r for r in rows if r.get("split") == s] for s in SPLITS}
    sources = sorted({str(r.get("publisher")) for r in rows})
    return {
        "all": {b: _counts(rows, b) for b in BUCKETS},
        "by_split": {s: {b: _counts(halves[s], b) for b in BUCKETS} for s in SPLITS},
        "by_source": {
            src: {b: _counts([r for r in rows if r.get("publisher") == src], b) for b in BUCKETS} for src in sources
        },
        "baselines": {s: {b: _baselines(halves[s], b) for b in BUCKETS} for s in SPLITS},
        "outcomes": {s: {b: _outcomes(halves[s], b) for b in BUCKETS} for s in SPLITS},
    }


def _frac(cell: list[int]) -> str:
    return f"{cell[0]}/{cell[1]}"


def _lead(lead: dict[str, Any]) -> str:
    if lead.get("minutes") is None:
        return "-"
    usd = f", ${lead['usd']:g}" if lead.get("usd") is not None else ""
    return f"{lead['minutes']:g} min, {lead['calls']:g} calls{usd}"


def _cell(r: dict[str, Any]) -> str:
    if r["paged_at_min"] is None:
        return "-"
    early = " early" if r.get("sustained") else ""
    return f"{r['paged_at_min']:g} min{early} ({', '.join(r['signals']) or '?'})"


def _fired(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in r["first_fired_min"].items()) or "-"


def markdown(report: dict[str, Any]) -> str:
    s, rows = report["summary"], report["rows"]
    agents = sorted({str(r.get("agent")) for r in rows})
    out = [
        "# Real sessions, labelled",
        "",
        f"Regenerate with `{COMMAND} --markdown > docs/real-sessions.md` (needs the cache: realsessions/README.md).",
        "",
        f"{len(rows)} public agent sessions from {len(s['by_source'])} publishers ({', '.join(agents)}), each read "
        "and labelled by hand before the detector was run on it (realsessions/labels.yaml; the rule is in "
        "docs/detection.md), replayed events-only (no clone snapshots) once as a small and once as a medium run. "
        "The set is split by a hash of each id: rules are tuned on the dev half; the held-back half is only reported.",
        "",
        "*Paged*: a page was sent (in the soft band, or before it by the sustained-loop rule). *Tripped*: the "
        "suspicion reached the threshold at any time, paged or not. *Lead*: the median, over the loops paged, "
        "of what was left of the session after the page (minutes, tool calls, dollars where the log has usage).",
        "",
        "## By half",
        "",
        "| half | bucket | loops paged | loops tripped | mild paged | healthy paged | healthy tripped | lead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for half in SPLITS:
        for b in BUCKETS:
            c = s["by_split"][half][b]
            out.append(
                f"| {half} | {b} | {_frac(c['loop'])} | {c['loop'][2]}/{c['loop'][1]} | {_frac(c['mild'])} "
                f"| {_frac(c['healthy'])} | {c['healthy'][2]}/{c['healthy'][1]} | {_lead(c['lead'])} |"
            )
    out += [
        "",
        "## Ours beside the baselines (same sessions)",
        "",
        "A baseline alerts whatever the band: the step cap at call "
        "100; five identical calls in a row; the same call with the same result three times among the last ten; "
        "a timer at the bucket's soft-band start.",
        "",
        "| half | bucket | detector | loops paged | healthy paged |",
        "|---|---|---|---|---|",
    ]
    for half in SPLITS:
        for b in BUCKETS:
            for name, cell in s["baselines"][half][b].items():
                out.append(f"| {half} | {b} | {name} | {_frac(cell['loop'])} | {_frac(cell['healthy'])} |")
    out += [
        "",
        "## By source (both halves)",
        "",
        "| publisher | bucket | loops paged | mild paged | healthy paged | healthy tripped |",
        "|---|---|---|---|---|---|",
    ]
    for src, by_bucket in s["by_source"].items():
        for b in BUCKETS:
            c = by_bucket[b]
            out.append(
                f"| {src} | {b} | {_frac(c['loop'])} | {_frac(c['mild'])} | {_frac(c['healthy'])} "
                f"| {c['healthy'][2]}/{c['healthy'][1]} |"
            )
    if any(r.get("outcome") for r in rows):
        out += [
            "",
            "## Unattended runs with a known outcome",
            "",
            "| half | bucket | unresolved paged | resolved paged |",
            "|---|---|---|---|",
        ]
        for half in SPLITS:
            for b in BUCKETS:
                c = s["outcomes"][half][b]
                out.append(f"| {half} | {b} | {_frac(c['unresolved'])} | {_frac(c['resolved'])} |")
    cal = report.get("calibrated")
    if cal:
        b = cal["bucket"]
        calls = (
            f", {b['expected_calls']:g} / {b['soft_start_calls']:g} / {b['stuck_calls']:g} calls"
            if b.get("expected_calls")
            else ""
        )
        out += [
            "",
            "## Unattended runs, with bands calibrated from the dev half's resolved runs",
            "",
            f"As a user would run them: `calibrate`'s rule applied to the {cal['learned_from']} resolved runs of "
            f"the dev half gives the small bucket {b['expected_min']:g} / {b['soft_start_min']:g} / "
            f"{b['stuck_min']:g} min{calls} (expected / soft band / stuck); every run with a known outcome is "
            "replayed with it. A timer pages every run that reaches the band (or minute 8).",
            "",
            "| half | detector | unresolved paged | resolved paged |",
            "|---|---|---|---|",
        ]
        for half, cells in cal["halves"].items():
            for name, cell in cells.items():
                out.append(f"| {half} | {name} | {_frac(cell['unresolved'])} | {_frac(cell['resolved'])} |")
    if report["missing"]:
        out += ["", f"Not in the cache, not replayed: {', '.join(report['missing'])}."]
    out += [
        "",
        "## Sessions",
        "",
        "| id | half | label | outcome | calls | minutes | small: paged at (signals) | medium: paged at (signals) "
        "| medium: first fired (min) | reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['id']} | {r.get('split', '')} | {r['label']} | {r.get('outcome') or ''} | {r['tool_calls']} "
            f"| {r['minutes']:g} | {_cell(r['small'])} | {_cell(r['medium'])} | {_fired(r['medium'])} "
            f"| {' '.join(str(r['reason']).split())} |"
        )
    return "\n".join(out) + "\n"


def text(report: dict[str, Any]) -> str:
    """The tables for a terminal: one line per session, then the halves and the baselines."""
    lines = [f"{'id':44} {'half':4} {'label':8} {'calls':>5} {'min':>6}  {'small: paged at':28} medium: paged at"]
    for r in report["rows"]:
        lines.append(
            f"{r['id'][:44]:44} {r.get('split', ''):4} {r['label']:8} {r['tool_calls']:5} {r['minutes']:6g}  "
            f"{_cell(r['small'])[:28]:28} {_cell(r['medium'])}"
        )
    s = report["summary"]
    cal = report.get("calibrated")
    for half, cells in (cal or {}).get("halves", {}).items():
        lines.append(
            f"{half}, calibrated small bucket: "
            + "; ".join(
                f"{n} unresolved {_frac(c['unresolved'])} resolved {_frac(c['resolved'])}" for n, c in cells.items()
            )
        )
    for half in SPLITS:
        for b in BUCKETS:
            c = s["by_split"][half][b]
            lines.append(
                f"{half} {b}: "
                + ", ".join(f"{lb} paged {c[lb][0]}/{c[lb][1]} (tripped {c[lb][2]}/{c[lb][1]})" for lb in LABELS)
                + f"; lead {_lead(c['lead'])}"
            )
            for name, cell in s["baselines"][half][b].items():
                if name != OURS:
                    lines.append(f"    {name}: loops {_frac(cell['loop'])}, healthy {_frac(cell['healthy'])}")
    return "\n".join(lines) + "\n"
