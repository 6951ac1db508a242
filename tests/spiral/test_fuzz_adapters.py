"""Hostile log lines (issue "Hostile world", item 1): no line is fatal, every bad line is counted,
and the verdict on the valid lines around them is unchanged.

Each format's spiraling corpus case (tests/hostile.py CASES) gets generated hostile lines
mixed in, through (a) the pure adapters and `Outcome.feed`, (b) replay of a copy of the case
folder, (c) the live evaluator (`catch_up` on a run folder that grows tick by tick, its cache
pickled in between as `status`/`watch` do). Fixed seed (derandomize), a CI-sized budget;
speedbench/fuzz.py runs the same generators far longer.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import replay_case
from orchestrator.record.case import load_case
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import parse_snapshot_line, read_tracked
from orchestrator.runs import evaluator
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.envelope import parse_envelope
from spiral.model import ToolCall
from spiral.outcome import Outcome
from tests.helpers import CORPUS
from tests.hostile import CASES, FORMATS, bad_line, envelopes, mutated, skippable

FUZZ = settings(
    derandomize=True,  # the same lines on every run: CI never flakes
    database=None,
    deadline=None,
    max_examples=120,
    suppress_health_check=list(HealthCheck),
)
BUCKETS = BucketsFile()
FUZZED: dict[str, int] = {}  # hostile lines fed, by test (FUZZ_REPORT=1 prints them at exit)


def counted(test: str, n: int) -> None:
    FUZZED[test] = FUZZED.get(test, 0) + n


if os.environ.get("FUZZ_REPORT"):
    atexit.register(lambda: print("hostile lines fed:", FUZZED, "total", sum(FUZZED.values())))


def write_line(ts: float, data: Any) -> bytes:
    """One envelope as a hostile agent might get it written: stdlib JSON, NaN and lone surrogates
    included (such a line is unreadable, so the reader counts it); exactly one line either way."""
    try:
        text = json.dumps({"ts": ts, "data": data})
    except (RecursionError, ValueError):
        return b"\xff{}\n"
    return text.encode() + b"\n"


@cache
def valid(fmt: str) -> list[tuple[bytes, float, Any]]:
    return envelopes(CORPUS / CASES[fmt] / "events.jsonl")


def feed_all(fmt: str, items: list[tuple[float, Any]]) -> tuple[list[str], int, Any]:
    adapter = make_adapter(fmt, load_case(CORPUS / CASES[fmt]).workdir)
    outcome = Outcome()
    calls: list[ToolCall] = []
    for ts, data in items:
        outcome.feed(ts, data)
        calls.extend(adapter.feed(ts, data))
    return [f"{c!r} {c.output!r}" for c in calls], adapter.skipped, adapter


def mix(clean: list[Any], inserts: list[tuple[int, Any]]) -> list[Any]:
    """`clean` with each insert placed before the valid item at its index (mod the length)."""
    at: dict[int, list[Any]] = {}
    for i, item in inserts:
        at.setdefault(i % (len(clean) + 1), []).append(item)
    out: list[Any] = []
    for i in range(len(clean) + 1):
        out.extend(at.get(i, []))
        if i < len(clean):
            out.append(clean[i])
    return out


def hostile_lines(fmt: str) -> st.SearchStrategy[list[tuple[int, Any]]]:
    """(position, hostile payload or b"raw bad line") to insert into the case's events."""
    raw = [line for line, _, _ in valid(fmt)]
    return st.lists(st.tuples(st.integers(min_value=0), skippable(fmt) | bad_line(raw)), min_size=5, max_size=40)


# ---- (a) the pure adapters (and Outcome.feed) ----------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_skippable_payloads_are_counted_and_change_no_call(fmt: str, data: st.DataObject) -> None:
    clean = [(ts, d) for _, ts, d in valid(fmt)]
    ref_calls, ref_skipped, _ = feed_all(fmt, clean)
    inserts = data.draw(st.lists(st.tuples(st.integers(min_value=0), skippable(fmt)), min_size=10, max_size=60))
    # a hostile payload gets the time of the valid line after it
    mixed = mix(clean, [(i, (clean[min(i % (len(clean) + 1), len(clean) - 1)][0], p)) for i, p in inserts])
    calls, skipped, _ = feed_all(fmt, mixed)
    counted(f"skippable[{fmt}]", len(inserts))
    assert skipped == ref_skipped + len(inserts)
    assert calls == ref_calls


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_any_mutation_of_a_valid_payload_is_never_fatal(fmt: str, data: st.DataObject) -> None:
    clean = [(ts, d) for _, ts, d in valid(fmt)]
    payloads = [d for _, d in clean]
    inserts = data.draw(st.lists(st.tuples(st.integers(min_value=0), mutated(payloads)), min_size=10, max_size=60))
    mixed = mix(clean, [(i, (clean[min(i % (len(clean) + 1), len(clean) - 1)][0], p)) for i, p in inserts])
    counted(f"mutated[{fmt}]", len(inserts))
    adapter = make_adapter(fmt, "/home/dev/clone")
    outcome = Outcome()
    for ts, payload in mixed:
        outcome.feed(ts, payload)
        for call in adapter.feed(ts, payload):  # every field of what comes out has its type
            assert type(call.tool) is str and type(call.ts) is float
            assert all(v is None or type(v) is str for v in (call.command, call.path, call.call_id, call.cwd))
            assert call.exit_code is None or type(call.exit_code) is int
    assert adapter.skipped >= 0


# ---- (b) replay of a case folder -----------------------------------------------------------


@cache
def clean_replay(fmt: str) -> tuple[float | None, list[str], int, int]:
    r = replay_case(CORPUS / CASES[fmt], BUCKETS)
    assert r.passed
    return r.notified_at_min, r.signals, r.tool_calls, r.skipped_lines


def hostile_events(fmt: str, inserts: list[tuple[int, Any]]) -> bytes:
    rows = valid(fmt)
    lines = [line for line, _, _ in rows]
    out = []
    for i, item in inserts:
        ts = rows[min(i % (len(rows) + 1), len(rows) - 1)][1]
        out.append((i, item + b"\n" if isinstance(item, bytes) else write_line(ts, item)))
    return b"".join(mix(lines, out))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_replay_with_hostile_lines_keeps_the_verdict(fmt: str, data: st.DataObject) -> None:
    inserts = data.draw(hostile_lines(fmt))
    with tempfile.TemporaryDirectory() as tmp:
        case = Path(tmp) / CASES[fmt]
        shutil.copytree(CORPUS / CASES[fmt], case)
        (case / "events.jsonl").write_bytes(hostile_events(fmt, inserts))
        r = replay_case(case, BUCKETS)
    counted(f"replay[{fmt}]", len(inserts))
    notified, signals, tool_calls, skipped = clean_replay(fmt)
    assert (r.notified_at_min, r.signals, r.tool_calls) == (notified, signals, tool_calls)
    # replay's drive() consumes, and never feeds, the one line at which its walk pages and stops
    # (orchestrator/corpus/replay.py): that line, if a bad one, goes uncounted
    assert skipped + len(inserts) - (notified is not None) <= r.skipped_lines <= skipped + len(inserts)
    assert r.passed


# ---- (c) the live evaluator ----------------------------------------------------------------


def live(fmt: str, events: bytes) -> tuple[float | None, list[str], int, int]:
    """The run's files growing tick by tick, `catch_up` and an evaluation at each tick (the cache
    pickled between looks, as `status`/`watch` keep it): (page minute, signals, calls, skipped)."""
    src = CORPUS / CASES[fmt]
    case = load_case(src)
    lines = events.splitlines(keepends=True)
    stamps = [_ts(line) for line in lines]
    ws_lines = (src / "workspace.jsonl").read_bytes().splitlines(keepends=True)
    ws_stamps = [_ts(line) for line in ws_lines]
    settings_ = BUCKETS.with_overrides(case.overrides, case.source, case.lines, ("overrides",))
    with tempfile.TemporaryDirectory() as tmp:
        run = CaseFiles(Path(tmp))
        det = Detector(
            settings_,
            bucket=case.bucket,
            started_at=case.started_at,
            tracked=read_tracked(src / "tracked.txt"),
            outputs=list(case.outputs),
            workdir=case.workdir,
        )
        cached = evaluator.fresh(det, case.format, case.workdir)
        cache_file = Path(tmp) / "detector.pickle"
        tick, i, j, k, notified, fired = settings_.tick_s or 30.0, 0, 0, 0, None, set()
        with run.events.open("ab") as ev, run.workspace.open("ab") as ws:
            now = case.started_at
            while now <= case.ended_at and notified is None:
                while i < len(lines) and (stamps[i] is None or stamps[i] <= now):
                    ev.write(lines[i])
                    i += 1
                while j < len(ws_lines) and (ws_stamps[j] is None or ws_stamps[j] <= now):
                    ws.write(ws_lines[j])
                    j += 1
                ev.flush()
                ws.flush()
                evaluator.catch_up(cached, run)
                v = cached.detector.evaluate(cached.agent_time(now))
                fired.update(v.signals if v.findings else ())
                if v.should_page:
                    notified = round(v.elapsed_min, 2)
                k += 1
                if k % 20 == 0:
                    evaluator.save(cache_file, cached)
                    loaded = evaluator.load(cache_file)
                    assert loaded is not None
                    cached = loaded
                now += tick
            ev.writelines(lines[i:])  # the rest of the run, read once more at its end
            ws.writelines(ws_lines[j:])
        evaluator.catch_up(cached, run)
        evaluator.flush(cached)
        return notified, sorted(fired), cached.detector.calls, cached.skipped_lines + cached.adapter.skipped


def _ts(line: bytes) -> float | None:
    env = parse_envelope(line)
    if env is not None:
        return env[0]
    snap = parse_snapshot_line(line)
    return snap.ts if snap is not None else None


@cache
def clean_live(fmt: str) -> tuple[float | None, list[str], int, int]:
    return live(fmt, (CORPUS / CASES[fmt] / "events.jsonl").read_bytes())


@pytest.mark.parametrize("fmt", FORMATS)
@settings(FUZZ, max_examples=12)
@given(data=st.data())
def test_live_evaluator_with_hostile_lines_keeps_the_verdict(fmt: str, data: st.DataObject) -> None:
    inserts = data.draw(hostile_lines(fmt))
    notified, signals, calls, skipped = live(fmt, hostile_events(fmt, inserts))
    ref = clean_live(fmt)
    counted(f"live[{fmt}]", len(inserts))
    assert ref[0] is not None and not math.isnan(ref[0])  # the clean run pages live too
    assert (notified, signals, calls) == ref[:3]
    assert skipped == ref[3] + len(inserts)
