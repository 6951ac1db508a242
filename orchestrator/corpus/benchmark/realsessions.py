"""The labelled real-session set: public agent logs (Claude Code, Codex, and other agents' converted
into the generic format), read and labelled by hand (realsessions/labels.yaml), replayed events-only
once as a small and once as a medium run, with simple baselines on the same sessions.

The set is the judge of detection changes (docs/detection.md). It is split by a hash of each id into
a dev half, where rules are tuned, and a held-back half, which is only reported. The files are
other people's: they live in a git-ignored cache (.cache/real-sessions, see realsessions/README.md)
or in ../shared/real-traces, never in the repository. Entries whose file is absent are listed as
missing, not replayed. The tables are made by realsessions_table.py.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import baselines
from orchestrator.corpus.benchmark.realsessions_table import headline as headline
from orchestrator.corpus.benchmark.realsessions_table import markdown as markdown
from orchestrator.corpus.benchmark.realsessions_table import summary as summary
from orchestrator.corpus.benchmark.realsessions_table import text as text
from orchestrator.corpus.importer import read_records, timestamp_records
from orchestrator.corpus.replay import walk_recording
from orchestrator.infra import yamlfile
from orchestrator.record.run_files import LineCounter, read_events
from spiral.adapters import make_adapter
from spiral.model import ToolCall
from spiral.settings import Bucket, Settings
from spiral.spend import Spend, SpendCounter

Pricer = Callable[[Spend], "float | None"]  # dollars of a session's usage (the ledger's prices), or None
# the bands (minutes and calls) that succeeded runs imply, by calibrate's rule (ledger/calibrate.py), or None
Calibrator = Callable[[list[float], list[int]], "Bucket | None"]

ROOT = Path(__file__).resolve().parents[3]
LABELS_FILE = ROOT / "realsessions" / "labels.yaml"
CACHE = ROOT / ".cache" / "real-sessions"
SHARED = ROOT.parent / "shared" / "real-traces"
SHARED_PREFIX = "shared:"
LABELS = ("loop", "mild", "healthy")
BUCKETS = ("small", "medium")
SPLITS = ("dev", "held")
OUTCOMES = ("resolved", "unresolved")
FORMATS = ("claude-transcript", "claude-stream-json", "codex-json", "generic")
FIELDS = ("id", "file", "format", "agent", "version", "source", "sha256", "tool_calls", "minutes", "label", "reason")
COMMAND = "./dev.sh eval --real-sessions"
OURS = "ours"
STEP_CAP = 100


def load_labels(path: Path = LABELS_FILE) -> list[dict[str, Any]]:
    data, _ = yamlfile.load_file(path)
    entries = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a mapping with a `sessions:` list")
    return entries


def split(session_id: str) -> str:
    """The half a session belongs to, by a hash of its id: `dev` (tuned on) or `held` (only reported)."""
    return "dev" if int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16) % 2 == 0 else "held"


def publisher(entry: dict[str, Any]) -> str:
    """Who published the session: the owner of its source repository."""
    repo = str((entry.get("source") or {}).get("repo") or "?")
    return repo.split("/", 1)[0]


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


def _dollars(timed: list[tuple[float, Any]], fmt: str, price: Pricer, until: float | None = None) -> float | None:
    """What the session had cost by `until` (its end when None), from the usage its own lines carry."""
    counter = SpendCounter(fmt)
    feed = counter.feeder()
    for ts, obj in timed:
        if until is not None and ts > until:
            break
        feed(obj)
    return price(counter.spend)


def _baseline_pages(shape: baselines.RunShape, soft_start_min: float) -> dict[str, float | None]:
    """The minute each simple alternative would have alerted on this session, or None."""
    minutes = (shape.ended_at - shape.started_at) / 60.0
    return {
        f"step cap {STEP_CAP} calls": baselines.step_cap(STEP_CAP)(shape),
        "5 identical calls in a row": baselines.consecutive_repeats(5)(shape),
        "3 identical call+result": baselines.identical_results(3)(shape),
        "timer at the soft band": soft_start_min if minutes >= soft_start_min else None,
    }


def replay(
    path: Path,
    fmt: str,
    raw_buckets: dict[str, Any],
    buckets: tuple[str, ...] = BUCKETS,
    price: Pricer | None = None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """Events, calls, minutes and, per bucket, when (if) it paged, which signals had fired, what the
    page left (minutes, calls, dollars to the end) and when each baseline would have alerted.

    `workdir` is the session's working directory where the log does not say it (a label's
    `workdir:`: the folder a converted log's file paths were made relative to), as a case's
    `workdir:` is for a recorded run: the commands' paths are read against it."""
    timed, logged = timeline(path, fmt)
    workdir = logged or workdir
    adapter = make_adapter(fmt, workdir)
    calls = [(ts, adapter.feed(ts, obj)) for ts, obj in timed]
    flat: list[ToolCall] = [c for _, cs in calls for c in cs]
    call_times = [ts for ts, cs in calls for _ in cs]
    start, end = (timed[0][0], timed[-1][0]) if timed else (0.0, 0.0)
    settings = Settings.from_mapping(raw_buckets)
    out: dict[str, Any] = {
        "events": len(timed),
        "tool_calls": len(flat),
        "minutes": round((end - start) / 60, 1),
    }
    total_usd = _dollars(timed, fmt, price) if price is not None and fmt != "generic" and timed else None
    for bucket in buckets:
        b = settings.bucket(bucket)
        if not timed:
            out[bucket] = {"paged_at_min": None, "signals": [], "first_fired_min": {}, "tripped_at_min": None}
            continue
        walk = walk_recording(settings, bucket=bucket, start=start, end=end, timeline=calls, workdir=workdir)
        page = walk.notified
        row: dict[str, Any] = {
            "paged_at_min": round(page.elapsed_min, 1) if page else None,
            "signals": list(page.signals) if page else [],
            "sustained": page is not None and page.sustained is not None and page.region == "healthy",
            "first_fired_min": {k: round(v, 1) for k, v in sorted(walk.first_fired.items(), key=lambda kv: kv[1])},
            # suspicion reached the threshold (in any band: a page needs the soft band or the sustained rule)
            "tripped_at_min": round(walk.first_tripped, 1) if walk.first_tripped is not None else None,
        }
        if page is not None:
            at = start + page.elapsed_min * 60.0
            done = bisect.bisect_right(call_times, at)
            row["lead"] = {"minutes": round((end - at) / 60.0, 1), "calls": len(flat) - done}
            if total_usd is not None and price is not None:
                by_page = _dollars(timed, fmt, price, at)
                row["lead"]["usd"] = round(total_usd - by_page, 2) if by_page is not None else None
        shape = baselines.RunShape(start, end, b.stuck_min, flat)
        row["baselines"] = _baseline_pages(shape, b.soft_start_min)
        out[bucket] = row
    return out


def scan(
    raw_buckets: dict[str, Any] | None = None,
    *,
    labels: Path = LABELS_FILE,
    cache: Path = CACHE,
    shared: Path = SHARED,
    say: Callable[[str], object] | None = None,
    price: Pricer | None = None,
    calibrate: Calibrator | None = None,
) -> dict[str, Any]:
    """Every labelled session present, replayed; the absent ones listed (and said); the summaries.
    With `price`, the lead a page left is in dollars too. With `calibrate`, the unattended runs with a
    known outcome are replayed again with bands calibrated from the dev half's resolved runs."""
    raw = BucketsFile().raw if raw_buckets is None else raw_buckets
    rows, missing = [], []
    for e in load_labels(labels):
        path = resolve(e, cache, shared)
        if not path.is_file():
            missing.append(e["id"])
            continue
        facts = {k: e[k] for k in ("id", "label", "format", "reason", "agent")}
        facts |= {"split": split(e["id"]), "publisher": publisher(e), "outcome": e.get("outcome")}
        rows.append(facts | replay(path, e["format"], raw, price=price, workdir=e.get("workdir")))
    if missing and say:
        say(
            f"{len(missing)} labelled session(s) not in {cache} or {shared} (see realsessions/README.md): {', '.join(missing)}"
        )
    report: dict[str, Any] = {"rows": rows, "missing": missing, "summary": summary(rows)}
    if calibrate is not None:
        report["calibrated"] = calibrated(rows, raw, calibrate, labels, cache, shared)
    return report


def calibrated(
    rows: list[dict[str, Any]],
    raw: dict[str, Any],
    calibrate: Calibrator,
    labels: Path = LABELS_FILE,
    cache: Path = CACHE,
    shared: Path = SHARED,
) -> dict[str, Any] | None:
    """The unattended runs with a known outcome, as a user would run them: the small bucket's bands
    calibrated (minutes and calls) from the dev half's resolved runs, then each run with an outcome
    replayed with them; per half, how many unresolved and resolved runs paged, beside two timers."""
    runs = [r for r in rows if r.get("outcome") in OUTCOMES]
    learn = [r for r in runs if r["split"] == "dev" and r["outcome"] == "resolved"]
    bucket = calibrate([float(r["minutes"]) for r in learn], [int(r["tool_calls"]) for r in learn])
    if bucket is None:
        return None
    tuned = {**raw, "buckets": {**raw["buckets"], "small": bucket.timings()}}
    by_id = {e["id"]: e for e in load_labels(labels)}
    out: dict[str, Any] = {"learned_from": len(learn), "bucket": bucket.timings(), "halves": {}}
    for half in SPLITS:
        cells: dict[str, dict[str, list[int]]] = {}
        for r in (x for x in runs if x["split"] == half):
            e = by_id[r["id"]]
            again = replay(resolve(e, cache, shared), e["format"], tuned, ("small",), workdir=e.get("workdir"))["small"]
            soft = bucket.soft_start_min
            alerts = {
                OURS: again["paged_at_min"] is not None,
                "timer at the calibrated soft band": r["minutes"] >= soft
                or (bucket.soft_start_calls > 0 and r["tool_calls"] >= bucket.soft_start_calls),
                "timer at minute 8": r["minutes"] >= 8,
            }
            for name, paged in alerts.items():
                cell = cells.setdefault(name, {"unresolved": [0, 0], "resolved": [0, 0]})[r["outcome"]]
                cell[0] += paged
                cell[1] += 1
        out["halves"][half] = cells
    return out
