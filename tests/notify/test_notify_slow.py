"""Slow and hanging notification endpoints (a real HTTP receiver on 127.0.0.1), idempotency keys, the duplicate window.

A slow 200 is a page sent, once; the watcher's tick does not wait for it; an
endpoint that hangs past the deadline gets a failed attempt and a later retry
with the same idempotency key. Every wait here is bounded.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orchestrator.demo.sink import free_port
from orchestrator.notify import delivery
from orchestrator.notify.channels import Notifier, Target
from orchestrator.record import state_file
from orchestrator.runs.pipeline import NOTICES
from tests.helpers import (
    TINY,
    cli,
    launch,
    spiral_body,
    start_watcher,
    state,
    ticket,
    tripped_run,
    wait,
    wait_passes,
    write_config,
)


class SlowReceiver:
    """json:// receiver that answers after `delay` seconds; keeps each request's headers, body and times."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.port = free_port()
        self.got: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        me = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                arrived = time.time()
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                entry = {"arrived": arrived, "headers": dict(self.headers), "body": json.loads(raw), "answered": None}
                with me._lock:
                    me.got.append(entry)
                end = time.monotonic() + me.delay
                while time.monotonic() < end and me.delay > 0:
                    time.sleep(0.05)
                try:
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.flush()
                    entry["answered"] = time.time()
                except OSError:
                    pass  # the sender gave up on us

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        ThreadingHTTPServer.daemon_threads = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook"

    def stop(self) -> None:
        self.delay = 0.0
        self._server.shutdown()
        self._server.server_close()

    def pages(self, title: str) -> list[dict[str, Any]]:
        with self._lock:
            return [g for g in self.got if g["body"].get("title") == title]


@pytest.fixture
def slow() -> Iterator[SlowReceiver]:
    r = SlowReceiver()
    yield r
    r.stop()


def _key_of(page: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    headers = {k.lower(): v for k, v in page["headers"].items()}
    key = headers.get("idempotency-key")
    field = page["body"].get("idempotency_key")
    return key, field, f"idempotency key: {key}" in page["body"]["message"]


def test_slow_endpoint_gets_one_page_and_the_watcher_keeps_its_tick(
    tmp_path: Path, repo: Path, home: Path, slow: SlowReceiver
) -> None:
    slow.delay = 6.0  # past apprise's own 4 s read timeout, within the attempt's deadline
    write_config(home, notify={"urls": [slow.url], "events": ["spiral"], "timeout_seconds": 20})
    spiraling = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))
    # a busy run past its stuck time (0.1 min) that would end `succeeded` after ~15 s if the tick were late
    stuck = {**TINY, "buckets": {"small": {"expected_min": 0.01, "soft_start_min": 0.05, "stuck_min": 0.1}}}
    busy = "\n".join(['say {"tool": "Read", "file_path": "src/app.py"}', "sleep 0.3"] * 50)
    other = launch(ticket(tmp_path, repo, busy, name="busy", overrides=stuck))
    watcher = start_watcher()
    title = f"run {spiraling} may be spiraling"
    try:
        wait(lambda: state(home, other)["state"] != "running", timeout=30, what="the stuck run's stop")
        s = state(home, other)
        assert s["state"] == "stalled" and "stuck time" in s["reason"], s["reason"]
        ran = time.mktime(time.strptime(s["ended_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.mktime(
            time.strptime(s["started_at"][:19], "%Y-%m-%dT%H:%M:%S")
        )
        assert ran <= 6 + 3, f"stopped {ran:.0f} s after its start (stuck time 6 s): the tick waited"
        wait(lambda: bool(state(home, spiraling).get("notices", {}).get("spiral", {}).get("delivered")), 30, "page")
        pages = slow.pages(title)
        assert pages and pages[0]["answered"] is not None
        wait_passes(10)  # ten more passes: nothing is sent again
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    pages = slow.pages(title)
    assert len(pages) == 1, [p["arrived"] for p in pages]
    rec = state(home, spiraling)["notices"]["spiral"]
    assert rec["attempts"] == 1 and rec["last_error"] is None and rec["claim"] is None
    assert _key_of(pages[0]) == (f"{spiraling}/spiral", f"{spiraling}/spiral", True)
    print(f"slow endpoint ({slow.delay:g} s): {len(pages)} page(s) received; stuck run stopped after {ran:.0f} s")
    cli("kill", spiraling)


def test_hanging_endpoint_fails_at_the_deadline_and_is_retried_with_the_same_key(
    home: Path, slow: SlowReceiver
) -> None:
    slow.delay = 60.0
    run_dir = tripped_run(home, "r-hang")
    # 3 s: an attempt's sender process starts, imports apprise and reaches the receiver well within it
    # even on a loaded machine (at 1 s, one attempt was cut before it had sent anything)
    n = Notifier(targets=[Target(slow.url)], timeout_s=3.0, retry_initial_s=0.3, retry_max_s=0.3)
    t0 = time.monotonic()
    first = delivery.start(run_dir, "spiral", n, NOTICES, background=True)
    assert first.wait(0.1) == "in flight" and time.monotonic() - t0 < 1.0  # the caller goes on
    again = delivery.start(run_dir, "spiral", n, NOTICES, background=True)
    assert again.wait(1) == "skipped: in flight (another sender holds its lease)"  # not started twice
    outcome = first.wait(10)
    took = time.monotonic() - t0
    assert outcome.startswith("failed: delivery to") and 2.9 <= took < 9, (outcome, took)
    rec = state(home, "r-hang")["notices"]["spiral"]
    assert rec["attempts"] == 1 and not rec["delivered"] and rec["claim"] is None and rec["next_attempt_at"]
    assert delivery.deliver(run_dir, "spiral", n, NOTICES) == "skipped: waiting to retry"
    time.sleep(0.4)
    second = delivery.start(run_dir, "spiral", n, NOTICES, background=True)
    assert second.wait(10).startswith("failed")  # still hanging: failed again, by its deadline
    slow.delay = 0.0
    time.sleep(0.4)
    assert delivery.deliver(run_dir, "spiral", n, NOTICES) == "delivered"
    assert delivery.deliver(run_dir, "spiral", n, NOTICES) == "skipped: already delivered"
    pages = slow.pages("run r-hang may be spiraling")
    assert len(pages) == 3  # each attempt reached the receiver; only the last was answered in time
    assert {_key_of(p) for p in pages} == {("r-hang/spiral", "r-hang/spiral", True)}
    rec = state(home, "r-hang")["notices"]["spiral"]
    assert rec["delivered"] and rec["attempts"] == 3
    print(f"hanging endpoint: {len(pages)} requests received, 1 distinct idempotency key, delivered on attempt 3")


def test_hook_gets_the_same_key_on_every_attempt(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "keys.txt"
    # fails on its first run, succeeds on its second
    hook = [
        sys.executable,
        "-c",
        "import os, sys; p = sys.argv[1]; first = not os.path.exists(p)\n"
        "open(p, 'a').write(os.environ['ORCH_IDEMPOTENCY_KEY'] + '\\n'); sys.exit(1 if first else 0)",
        str(out),
    ]
    run_dir = tripped_run(home, "r-hook")
    n = Notifier(command=tuple(hook), retry_initial_s=0.01, retry_max_s=0.01)
    assert delivery.deliver(run_dir, "spiral", n, NOTICES).startswith("failed: notify command exited 1")
    time.sleep(0.05)
    assert delivery.deliver(run_dir, "spiral", n, NOTICES) == "delivered"
    assert out.read_text().splitlines() == ["r-hook/spiral", "r-hook/spiral"]


def test_the_duplicate_window_is_milliseconds(home: Path, slow: SlowReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the receiver's 200 to the record that the channel is done: a crash inside it sends again."""
    recorded: dict[str, float] = {}
    real_write = state_file.write

    def write(run: Any, record: Any) -> None:
        real_write(run, record)
        page = record.notices.get("spiral")
        if page is not None and page.channels_done and record.run_id not in recorded:
            recorded[record.run_id] = time.time()

    monkeypatch.setattr(state_file, "write", write)
    n = Notifier(targets=[Target(slow.url)])
    runs = [f"r-w{i}" for i in range(30)]
    for run_id in runs:
        assert delivery.deliver(tripped_run(home, run_id), "spiral", n, NOTICES) == "delivered"
    from_200, from_arrival = [], []
    for run_id in runs:
        (page,) = slow.pages(f"run {run_id} may be spiraling")
        from_200.append(recorded[run_id] - page["answered"])
        from_arrival.append(recorded[run_id] - page["arrived"])
    ms = sorted(x * 1000 for x in from_200)
    print(
        f"duplicate window over {len(ms)} sends, 200 -> record: median {statistics.median(ms):.1f} ms,"
        f" max {ms[-1]:.1f} ms; request arrival -> record: median {statistics.median(from_arrival) * 1000:.1f} ms"
    )
    assert statistics.median(ms) < 250
