"""Replay recorded runs through the detector (contract: shared/spec/corpus.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.caseio import Case, LineCounter, load_case, read_events, read_snapshots, read_tracked
from orchestrator.config import BucketsFile
from orchestrator.errors import UserError
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.settings import SIGNAL_NAMES
from spiral.verdict import Verdict


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
            "suspicion": self.suspicion,
            "evidence": self.evidence,
            "pass": self.passed,
            "expected_spiral": self.case.expect.spiral,
            "failures": self.failures,
            "skipped_lines": self.skipped_lines,
            "tool_calls": self.tool_calls,
        }


def replay_case(folder: Path, buckets: BucketsFile) -> ReplayResult:
    case = load_case(folder)
    settings = buckets.with_overrides(case.overrides, case.source, case.lines, ("overrides",))
    detector = Detector(settings, bucket=case.bucket, started_at=case.started_at,
                        tracked=read_tracked(folder / "tracked.txt"), outputs=case.outputs,
                        workdir=case.workdir)
    adapter = make_adapter(case.format, case.workdir)
    counter = LineCounter()
    events = read_events(folder / "events.jsonl", counter)
    snaps = read_snapshots(folder / "workspace.jsonl", counter)
    next_event = next(events, None)
    next_snap = next(snaps, None)
    fired: set[str] = set()
    notified: Verdict | None = None
    strongest: Verdict | None = None
    last: Verdict | None = None
    tick_s = settings.tick_s or 30.0
    k = 0
    while True:
        now = case.started_at + k * tick_s
        if now > case.ended_at:
            break
        while next_event is not None and next_event[0] <= now:
            detector.add_calls(adapter.feed(*next_event))
            next_event = next(events, None)
        while next_snap is not None and next_snap.ts <= now:
            detector.add_snapshot(next_snap)
            next_snap = next(snaps, None)
        last = detector.evaluate(now)
        fired.update(last.signals)
        if strongest is None or last.suspicion > strongest.suspicion:
            strongest = last
        if last.should_page:
            notified = last
            break
        k += 1
    # read what is left so unreadable lines are counted over the whole recording
    if next_event is not None:
        adapter.feed(*next_event)
    for ev in events:
        adapter.feed(*ev)
    for _ in snaps:
        pass
    shown = notified or strongest or last
    result = ReplayResult(
        case=case,
        notified_at_min=round(notified.elapsed_min, 2) if notified else None,
        signals=[s for s in SIGNAL_NAMES if s in fired],
        region=(notified or last).region if (notified or last) else "healthy",
        suspicion=shown.suspicion if shown else 0,
        evidence=list(shown.evidence) if shown else [],
        skipped_lines=counter.skipped + adapter.skipped,
        tool_calls=detector.calls,
    )
    result.failures = _judge(result)
    return result


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


def find_cases(dirs: list[Path]) -> list[Path]:
    found: list[Path] = []
    for d in dirs:
        if not d.exists():
            raise UserError(f"{d}: no such folder")
        if (d / "case.yaml").is_file():
            found.append(d)
            continue
        found.extend(sorted(p.parent for p in d.rglob("case.yaml")))
    return found


def evaluate(dirs: list[Path], buckets: BucketsFile) -> dict[str, Any]:
    folders = find_cases(dirs)
    if not folders:
        raise UserError("no case folders (with a case.yaml) under " + ", ".join(map(str, dirs)))
    results = [replay_case(f, buckets) for f in folders]
    return summarize(results)


def summarize(results: list[ReplayResult]) -> dict[str, Any]:
    tp = sum(r.spiral and r.case.expect.spiral for r in results)
    fp = sum(r.spiral and not r.case.expect.spiral for r in results)
    tn = sum(not r.spiral and not r.case.expect.spiral for r in results)
    fn = sum(not r.spiral and r.case.expect.spiral for r in results)
    passed = sum(r.passed for r in results)
    return {
        "cases": [r.to_dict() for r in results],
        "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "fpr": round(fp / (fp + tn), 4) if fp + tn else 0.0,
        "passed": passed,
        "failed": len(results) - passed,
    }
