"""A run record as trace data: pure mapping, no I/O, no OpenTelemetry import.

One trace per run: the run's span (`run <ticket>`, from its start to its end)
carries the run's facts as attributes and, as span events, the trip, each
page (the record's notices), each escalation rung, the stop the liveness path
(or `kill`, or a spend ceiling) asked for, and the ending. Each guidance
message is a child span from when it was queued to when the agent received it
(or the run ended), with events for queued, received and its answer.

IDs are derived from the run id, so a retried export sends the very same
spans (a receiver that keeps the latest copy of a span id drops the repeat).
Every text that may carry a secret is redacted on the way in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.record.model import RunRecord
from spiral.timestamps import parse_ts

Attr = str | bool | int | float | list[str]


@dataclass
class EventData:
    name: str
    at: float  # epoch seconds
    attributes: dict[str, Attr] = field(default_factory=dict)


@dataclass
class SpanData:
    name: str
    span_id: int
    start: float  # epoch seconds
    end: float
    parent_id: int | None = None
    attributes: dict[str, Attr] = field(default_factory=dict)
    events: list[EventData] = field(default_factory=list)
    error: str | None = None  # the span's status: None is OK, else an error with this description


@dataclass
class Trace:
    trace_id: int
    spans: list[SpanData]


FAILED_ENDINGS = ("failed", "stalled", "killed", "lost", "over_budget", "no_change", "gave_up")


def _id(run_id: str, part: str, size: int) -> int:
    digest = hashlib.sha256(f"{run_id}/{part}".encode()).digest()
    return int.from_bytes(digest[:size], "big") or 1  # zero is the invalid id


def _put(attrs: dict[str, Attr], key: str, value: Attr | None, clean: Callable[[str], str]) -> None:
    if value is None:
        return
    if isinstance(value, str):
        value = clean(value)
    elif isinstance(value, list):
        value = [clean(v) for v in value]
    attrs[key] = value


def trace_of(record: RunRecord, redact: Callable[[str], str]) -> Trace:
    """The trace of one ended run; `redact` cleans every text that may carry a secret."""
    rid = record.run_id
    start = parse_ts(record.started_at) or parse_ts(record.created_at) or 0.0
    end = max(start, parse_ts(record.ended_at) or start)
    scale = record.time_scale or 1.0

    def at_min(minutes: float | None) -> float | None:  # agent minutes -> a real moment
        return None if minutes is None else min(end, start + minutes * 60.0 / scale)

    def ts(text: str | None, default: float = end) -> float:
        got = parse_ts(text)
        return default if got is None else got

    attrs: dict[str, Attr] = {}

    def put(key: str, value: Attr | None) -> None:
        _put(attrs, key, value, redact)

    put("spiral.run.id", rid)
    put("spiral.ticket", record.ticket_id)
    put("spiral.bucket", record.bucket)
    put("spiral.agent", record.agent)
    put("spiral.model", record.model)
    put("spiral.repo", record.repo)
    put("spiral.ending", record.state)
    put("spiral.ending.reason", record.reason)
    put("spiral.exit_code", record.exit_code)
    put("spiral.verified", record.verified)
    put("spiral.wall_min", round((end - start) * scale / 60.0, 3))  # on the run's clock, as history and tripped_at_min
    put("spiral.time_scale", scale if scale != 1.0 else None)
    sp = record.spend
    if sp is not None:
        put("spiral.tokens", sp.tokens)
        put("spiral.tokens.input", sp.input_tokens)
        put("spiral.tokens.output", sp.output_tokens)
        put("spiral.tokens.cache_read", sp.cache_read_tokens)
        put("spiral.tokens.cache_write", sp.cache_write_tokens)
        put("spiral.cost_usd", sp.cost_usd)  # absent: unknown (an unpriced model), never free
        put("spiral.unpriced_models", list(sp.unpriced_models) or None)
    s = record.spiral
    put("spiral.tool_calls", s.tool_calls)
    put("spiral.region", s.region)
    put("spiral.signals_seen", list(s.signals_seen) or None)
    put("spiral.tripped", s.tripped_in_soft_band)
    put("spiral.tripped_at_min", s.tripped_at_min)
    page = record.notices.get("spiral")
    put("spiral.page.delivered", bool(page and page.delivered))
    put("spiral.guidance.count", len(record.guidance))
    put("spiral.escalations.count", len(record.ladder.climbed))

    root_id = _id(rid, "run", 8)
    events: list[EventData] = []
    trip = at_min(s.tripped_at_min)
    if s.tripped_in_soft_band and trip is not None:
        ev = EventData("tripped", trip, {"spiral.at_min": s.tripped_at_min or 0.0})
        _put(ev.attributes, "spiral.signals", list(s.page_signals), redact)
        _put(ev.attributes, "spiral.evidence", list(s.page_evidence), redact)
        events.append(ev)
    for key, notice in sorted(record.notices.items()):
        ev = EventData(f"page {key}", ts(notice.delivered_at or notice.last_attempt_at))
        ev.attributes["spiral.page.key"] = key
        ev.attributes["spiral.page.delivered"] = notice.delivered
        ev.attributes["spiral.page.attempts"] = notice.attempts
        _put(ev.attributes, "spiral.page.title", notice.title, redact)
        _put(ev.attributes, "spiral.page.last_error", notice.last_error, redact)
        events.append(ev)
    for e in record.ladder.climbed:
        ev = EventData(f"escalation {e.rung} {e.action}", ts(e.at))
        ev.attributes.update({"spiral.escalation.rung": e.rung, "spiral.escalation.action": e.action})
        ev.attributes["spiral.escalation.at_min"] = e.at_min
        _put(ev.attributes, "spiral.escalation.why", e.why, redact)
        _put(ev.attributes, "spiral.signals", list(e.signals) or None, redact)
        _put(ev.attributes, "spiral.guidance.id", e.guidance_id, redact)
        events.append(ev)
    stop = record.stop_requested
    if stop is not None:  # the liveness decision (or kill, or a ceiling) that ended it
        ev = EventData(f"stop requested: {stop.end_as}", ts(stop.at))
        ev.attributes["spiral.stop.as"] = stop.end_as
        _put(ev.attributes, "spiral.stop.reason", stop.reason, redact)
        events.append(ev)
    ending = EventData(f"ended {record.state}", end, {"spiral.ending": record.state})
    _put(ending.attributes, "spiral.ending.reason", record.reason, redact)
    events.append(ending)
    events.sort(key=lambda e: e.at)

    name = f"run {redact(record.ticket_id or rid)}"
    error = (redact(record.reason or record.state)) if record.state in FAILED_ENDINGS else None
    spans = [SpanData(name, root_id, start, end, None, attrs, events, error)]
    for g in record.guidance:
        queued = ts(g.queued_at, start)
        received = parse_ts(g.received_at)
        child = SpanData(f"guidance {g.kind}", _id(rid, f"guidance/{g.id}", 8), queued, end, root_id)
        child.end = max(queued, received if received is not None else end)
        ga = child.attributes
        ga.update({"spiral.guidance.id": redact(g.id), "spiral.guidance.kind": g.kind, "spiral.guidance.by": g.by})
        ga["spiral.guidance.seq"] = g.seq
        for k, v in (("text", g.text), ("via", g.via), ("received_via", g.received_via)):
            _put(ga, f"spiral.guidance.{k}", v, redact)
        _put(ga, "spiral.guidance.answer", g.answer, redact)
        _put(ga, "spiral.guidance.undelivered", g.undelivered, redact)
        child.events.append(EventData("queued", queued))
        if received is not None:
            got = EventData("received", received)
            _put(got.attributes, "spiral.signals", list(g.signals_at_receipt) or None, redact)
            child.events.append(got)
        elif g.undelivered is not None:
            child.events.append(
                EventData("undelivered", child.end, {"spiral.guidance.undelivered": redact(g.undelivered)})
            )
        answered = at_min(g.answer_at_min)
        if g.answer is not None:
            child.events.append(EventData(f"answer {g.answer}", answered if answered is not None else child.end))
        spans.append(child)
    return Trace(_id(rid, "trace", 16), spans)
