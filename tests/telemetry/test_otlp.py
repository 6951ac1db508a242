"""OpenTelemetry export: the spans of real fake-agent runs, received by a real OTLP/HTTP receiver on 127.0.0.1.

The receiver decodes each POST /v1/traces body with opentelemetry-proto's
ExportTraceServiceRequest, so what is asserted is what an observability tool
(Jaeger, Tempo, Langfuse) would get.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.helpers import (
    BEARER,
    SECRET,
    TINY,
    Receiver,
    cli,
    launch,
    one_line_error,
    spiral_body,
    start_watcher,
    state,
    ticket,
    wait,
    wait_passes,
    without_module,
    write_config,
)

HEADER_SECRET = "otlp-header-secret-" + "Z" * 24
LOOP = json.dumps({"tool": "Bash", "command": "python tmp_loop.py"})


class OtlpReceiver:
    """POST /v1/traces: answers `codes` in turn (then 200), or with `hang` holds every request until stopped."""

    def __init__(self, codes: tuple[int, ...] = (), hang: bool = False) -> None:
        self.codes, self.hang = list(codes), hang
        self.requests: list[dict[str, Any]] = []  # status, headers, body (bytes) of each POST
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                if outer.hang:
                    outer.release.wait(30)
                code = outer.codes.pop(0) if outer.codes else 200
                outer.requests.append({"status": code, "headers": dict(self.headers), "body": body})
                reply = ExportTraceServiceResponse().SerializeToString() if code == 200 else b"no"
                self.send_response(code)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[ExportTraceServiceRequest]:
        out = []
        for r in list(self.requests):
            if r["status"] == 200:
                req = ExportTraceServiceRequest()
                req.ParseFromString(r["body"])
                out.append(req)
        return out

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, span) of every accepted span."""
        return [
            (attrs(rs.resource.attributes), span)
            for req in self.accepted()
            for rs in req.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]

    def runs(self, run_id: str) -> list[Any]:
        return [s for _, s in self.spans() if attrs(s.attributes).get("spiral.run.id") == run_id]


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@pytest.fixture
def otlp() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver()
    yield r
    r.stop()


def configure(home: Path, endpoint: str, notify: dict[str, Any] | None = None, **otlp_keys: Any) -> None:
    # 5 s: short enough that the silent run below is stopped well inside its wait, long enough that a
    # loaded machine pausing the scripted spiral for a second does not stop that run too
    write_config(home, heartbeat=5.0, notify=notify)
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["otlp"] = {
        "endpoint": endpoint,
        "headers": {"authorization": f"Bearer {HEADER_SECRET}"},
        "service_name": "otlp-test",
        **otlp_keys,
    }
    (home / "config.yaml").write_text(json.dumps(cfg))


def quick_run(tmp_path: Path, repo: Path, home: Path, name: str = "quick") -> str:
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name=name))
    wait(lambda: state(home, run_id)["state"] == "succeeded", what="the run's end")
    return run_id


def seen(home: Path, run_id: str, watcher: Any) -> str:
    """What a wait that timed out saw: the run's state, spiral, notices, and whether the watcher lives."""
    s = state(home, run_id)
    alive = "alive" if watcher.poll() is None else f"exited {watcher.returncode}: {stop(watcher)[-2000:]}"
    keep = {k: s.get(k) for k in ("state", "reason", "spiral", "notices", "tool_calls")}
    return f"watcher {alive}; {json.dumps(keep, default=str)[:3000]}"


def stop(p: Any) -> str:
    p.terminate()
    _, err = p.communicate(timeout=20)
    return err.decode(errors="replace")


def test_one_span_per_run_with_its_facts_and_events_exported_once(
    tmp_path: Path, repo: Path, home: Path, otlp: OtlpReceiver
) -> None:
    pages = Receiver().start()
    try:
        configure(home, otlp.url, notify={"urls": [pages.url]})
        # a spiral that prints secrets, is paged, takes guidance, recovers and succeeds
        steps = spiral_body(n=0, secret=True).splitlines() + ["on-guidance recover"]
        steps += [f"say {LOOP}", "sleep 0.05"] * 1500 + ["label recover"]
        steps += [f"say {json.dumps({'tool': 'Edit', 'path': f'src/m{i}.py'})}\nsleep 0.05" for i in range(10)]
        watcher = start_watcher()
        spiral = launch(ticket(tmp_path, repo, "\n".join(steps), name="spiral", overrides=TINY))
        wait(
            lambda: state(home, spiral)["notices"].get("spiral", {}).get("delivered"),
            timeout=90,
            what="the page",
            explain=lambda: seen(home, spiral, watcher),
        )
        assert cli("nudge", spiral, "Stop running tmp_loop.py; write the module.").returncode == 0
        # a silent run that the liveness path stops (heartbeat 5 s)
        silent = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nsleep 60', name="quiet"))
        wait(lambda: len(otlp.runs(spiral)) == 1 and len(otlp.runs(silent)) == 1, timeout=60, what="both traces")
        wait_passes(5)  # more watcher passes
        err = stop(watcher)
        second = start_watcher()  # a restarted watcher, and two `status` passes: nothing is sent again
        wait_passes(5)
        outs = [cli("status", "--json") for _ in range(2)]
        err += stop(second)
    finally:
        pages.stop()
    assert len(otlp.runs(spiral)) == 1 and len(otlp.runs(silent)) == 1
    assert len(otlp.requests) == 2 and all(r["status"] == 200 for r in otlp.requests)
    assert all(r["headers"].get("authorization") == f"Bearer {HEADER_SECRET}" for r in otlp.requests)
    for text in [err, *(p.stderr + p.stdout for p in outs), *(r["body"].decode("latin-1") for r in otlp.requests)]:
        assert SECRET not in text and BEARER not in text and "hunter2pass" not in text
        assert HEADER_SECRET not in text

    s = state(home, spiral)
    assert s["state"] == "succeeded" and s["otlp"]["exported_at"] and s["otlp"]["attempts"] == 1
    (root,) = otlp.runs(spiral)
    a = attrs(root.attributes)
    assert root.name == "run spiral" and not root.parent_span_id
    assert {"service.name": "otlp-test"}.items() <= otlp.spans()[0][0].items()
    assert a["spiral.ticket"] == "spiral" and a["spiral.bucket"] == "small" and a["spiral.agent"] == "fake"
    assert a["spiral.ending"] == "succeeded" and a["spiral.ending.reason"] == s["reason"]
    assert a["spiral.tripped_at_min"] == s["spiral"]["tripped_at_min"] and a["spiral.page.delivered"] is True
    assert a["spiral.tokens"] == s["spend"]["tokens"] and a["spiral.tool_calls"] == s["spiral"]["tool_calls"]
    assert "spiral.cost_usd" not in a or a["spiral.cost_usd"] == s["spend"]["cost_usd"]
    from spiral.timestamps import parse_ts

    assert abs(root.start_time_unix_nano / 1e9 - (parse_ts(s["started_at"]) or 0)) < 0.01
    assert abs(root.end_time_unix_nano / 1e9 - (parse_ts(s["ended_at"]) or 0)) < 0.01
    names = [e.name for e in root.events]
    assert names[-1] == "ended succeeded" and "tripped" in names and "page spiral" in names
    page = attrs(next(e for e in root.events if e.name == "page spiral").attributes)
    assert page["spiral.page.delivered"] is True and page["spiral.page.attempts"] == 1
    (guide,) = [sp for _, sp in otlp.spans() if sp.parent_span_id == root.span_id]
    g = attrs(guide.attributes)
    assert guide.name == "guidance text" and guide.trace_id == root.trace_id
    assert g["spiral.guidance.id"] == "g1" and g["spiral.guidance.answer"] == s["guidance"][0]["answer"]
    assert [e.name for e in guide.events][:2] == ["queued", "received"]

    q = state(home, silent)
    assert q["state"] == "stalled"
    (root,) = otlp.runs(silent)
    a = attrs(root.attributes)
    assert a["spiral.ending"] == "stalled" and root.status.code == 2  # STATUS_CODE_ERROR
    stop_ev = next(e for e in root.events if e.name == "stop requested: stalled")
    assert attrs(stop_ev.attributes)["spiral.stop.reason"] == q["stop_requested"]["reason"]


def test_a_500_then_200_is_delivered_on_a_retry(tmp_path: Path, repo: Path, home: Path) -> None:
    flaky = OtlpReceiver(codes=(500,))
    try:
        configure(home, flaky.url, retry_initial_seconds=0.3, retry_max_seconds=1)
        watcher = start_watcher()
        run_id = quick_run(tmp_path, repo, home)
        wait(lambda: len(flaky.runs(run_id)) == 1, timeout=30, what="the retried export")
        wait_passes(5)
        stop(watcher)
    finally:
        flaky.stop()
    assert [r["status"] for r in flaky.requests] == [500, 200]
    x = state(home, run_id)["otlp"]
    assert x["attempts"] == 2 and x["exported_at"] and x["last_error"] is None


def test_a_hanging_receiver_holds_status_only_until_its_timeout(tmp_path: Path, repo: Path, home: Path) -> None:
    hung = OtlpReceiver(hang=True)
    try:
        configure(home, hung.url, timeout_seconds=1)
        run_id = quick_run(tmp_path, repo, home)
        t0 = time.monotonic()
        p = cli("status", "--json", timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        # the same `status` again, its export not due yet: what a status costs on this host now, side
        # by side (a busy host makes both slow); the hanging receiver added its 1 s timeout, and one
        # retry at most, not the minute the receiver would hold it
        t1 = time.monotonic()
        assert cli("status", "--json", timeout=60).returncode == 0
        alone = time.monotonic() - t1
        assert took - alone < 8, (took, alone)
        row = next(r for r in json.loads(p.stdout)["runs"] if r["id"] == run_id)
        assert row["state"] == "succeeded"
        x = state(home, run_id)["otlp"]
        assert x["exported_at"] is None and x["attempts"] == 1 and x["last_error"] and x["next_attempt_at"]
        assert HEADER_SECRET not in p.stderr + json.dumps(x)
    finally:
        hung.stop()


@pytest.mark.parametrize(
    "otlp_yaml, needle",
    [
        ("otlp:\n  endpoint: ftp://127.0.0.1/v1/traces\n", ":2: otlp.endpoint must be an http:// or https:// URL"),
        ("otlp:\n  headers: {a: b}\n", ":2: missing key 'otlp.endpoint'"),
        ("otlp: http://127.0.0.1:4318\n", ":1: otlp must be a mapping with an endpoint"),
        ("otlp:\n  endpoint: http://h/v1/traces\n  timeout_seconds: 0\n", ":3: otlp.timeout_seconds must be"),
        ("otlp:\n  endpoint: http://h/v1/traces\n  colour: red\n", ":3: unknown key 'otlp.colour'"),
        (
            f"otlp:\n  endpoint: http://h/v1/traces\n  headers:\n    authorization: [{HEADER_SECRET}]\n",
            ":4: otlp.headers.authorization must be text on one line (its value is not shown)",
        ),
    ],
)
def test_bad_otlp_config_is_one_line_with_file_and_line(home: Path, otlp_yaml: str, needle: str) -> None:
    (home / "config.yaml").write_text(otlp_yaml)
    line = one_line_error(cli("status"), str(home / "config.yaml") + needle)
    assert HEADER_SECRET not in line


def test_configured_without_the_extra_is_a_one_line_note(
    tmp_path: Path, repo: Path, home: Path, otlp: OtlpReceiver
) -> None:
    no_otel = without_module(tmp_path, "opentelemetry")
    configure(home, otlp.url)
    run_id = quick_run(tmp_path, repo, home)
    for _ in range(2):
        p = cli("status", env=no_otel)
        assert p.returncode == 0, p.stderr
        # (the other line: no notification target is configured in this home)
        lines = [x for x in p.stderr.strip().splitlines() if not x.startswith("status: no notification target")]
        assert len(lines) == 1 and "not installed" in lines[0] and "[otel]" in lines[0], p.stderr
        assert "Traceback" not in p.stderr and HEADER_SECRET not in p.stderr
    assert state(home, run_id).get("otlp") is None and not otlp.requests
    p = cli("status")  # installed after all: the run that ended meanwhile is sent
    assert p.returncode == 0 and "otlp" not in p.stderr, p.stderr

    def sent() -> bool:  # by that pass, or (when it found the run's lock busy) by a later one
        return len(otlp.runs(run_id)) == 1 or (cli("status").returncode == 0 and len(otlp.runs(run_id)) == 1)

    wait(sent, timeout=120, what="the export")


def test_the_spans_wall_minutes_are_on_the_runs_clock_as_the_ledger_counts_them() -> None:
    from orchestrator.record.model import RunRecord
    from orchestrator.telemetry.spans import trace_of

    record = RunRecord(
        run_id="r", state="succeeded", started_at="2026-01-01T00:00:00Z", ended_at="2026-01-01T00:01:30Z"
    )
    record.time_scale = 60.0  # the demo's clock: 90 real seconds are 90 run minutes
    run_span = trace_of(record, str).spans[0]
    assert run_span.attributes["spiral.wall_min"] == 90.0 and run_span.attributes["spiral.time_scale"] == 60.0
