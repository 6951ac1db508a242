"""A benchmark scenario made and read in memory: the same parsed log, snapshots and case facts as
writing its case folder and reading it back (tests/corpus/test_bench_speed.py checks that), without the disk."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.corpus.benchmark import families
from orchestrator.corpus.log_lines import read_back_ts
from orchestrator.corpus.timeline import Rendered
from orchestrator.record.case import Case, load_case, scope_globs
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import (
    LineCounter,
    distinct_snapshots,
    read_events,
    read_snapshots,
    read_tracked,
)
from spiral.adapters import make_adapter
from spiral.model import Snapshot, ToolCall
from spiral.porcelain import parse_porcelain
from spiral.settings import Settings
from spiral.timestamps import parse_ts


@dataclass
class Scenario:
    """What a replay of one scenario reads: the case's facts, the calls its log gives, its distinct snapshots."""

    id: str
    format: str
    bucket: str
    started_at: float
    ended_at: float
    outputs: tuple[str, ...]
    workdir: str | None
    overrides: dict[str, Any]
    scope: tuple[str, ...]
    meta: dict[str, Any]  # the labels (scenario.json)
    timeline: list[tuple[float, list[ToolCall]]]  # (ts, the calls its log line gave), every line
    snaps: list[Snapshot]
    tracked: list[str]


def make(fam: families.Family, i: int, seed: int, settings: Settings, keep: Path | None = None) -> Scenario:
    """Scenario `i` of `fam`, rendered and parsed in memory (and written under `keep` too, when given)."""
    tl, end, meta = families.script(fam, i, seed, settings)
    r = tl.render(end)
    if keep is not None:
        folder = keep / tl.case_id
        tl.write_case(folder, end)
        families.write_meta(folder, meta)
    adapter = make_adapter(tl.fmt, tl.workdir)
    timeline: list[tuple[float, list[ToolCall]]] = []
    for ts, data in r.lines:  # as read back from events.jsonl: the same values, without the JSON text
        at = read_back_ts(ts)
        timeline.append((at, adapter.feed(at, data)))
    c = r.case
    started, ended = parse_ts(c["started_at"]), parse_ts(c["ended_at"])
    assert started is not None and ended is not None
    return Scenario(
        id=c["id"],
        format=c["format"],
        bucket=c["bucket"],
        started_at=started,
        ended_at=ended,
        outputs=tuple(c["outputs"]),
        workdir=c["workdir"],
        overrides=c["overrides"] or {},
        scope=scope_globs(tuple(c.get("scope") or ())),
        meta=meta,
        timeline=timeline,
        snaps=list(distinct_snapshots(_snapshots(r))),
        tracked=r.tracked,
    )


def _snapshots(r: Rendered) -> Iterator[Snapshot]:
    """The snapshots as workspace.jsonl would give them back; a run of unchanged ones is given once."""
    prev: tuple[str, dict[str, str]] | None = None
    status: dict[str, str] = {}
    for ts, porcelain, hashes in r.snapshots:
        if prev is not None and prev[0] is porcelain and prev[1] is hashes:
            continue  # the very same clone state: distinct_snapshots would drop it
        if prev is None or prev[0] != porcelain:
            status = parse_porcelain(porcelain)
        prev = porcelain, hashes
        at = ts if ts.is_integer() else read_back_ts(ts)  # a whole second reads back as itself
        yield Snapshot(at, status, dict(hashes))


def read(folder: Path) -> tuple[Case, Scenario]:
    """A scenario from its case folder on disk, read as `eval` reads a case (what `make` must equal)."""
    import json

    case = load_case(folder)
    files = CaseFiles(folder)
    adapter = make_adapter(case.format, case.workdir)
    counter = LineCounter()
    timeline = [(ts, adapter.feed(ts, data)) for ts, data in read_events(files.events, counter)]
    return case, Scenario(
        id=case.id,
        format=case.format,
        bucket=case.bucket,
        started_at=case.started_at,
        ended_at=case.ended_at,
        outputs=case.outputs,
        workdir=case.workdir,
        overrides=case.overrides,
        scope=case.scope,
        meta=json.loads((folder / "scenario.json").read_text()),
        timeline=timeline,
        snaps=list(distinct_snapshots(read_snapshots(files.workspace, counter))),
        tracked=read_tracked(files.tracked),
    )


def calls(s: Scenario) -> Iterable[ToolCall]:
    return (c for _, cs in s.timeline for c in cs)
