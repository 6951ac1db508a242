"""Replay recorded runs through the detector (contract: shared/spec/corpus.md)."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.infra.collector import fewer_collections
from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact, redact_cut
from orchestrator.record.case import Case, find_cases, load_case
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import (
    LineCounter,
    distinct_snapshots,
    events_in,
    read_events,
    read_snapshots,
    read_tracked,
)
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.outcome import Outcome, blocked_before
from spiral.settings import SIGNAL_NAMES, Settings
from spiral.verdict import json_number
from spiral.walk import TickWalk, drive


@dataclass
class ReplayResult:
    case: Case
    notified_at_min: float | None
    signals: list[str]
    region: str
    suspicion: float
    evidence: list[str]
    skipped_lines: int
    tool_calls: int
    failures: list[str] = field(default_factory=list)
    provider_retries: int = 0  # the agent's own API-retry lines (replayed on its clock when any)

    @property
    def spiral(self) -> bool:
        return self.notified_at_min is not None

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "spiral": self.spiral,
            "notified_at_min": self.notified_at_min,
            "signals": self.signals,
            "region": self.region,
            "suspicion": json_number(self.suspicion),
            "evidence": self.evidence,
            "pass": self.passed,
            "expected_spiral": self.case.expect.spiral,
            "failures": self.failures,
            "skipped_lines": self.skipped_lines,
            "tool_calls": self.tool_calls,
        }


def walk_recording(
    settings: Settings,
    *,
    bucket: str,
    start: float,
    end: float,
    timeline: Iterable[tuple[float, Any]],
    to_calls: Callable[[float, Any], list[ToolCall]] | None = None,
    snaps: Iterable[Snapshot] | None = None,
    tracked: list[str] | None = None,
    outputs: tuple[str, ...] | list[str] = (),
    workdir: str | None = None,
    scope: tuple[str, ...] | list[str] = (),
    restarts: Iterable[float] = (),
) -> TickWalk:
    """A fresh detector walked over a recording on its tick clock, until it pages: the one replay set-up
    (replay, eval, the detection benchmark and the real-trace table all use it). `snaps` is read lazily."""
    detector = Detector(
        settings,
        bucket=bucket,
        started_at=start,
        tracked=tracked or [],
        outputs=outputs,
        workdir=workdir,
        scope=scope,  # a case's `scope:` (the drift signal); () as in a case without one
    )
    for at in restarts:  # guidance the agent received: the windows restart there, as they did live
        detector.restart(at)
    walk = TickWalk(start, end, settings.tick_s or 30.0, detector, snaps or ())
    return drive(walk, timeline, to_calls)


def provider_intervals(events: Path) -> list[tuple[float, float]]:
    """When the recorded agent was blocked on its model API (docs/agent-outcomes.md)."""
    outcome, last = Outcome(), 0.0
    for ts, data in read_events(events, LineCounter()):
        outcome.feed(ts, data)
        last = ts
    return outcome.blocked_intervals(last)


def replay_case(folder: Path, buckets: BucketsFile) -> ReplayResult:
    case = load_case(folder)
    files = CaseFiles(folder)
    if not files.events.is_file():  # a lost log would replay as a quiet run, and pass every healthy case
        raise UserError(f"{folder}: no events.jsonl (the agent's log) in the case folder")
    settings = buckets.with_overrides(case.overrides, case.source, case.lines, ("overrides",))
    with fewer_collections():
        result = _replay(case, files, settings, [])
        if result.provider_retries:
            # the agent waited on its model API: replay again on the agent's clock, as the live evaluator does
            result = _replay(case, files, settings, provider_intervals(files.events))
    result.failures = _judge(result)
    return result


def _replay(case: Case, files: CaseFiles, settings: Settings, blocked: list[tuple[float, float]]) -> ReplayResult:
    counter = LineCounter()
    with events_in(files.events, counter) as events:
        return _replay_events(case, files, settings, blocked, events, counter)


def _replay_events(
    case: Case,
    files: CaseFiles,
    settings: Settings,
    blocked: list[tuple[float, float]],
    events: Iterator[tuple[float, Any]],
    counter: LineCounter,
) -> ReplayResult:
    adapter = make_adapter(case.format, case.workdir)
    snaps: Iterator[Snapshot] = distinct_snapshots(read_snapshots(files.workspace, counter))
    end = case.ended_at
    restarts: list[float] = list(case.guidance_received)
    if blocked:

        def agent(ts: float) -> float:
            return ts - blocked_before(blocked, ts)

        def on_agent_clock(snap: Snapshot) -> Snapshot:
            snap.ts = agent(snap.ts)
            return snap

        events = ((agent(ts), data) for ts, data in events)
        snaps = map(on_agent_clock, snaps)
        end = agent(end)
        restarts = [agent(t) for t in restarts]
    walk = walk_recording(
        settings,
        bucket=case.bucket,
        start=case.started_at,
        end=end,
        timeline=events,
        to_calls=adapter.feed,
        snaps=snaps,
        tracked=read_tracked(files.tracked),
        outputs=case.outputs,
        workdir=case.workdir,
        scope=case.scope,
        restarts=restarts,
    )
    detector = walk.detector
    for ts, data in events:
        adapter.feed(ts, data)  # the rest, only to count unreadable lines over the whole recording
    for _ in snaps:
        pass  # likewise the snapshots (read one by one, never held)
    notified, strongest, last, fired = walk.notified, walk.strongest, walk.last, walk.fired
    shown = notified or strongest or last
    latest = notified or last
    return ReplayResult(
        case=case,
        notified_at_min=round(notified.elapsed_min, 2) if notified else None,
        signals=[s for s in SIGNAL_NAMES if s in fired],
        region=latest.region if latest is not None else "healthy",
        suspicion=shown.suspicion if shown else 0,
        evidence=[redact_cut(e) for e in shown.evidence] if shown else [],  # a replay's output may be shared
        skipped_lines=counter.skipped + adapter.skipped + walk.beyond_end,
        tool_calls=detector.calls,
        provider_retries=adapter.provider_retries,
    )


def _judge(r: ReplayResult) -> list[str]:
    exp = r.case.expect
    out = []
    if r.spiral != exp.spiral:
        out.append("paged but should not" if r.spiral else "should page but did not")
    if r.spiral and exp.spiral and r.notified_at_min is not None:
        if exp.notify_after_min is not None and r.notified_at_min < exp.notify_after_min:
            out.append(f"paged at {r.notified_at_min:g} min, before {exp.notify_after_min:g}")
        if exp.notify_before_min is not None and r.notified_at_min > exp.notify_before_min:
            out.append(f"paged at {r.notified_at_min:g} min, after {exp.notify_before_min:g}")
    missing = [s for s in exp.signals if s not in r.signals]
    if missing:
        out.append("signals not fired: " + ", ".join(missing))
    return out


_PARALLEL_MIN_CASES = 64
_buckets_for_worker: BucketsFile | None = None


def _replay_dict(folder: Path) -> dict[str, Any]:
    """One case's replay object, or `{"case": folder, "error": why}` for a case that cannot be replayed
    (a bad case.yaml, an unreadable file): one broken case is reported, and the others still run."""
    assert _buckets_for_worker is not None
    try:
        return replay_case(folder, _buckets_for_worker).to_dict()
    except UserError as exc:
        return {"case": str(folder), "error": redact(str(exc))}
    except OSError as exc:
        return {"case": str(folder), "error": redact(f"{exc.strerror or exc}: {exc.filename or folder}")}


def evaluate(dirs: list[Path], buckets: BucketsFile, jobs: int | None = None) -> dict[str, Any]:
    """Replay every case under `dirs`; large sets are spread over the CPUs (fork)."""
    global _buckets_for_worker
    folders, unlisted = find_cases(dirs)
    if not folders and not unlisted:
        raise UserError("no case folders (with a case.yaml) under " + ", ".join(map(str, dirs)))
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    _buckets_for_worker = buckets
    if jobs > 1 and len(folders) >= _PARALLEL_MIN_CASES and "fork" in mp.get_all_start_methods():
        with mp.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_replay_dict, folders, chunksize=max(1, len(folders) // (jobs * 4)))
    else:
        results = [_replay_dict(f) for f in folders]
    return summarize(results + unlisted)


def summarize(replayed: list[dict[str, Any]]) -> dict[str, Any]:
    """The contract's confusion counts over the cases replayed; the broken ones (`broken`: where and
    why) count as failed, and in no confusion count."""
    results = [r for r in replayed if "error" not in r]
    broken = [r for r in replayed if "error" in r]
    tp = sum(r["spiral"] and r["expected_spiral"] for r in results)
    fp = sum(r["spiral"] and not r["expected_spiral"] for r in results)
    tn = sum(not r["spiral"] and not r["expected_spiral"] for r in results)
    fn = sum(not r["spiral"] and r["expected_spiral"] for r in results)
    passed = sum(bool(r["pass"]) for r in results)
    return {
        "cases": results,
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "fpr": round(fp / (fp + tn), 4) if fp + tn else 0.0,
        "passed": passed,
        "failed": len(results) - passed + len(broken),
        "broken": broken,
    }
