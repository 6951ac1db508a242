"""The I/O: a trace (telemetry/spans.py) sent over OTLP/HTTP (protobuf) with OpenTelemetry's own exporter.

The exporter comes with the optional `otel` extra; without it `installed()` is
False and nothing here is imported. The exporter's own log lines are kept off
stderr (they may name the endpoint's answer): the attempt's last one becomes
its error, redacted by the caller.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import Any

from orchestrator.config import OtlpConfig
from orchestrator.telemetry.spans import SpanData, Trace

EXTRA_HINT = "pip install 'spiral-orchestrator[otel]'"
_EXPORTER_LOGGER = "opentelemetry.exporter"


def installed() -> str | None:
    """None when the exporter imports; else why not (one line)."""
    try:
        for module in ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
            importlib.import_module(module)
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class _Captured(logging.Handler):
    """The exporter's log lines, by the thread that logged them (each attempt reads its own)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: dict[int, list[str]] = {}
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self.guard:
            if record.thread in self.lines:
                try:
                    self.lines[record.thread].append(record.getMessage())
                except Exception:
                    self.lines[record.thread].append(str(record.msg))

    def watch(self) -> None:
        with self.guard:
            self.lines[threading.get_ident()] = []

    def take(self) -> list[str]:
        with self.guard:
            return self.lines.pop(threading.get_ident(), [])


_CAPTURE = _Captured()
_setup = threading.Lock()


def _capture() -> _Captured:
    with _setup:
        log = logging.getLogger(_EXPORTER_LOGGER)
        if _CAPTURE not in log.handlers:
            log.addHandler(_CAPTURE)
            log.propagate = False  # never on stderr: the error goes into the record, redacted
            log.setLevel(logging.WARNING)
    return _CAPTURE


def _readable(trace: Trace, cfg: OtlpConfig) -> list[Any]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    resource = Resource.create({"service.name": cfg.service_name})
    scope = InstrumentationScope("orchestrator.telemetry")

    def ns(seconds: float) -> int:
        return int(seconds * 1e9)

    def context(span_id: int) -> SpanContext:
        return SpanContext(trace.trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def one(s: SpanData) -> Any:
        return ReadableSpan(
            name=s.name,
            context=context(s.span_id),
            parent=None if s.parent_id is None else context(s.parent_id),
            resource=resource,
            attributes=dict(s.attributes),
            events=[Event(e.name, dict(e.attributes), ns(e.at)) for e in s.events],
            kind=SpanKind.INTERNAL,
            instrumentation_scope=scope,
            status=Status(StatusCode.OK) if s.error is None else Status(StatusCode.ERROR, s.error),
            start_time=ns(s.start),
            end_time=ns(s.end),
        )

    return [one(s) for s in trace.spans]


def send(trace: Trace, cfg: OtlpConfig) -> str | None:
    """Export the trace, within `cfg.timeout_s`; None when the endpoint accepted it, else why not."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    capture = _capture()
    capture.watch()
    exporter = None
    try:
        exporter = OTLPSpanExporter(endpoint=cfg.endpoint, headers=dict(cfg.headers), timeout=cfg.timeout_s)
        result = exporter.export(_readable(trace, cfg))
    except Exception as exc:
        capture.take()
        return f"export failed: {type(exc).__name__}: {exc}"
    finally:
        if exporter is not None:
            try:
                exporter.shutdown()  # type: ignore[no-untyped-call]  # untyped upstream
            except Exception:
                pass
    lines = capture.take()
    if result == SpanExportResult.SUCCESS:
        return None
    return lines[-1] if lines else "the endpoint did not accept the spans"
