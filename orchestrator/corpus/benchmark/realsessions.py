"""The labelled real-session table: public Claude Code and Codex logs (other agents' converted into
the generic format), read and labelled by hand (realsessions/labels.yaml), replayed events-only once
as a small and once as a medium run.

The files are other people's: they live in a git-ignored cache (.cache/real-sessions, see
realsessions/README.md) or in ../shared/real-traces, never in the repository. Entries whose file
is absent are listed as missing, not replayed.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.importer import read_records, timestamp_records
from orchestrator.corpus.recorded import LineCounter, read_events
from orchestrator.corpus.replay import walk_recording
from orchestrator.infra import yamlfile
from spiral.adapters import make_adapter
from spiral.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
LABELS_FILE = ROOT / "realsessions" / "labels.yaml"
CACHE = ROOT / ".cache" / "real-sessions"
SHARED = ROOT.parent / "shared" / "real-traces"
SHARED_PREFIX = "shared:"
LABELS = ("loop", "mild", "healthy")
BUCKETS = ("small", "medium")
FORMATS = ("claude-transcript", "claude-stream-json", "codex-json", "generic")
FIELDS = ("id", "file", "format", "agent", "version", "source", "sha256", "tool_calls", "minutes", "label", "reason")
COMMAND = "./dev.sh eval --real-sessions"


def load_labels(path: Path = LABELS_FILE) -> list[dict[str, Any]]:
    data, _ = yamlfile.load_file(path)
    entries = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a mapping with a `sessions:` list")
    return entries


def resolve(entry: dict[str, Any], cache: Path = CACHE, shared: Path = SHARED) -> Path:
    """Where an entry's file is: `shared:<path>` under ../shared/real-traces, else under the cache."""
    file = str(entry["file"])
    if file.startswith(SHARED_PREFIX):
        return shared / file.removeprefix(SHARED_PREFIX)
    return cache / file


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def subagent_files(transcript: Path) -> list[Path]:
    """A Claude session's subagent transcripts: `<stem>/subagents/**/agent-*.jsonl` beside `<stem>.jsonl`."""
    folder = transcript.parent / transcript.name.removesuffix(".gz").removesuffix(".jsonl") / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("agent-*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def timeline(path: Path, fmt: str) -> tuple[list[tuple[float, Any]], str | None]:
    """The file's records with their times, a Claude transcript's subagent files merged in by time.

    A `generic` file is already an event log (tools/convert_trajectory.py wrote it from another
    agent's trajectory): one `{"ts", "data"}` envelope a tool call, its times the envelopes'.
    """
    if fmt == "generic":
        return list(read_events(path, LineCounter())), None
    timed, workdir = timestamp_records(read_records(path)[0], 5.0)
    if fmt != "claude-transcript":
        return timed, workdir
    streams = [timed] + [timestamp_records(read_records(p)[0], 5.0)[0] for p in subagent_files(path)]
    tagged = ([(ts, i, j, obj) for j, (ts, obj) in enumerate(s)] for i, s in enumerate(streams))
    return [(ts, obj) for ts, _, _, obj in heapq.merge(*tagged, key=lambda t: t[:3])], workdir


def replay(path: Path, fmt: str, raw_buckets: dict[str, Any], buckets: tuple[str, ...] = BUCKETS) -> dict[str, Any]:
    """Events, calls, minutes and, per bucket, when (if) it paged and which signals had fired."""
    timed, workdir = timeline(path, fmt)
    adapter = make_adapter(fmt, workdir)
    calls = [(ts, adapter.feed(ts, obj)) for ts, obj in timed]
    start, end = (timed[0][0], timed[-1][0]) if timed else (0.0, 0.0)
    settings = Settings.from_mapping(raw_buckets)
    out: dict[str, Any] = {
        "events": len(timed),
        "tool_calls": sum(len(c) for _, c in calls),
        "minutes": round((end - start) / 60, 1),
    }
    for bucket in buckets:
        if not timed:
            out[bucket] = {"paged_at_min": None, "signals": [], "first_fired_min": {}, "tripped_at_min": None}
            continue
        walk = walk_recording(settings, bucket=bucket, start=start, end=end, timeline=calls, workdir=workdir)
        out[bucket] = {
            "paged_at_min": round(walk.notified.elapsed_min, 1) if walk.notified else None,
            "signals": list(walk.notified.signals) if walk.notified else [],
            "first_fired_min": {k: round(v, 1) for k, v in sorted(walk.first_fired.items(), key=lambda kv: kv[1])},
            # suspicion reached the threshold (in any band: a page needs the soft band, the loop may end before it)
            "tripped_at_min": round(walk.first_tripped, 1) if walk.first_tripped is not None else None,
        }
    return out


def scan(
    raw_buckets: dict[str, Any] | None = None,
    *,
    labels: Path = LABELS_FILE,
    cache: Path = CACHE,
    shared: Path = SHARED,
    say: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Every labelled session present, replayed; the absent ones listed (and said); the per-bucket summary."""
    raw = BucketsFile().raw if raw_buckets is None else raw_buckets
    rows, missing = [], []
    for e in load_labels(labels):
        path = resolve(e, cache, shared)
        if not path.is_file():
            missing.append(e["id"])
            continue
        rows.append({k: e[k] for k in ("id", "label", "format", "reason")} | replay(path, e["format"], raw))
    if missing and say:
        say(
            f"{len(missing)} labelled session(s) not in {cache} or {shared} (see realsessions/README.md): {', '.join(missing)}"
        )
    return {"rows": rows, "missing": missing, "summary": summary(rows)}


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """Per bucket, per label: [sessions paged, sessions, sessions whose suspicion reached the threshold]."""
    out: dict[str, dict[str, list[int]]] = {}
    for bucket in BUCKETS:
        out[bucket] = {}
        for label in LABELS:
            mine = [r for r in rows if r["label"] == label]
            paged = sum(r[bucket]["paged_at_min"] is not None for r in mine)
            tripped = sum(r[bucket].get("tripped_at_min") is not None for r in mine)
            out[bucket][label] = [paged, len(mine), tripped]
    return out


def _cell(r: dict[str, Any]) -> str:
    if r["paged_at_min"] is None:
        return "-"
    return f"{r['paged_at_min']:g} min ({', '.join(r['signals']) or '?'})"


def _fired(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in r["first_fired_min"].items()) or "-"


def markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    out = [
        "# Real sessions, labelled",
        "",
        f"Regenerate with `{COMMAND} --markdown > docs/real-sessions.md` (needs the cache: realsessions/README.md).",
        "",
        f"{len(report['rows'])} public agent sessions (Claude Code and Codex CLI; OpenHands and mini-swe-agent "
        "converted to the generic format by tools/convert_trajectory.py), each read and labelled by hand "
        "(realsessions/labels.yaml: loop, mild or healthy, with the reason), replayed events-only "
        "(no clone snapshots) through the detector once as a small and once as a medium run.",
        "",
        "## Summary",
        "",
        "A page needs the run to be inside its bucket's soft band (small 30-35 min, medium 70-85 min); "
        "*tripped* counts the sessions whose suspicion reached the threshold at any time, "
        "so a loop that ended before its soft band shows there.",
        "",
        "| bucket | loops paged | loops tripped | mild paged | mild tripped | healthy paged | healthy tripped |",
        "|---|---|---|---|---|---|---|",
    ]
    for bucket in BUCKETS:
        out.append(
            f"| {bucket} | "
            + " | ".join(
                f"{s[bucket][lb][0]}/{s[bucket][lb][1]} | {s[bucket][lb][2]}/{s[bucket][lb][1]}" for lb in LABELS
            )
            + " |"
        )
    if report["missing"]:
        out += ["", f"Not in the cache, not replayed: {', '.join(report['missing'])}."]
    out += [
        "",
        "## Sessions",
        "",
        "| id | label | format | calls | minutes | small: paged at (signals) | medium: paged at (signals) "
        "| medium: first fired (min) | reason |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        out.append(
            f"| {r['id']} | {r['label']} | {r['format']} | {r['tool_calls']} | {r['minutes']:g} | {_cell(r['small'])} "
            f"| {_cell(r['medium'])} | {_fired(r['medium'])} | {' '.join(str(r['reason']).split())} |"
        )
    return "\n".join(out) + "\n"


def text(report: dict[str, Any]) -> str:
    """The table for a terminal: one line per session, then the summary."""
    lines = [f"{'id':44} {'label':8} {'calls':>5} {'min':>6}  {'small: paged at':24} medium: paged at"]
    for r in report["rows"]:
        lines.append(
            f"{r['id'][:44]:44} {r['label']:8} {r['tool_calls']:5} {r['minutes']:6g}  {_cell(r['small'])[:24]:24} {_cell(r['medium'])}"
        )
    for bucket, counts in report["summary"].items():
        lines.append(
            f"{bucket}: " + ", ".join(f"{lb} paged {k}/{n} (tripped {t}/{n})" for lb, (k, n, t) in counts.items())
        )
    return "\n".join(lines) + "\n"
