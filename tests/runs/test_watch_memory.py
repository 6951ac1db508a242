"""What a long-lived watcher keeps between ticks, and what it writes (issue 17).

The watcher keeps each run's cached detector in memory (runs/evaluator.py `Kept`),
reads the cache file again only when another process rewrote it, and writes it
when it changed, at most once per PERSIST_S. Claude spend is summed per message
in bounded windows (spiral/message_tally.py), so nothing here grows with history.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.record.layout import RunDir
from orchestrator.runs import evaluator
from spiral import message_tally
from spiral.detector import Detector
from spiral.envelope import make_envelope
from spiral.spend import SpendCounter
from spiral.timestamps import format_ts
from tests.helpers import ROOT

SID = "5b0c7f7e-2a43-4c1e-9d55-0d1f2e3a4b5c"
T0 = 1_780_000_000.0


def _assistant(i: int, output: int, *, block: str = "text") -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": output, "cache_read_input_tokens": 100 + i}
    usage["cache_creation_input_tokens"] = 5
    content = [{"type": block, "text": "x"}] if block == "text" else [{"type": "tool_use", "id": f"t{i}"}]
    return {
        "type": "assistant",
        "session_id": SID,
        "message": {"id": f"msg_{i:06d}", "model": "claude-opus-4-8", "content": content, "usage": usage},
    }


def _tokens(c: SpendCounter) -> tuple[int, int, int, int]:
    s = c.spend
    return (s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens)


def _expected(n: int, output: int) -> tuple[int, int, int, int]:
    return (10 * n, output * n, sum(100 + i for i in range(n)), 5 * n)


def test_a_stream_read_far_ahead_of_its_transcript_is_not_counted_twice() -> None:
    """A first pass reads a long run's whole stream, then its transcript from the start."""
    n = message_tally.TAIL * 4
    c = SpendCounter("claude-stream-json")
    for i in range(n):
        c.feed(_assistant(i, 3))  # message_start figures: 3 output tokens
        c.feed(_assistant(i, 3, block="tool_use"))  # a second content block of the same message
    assert _tokens(c) == _expected(n, 3)
    for i in range(n):
        c.feed_transcript(SID, _assistant(i, 40))
    assert _tokens(c) == _expected(n, 40)  # the transcript's final figures, each message once
    # the stream's lines coming again change nothing; a message only the stream has counts
    for i in range(n - 10, n):
        c.feed(_assistant(i, 3))
    c.feed(_assistant(n, 3))
    assert _tokens(c) == tuple(a + b for a, b in zip(_expected(n, 40), (10, 3, 100 + n, 5), strict=True))


def test_spend_state_is_bounded_however_long_the_run() -> None:
    def counter(n: int) -> SpendCounter:
        c = SpendCounter("claude-stream-json")
        for i in range(n):
            c.feed(_assistant(i, 3))
            if i:  # the transcript one message behind the stream, as it is live
                c.feed_transcript(SID, _assistant(i - 1, 40))
        return c

    small, big = len(pickle.dumps(counter(1_000))), len(pickle.dumps(counter(50_000)))
    assert big < 1.5 * small, (small, big)
    c = counter(50_000)
    out = [40 * 49_999 + 3, sum(100 + i for i in range(50_000))]
    assert _tokens(c) == (10 * 50_000, out[0], out[1], 5 * 50_000)  # the last message from the stream


def _run(tmp_path: Path, calls: int) -> RunDir:
    rd = RunDir(tmp_path / "runs" / "r1")
    rd.path.mkdir(parents=True)
    lines = []
    for i in range(calls):
        ts = format_ts(T0 + 10 * i)
        call = {"tool": "Bash", "command": f"pytest tests/test_{i % 7}.py", "id": f"c{i}"}
        lines.append(make_envelope(ts, call))
    rd.events.write_bytes(b"".join(lines))
    return rd


def _fresh(rd: RunDir) -> evaluator.Cached:
    det = Detector(BucketsFile(ROOT / "buckets.yaml").settings, bucket="medium", started_at=T0)
    return evaluator.fresh(det, "generic", str(rd.clone))


def test_the_watcher_keeps_its_state_and_writes_it_at_most_every_persist_s(tmp_path: Path) -> None:
    rd = _run(tmp_path, 40)
    now = [1000.0]
    kept = evaluator.Kept(clock=lambda: now[0])
    path = rd.detector_cache
    assert kept.obtain(path) is None  # no file yet
    cached = _fresh(rd)
    evaluator.catch_up(cached, rd)
    kept.put(path, cached, read=rd.events.stat().st_size)
    assert path.exists(), "a first pass is written at once (a one-pass `status` keeps its work)"
    assert kept.obtain(path) is cached  # the file is as this process left it: the memory is used

    with rd.events.open("ab") as fh:
        fh.write(make_envelope(format_ts(T0 + 500), {"tool": "Read", "path": "a.py", "id": "r1"}))
    now[0] += 1.0
    evaluator.catch_up(cached, rd)
    kept.put(path, cached, read=100)
    written = evaluator.load(path)
    assert written is not None and written.events_offset < cached.events_offset, "written before PERSIST_S"
    assert kept.obtain(path) is cached
    now[0] += evaluator.PERSIST_S
    kept.put(path, cached)  # dirty since the last write: now due
    on_disk = evaluator.load(path)
    assert on_disk is not None and on_disk.events_offset == cached.events_offset
    with rd.events.open("ab") as fh:
        fh.write(make_envelope(format_ts(T0 + 600), {"tool": "Read", "path": "b.py", "id": "r2"}))
    evaluator.catch_up(cached, rd)
    kept.put(path, cached, read=evaluator.PERSIST_BYTES)  # much read since: written at once
    on_disk = evaluator.load(path)
    assert on_disk is not None and on_disk.events_offset == cached.events_offset

    # another process went on from the file: this one reads it again rather than trusting its memory
    other = evaluator.load(path)
    assert other is not None
    other.skipped_lines = 99
    evaluator.save(path, other)
    again = kept.obtain(path)
    assert again is not cached and again is not None and again.skipped_lines == 99


def test_the_watcher_writes_what_is_unwritten_on_its_way_out(tmp_path: Path) -> None:
    rd = _run(tmp_path, 10)
    now = [0.0]
    kept = evaluator.Kept(clock=lambda: now[0])
    cached = _fresh(rd)
    evaluator.catch_up(cached, rd)
    kept.put(rd.detector_cache, cached, read=1)
    with rd.events.open("ab") as fh:
        fh.write(make_envelope(format_ts(T0 + 500), {"tool": "Read", "path": "a.py", "id": "r1"}))
    evaluator.catch_up(cached, rd)
    kept.put(rd.detector_cache, cached, read=1)
    loaded = evaluator.load(rd.detector_cache)
    assert loaded is not None and loaded.events_offset < cached.events_offset
    kept.flush()
    loaded = evaluator.load(rd.detector_cache)
    assert loaded is not None and loaded.events_offset == cached.events_offset


def test_a_first_pass_in_one_go_equals_one_tick_by_tick(tmp_path: Path) -> None:
    rd = _run(tmp_path, 300)
    whole = _fresh(rd)
    evaluator.catch_up(whole, rd)
    data = rd.events.read_bytes()
    rd.events.write_bytes(b"")
    stepped = _fresh(rd)
    for start in range(0, len(data), 997):  # torn lines included: a chunk ends mid-line
        with rd.events.open("ab") as fh:
            fh.write(data[start : start + 997])
        evaluator.catch_up(stepped, rd)
        if start % 5 == 0:  # through the cache file now and then, as separate processes would
            evaluator.save(rd.detector_cache, stepped)
            loaded = evaluator.load(rd.detector_cache)
            assert loaded is not None
            stepped = loaded
    for cached in (whole, stepped):
        evaluator.flush(cached)
    assert stepped.detector.calls == whole.detector.calls == 300
    at = T0 + 3000
    assert stepped.detector.evaluate(at) == whole.detector.evaluate(at)


def test_a_rewritten_transcript_read_again_counts_nothing_twice(tmp_path: Path) -> None:
    from orchestrator.ledger.agent_records import RunSpend, claude_project_name

    config, cwd = tmp_path / "cfg", "/r"
    folder = config / "projects" / claude_project_name(cwd)
    folder.mkdir(parents=True)
    path = folder / f"{SID}.jsonl"
    run = RunSpend.of("claude-stream-json")
    run.feed({"type": "system", "subtype": "init", "session_id": SID, "cwd": cwd})
    lines = [orjson.dumps(_assistant(i, 40) | {"sessionId": SID}) + b"\n" for i in range(200)]
    path.write_bytes(b"".join(lines))
    homes = {"CLAUDE_CONFIG_DIR": str(config)}
    run.read_agent_files(homes)
    once = _tokens(run.counter)
    assert once == _expected(200, 40)
    path.write_bytes(b"".join(lines[:150]))  # rewritten shorter: read again from its start
    run.read_agent_files(homes)
    assert _tokens(run.counter) == once  # nothing counted twice, nothing billed lost
    path.write_bytes(b"".join(lines) + orjson.dumps(_assistant(200, 40) | {"sessionId": SID}) + b"\n")
    run.read_agent_files(homes)
    assert _tokens(run.counter) == _expected(201, 40)


class _InOrder:
    """A detector that notes, in order, each call and snapshot it is given."""

    def __init__(self, det: Any, order: list[tuple[str, float]]) -> None:
        self.det, self.order = det, order

    def add_call(self, c: Any) -> None:
        self.order.append(("call", c.ts - T0))
        self.det.add_call(c)

    def add_snapshot(self, s: Any) -> None:
        self.order.append(("snap", s.ts - T0))
        self.det.add_snapshot(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.det, name)


def test_a_snapshot_written_while_the_events_are_read_waits_for_the_next_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `git commit` call and the clean snapshot after it, both landing mid-pass: the call must reach
    the detector first, or the committed file leaving the status reads as a revert."""
    rd = RunDir(tmp_path / "runs" / "r1")
    rd.path.mkdir(parents=True)
    rd.events.write_bytes(make_envelope(format_ts(T0 + 10), {"tool": "Bash", "command": "echo hi", "id": "c1"}))

    def snap(ts: float, porcelain: str) -> bytes:
        return orjson.dumps({"ts": format_ts(ts), "porcelain": porcelain, "hashes": {}}) + b"\n"

    rd.workspace.write_bytes(snap(T0 + 5, " M src/a.py\n") + snap(T0 + 15, " M src/a.py\n"))
    cached = _fresh(rd)
    order: list[tuple[str, float]] = []
    det = cached.detector
    cached.detector = _InOrder(det, order)  # type: ignore[assignment]  # (a compiled Detector takes no patches)
    real_open, landed = evaluator._open_at, []

    class ThenMore:
        """The events file, and at its end, once, a commit and the clean tree written after it."""

        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> ThenMore:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def __iter__(self) -> Iterator[bytes]:
            yield from self.fh
            if not landed:
                landed.append(True)
                with rd.events.open("ab") as fh:
                    fh.write(make_envelope(format_ts(T0 + 40), {"tool": "Bash", "command": "git commit -am x"}))
                with rd.workspace.open("ab") as fh:
                    fh.write(snap(T0 + 45, ""))

    def open_then_more(path: Path, offset: int) -> Any:
        fh = real_open(path, offset)
        return ThenMore(fh) if path == rd.events else fh

    monkeypatch.setattr(evaluator, "_open_at", open_then_more)
    evaluator.catch_up(cached, rd)
    evaluator.catch_up(cached, rd)
    cached.detector = det
    evaluator.flush(cached)
    assert order == [("snap", 5.0), ("call", 10.0), ("snap", 15.0), ("call", 40.0), ("snap", 45.0)]


def _usage_record(i: int, out: int) -> dict[str, Any]:
    usage = {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": out}
    return {"type": "token_usage_record", "payload": {"response_id": f"resp_{i}", "usage": usage}}


def test_codex_spend_is_summed_as_it_comes_in_bounded_state() -> None:
    def counter(n: int) -> SpendCounter:
        c = SpendCounter("codex-json", "gpt-5.5")
        for i in range(n):
            c.feed_rollout("th", _usage_record(i, 10))
        c.feed_rollout("th", _usage_record(n - 1, 30))  # a response recorded again: its latest figures
        return c

    small, big = counter(1_000), counter(50_000)
    assert len(pickle.dumps(big)) < 1.5 * len(pickle.dumps(small))
    s = big.spend
    assert (s.input_tokens, s.cache_read_tokens, s.output_tokens) == (800 * 50_000, 200 * 50_000, 10 * 50_000 + 20)


def test_a_rewritten_rollout_read_again_counts_nothing_twice(tmp_path: Path) -> None:
    from orchestrator.ledger.agent_records import RunSpend

    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    tid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    path = day / f"rollout-2026-12-01T10-00-00-{tid}.jsonl"
    lines = [orjson.dumps(_usage_record(i, 10)) + b"\n" for i in range(200)]
    path.write_bytes(b"".join(lines))
    run = RunSpend.of("codex-json", "gpt-5.5")
    run.feed({"type": "thread.started", "thread_id": tid})
    homes = {"CODEX_HOME": str(tmp_path / "codex")}
    run.read_agent_files(homes)
    once = run.spend.tokens
    assert once == 200 * 1010
    path.write_bytes(b"".join(lines[:150]))  # rewritten shorter: read again from its start
    run.read_agent_files(homes)
    assert run.spend.tokens == once


def _claude_run(tmp_path: Path, messages: int) -> RunDir:
    rd = RunDir(tmp_path / "runs" / "claude")
    rd.path.mkdir(parents=True)
    lines = [make_envelope(format_ts(T0 + i), _assistant(i, 7, block="tool_use")) for i in range(messages)]
    rd.events.write_bytes(b"".join(lines))
    return rd


def test_a_cache_keeps_the_parts_of_this_version_and_rebuilds_only_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part of detector.pickle has its own version: after an upgrade that changes only spend, the
    walk (the dear part: adapter, detector, intake, outcome) is kept and spend alone is read again."""
    rd = _claude_run(tmp_path, 50)
    det = Detector(BucketsFile(ROOT / "buckets.yaml").settings, bucket="medium", started_at=T0)
    cached = evaluator.fresh(det, "claude-stream-json", str(rd.clone), "claude-opus-4-8")
    evaluator.catch_up(cached, rd)
    assert cached.spend is not None and _tokens(cached.spend.counter) == _expected(50, 7)
    cached.detector.calls += 1000  # a mark: a kept walk part still has it, a rebuilt one would not
    evaluator.save(rd.detector_cache, cached)
    assert evaluator.current(rd.detector_cache)

    # the next version changes spend only: the file's walk part is of this version, its spend part is not
    monkeypatch.setattr(evaluator, "SPEND_VERSION", evaluator.SPEND_VERSION + 1)
    parts = {**evaluator.PARTS, "spend": evaluator.SPEND_VERSION}
    monkeypatch.setattr(
        evaluator, "HEADER", evaluator._PREFIX + " ".join(f"{k}={v}" for k, v in parts.items()).encode() + b"\n"
    )
    assert not evaluator.current(rd.detector_cache)
    loaded = evaluator.load(rd.detector_cache)
    assert loaded is not None and loaded.spend is None and loaded.spend_behind
    assert loaded.detector.calls == cached.detector.calls  # the walk part was kept
    with rd.events.open("ab") as fh:  # the run goes on meanwhile
        fh.write(make_envelope(format_ts(T0 + 60), _assistant(60, 7, block="tool_use")))
    evaluator.catch_up(loaded, rd)
    assert loaded.spend is not None and not loaded.spend_behind
    before_and_after = (10 * 51, 7 * 51, _expected(50, 7)[2] + 100 + 60, 5 * 51)
    assert _tokens(loaded.spend.counter) == before_and_after  # every message once: the old ones re-read, the new
    evaluator.save(rd.detector_cache, loaded)
    assert evaluator.current(rd.detector_cache)

    # a walk version change: nothing of it is kept
    monkeypatch.setattr(evaluator, "WALK_VERSION", evaluator.WALK_VERSION + 1)
    assert evaluator.load(rd.detector_cache) is None
