"""An attempt ends at its deadline, whatever the endpoint does: one that drips a byte at a time (a read
timeout restarts with every byte) holds up neither the sender nor the process's exit."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.notify import delivery
from orchestrator.notify.channels import Notifier, Target
from orchestrator.record import state_file
from orchestrator.runs.pipeline import NOTICES
from tests.helpers import ROOT, state, status_json, tripped_run, wait, write_config
from tests.notify.test_notify_slow import SlowReceiver


class DripReceiver:
    """Accepts, reads the request, starts a 200 answer and never finishes it: a byte every 0.3 s."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.requests += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                end = time.monotonic() + 120  # bounded, as every loop in a test
                while not self.stop.is_set() and time.monotonic() < end:
                    conn.sendall(b"a")
                    time.sleep(0.3)
            except OSError:
                pass  # the sender went away


@pytest.fixture
def drip() -> Iterator[DripReceiver]:
    r = DripReceiver()
    yield r
    r.stop.set()
    r.sock.close()


def test_a_dripping_endpoint_ends_the_attempt_and_the_process_at_the_deadline(drip: DripReceiver) -> None:
    code = (
        "import time\n"
        "from orchestrator.notify.channels import Notifier, Target\n"
        f"n = Notifier(targets=[Target('json://127.0.0.1:{drip.port}/hook')], timeout_s=2.0)\n"
        "t0 = time.monotonic()\n"
        "ok, error = n.send('spiral', 'title', 'body', set(), {})\n"
        "print(round(time.monotonic() - t0, 1), ok, error)\n"
    )
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    whole = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    took, rest = p.stdout.split(" ", 1)
    assert float(took) < 6 and whole < 15, (took, whole)  # apprise alone waited 60 s, then the exit forever
    assert rest.startswith(
        f"set() delivery to json://127.0.0.1:{drip.port}/hook did not finish within the attempt's 2 s"
    ), rest
    assert drip.requests == 1


def test_a_receiver_slower_than_the_deadline_gets_the_page_three_times_then_it_is_given_up(home: Path) -> None:
    slow = SlowReceiver(delay=5.0)  # it takes each page, but answers after the 2.5 s deadline
    try:
        run_dir = tripped_run(home, "r-slow")
        n = Notifier(targets=[Target(slow.url)], timeout_s=3.0, retry_initial_s=0.01, retry_max_s=0.01)
        outcomes = []
        for _ in range(5):
            outcomes.append(delivery.deliver(run_dir, "spiral", n, NOTICES))
            time.sleep(0.05)
        assert [o.split(":")[0] for o in outcomes] == ["failed", "failed", "failed", "gave up", "skipped"], outcomes
        assert outcomes[4] == "skipped: given up"
        rec = state(home, "r-slow")["notices"]["spiral"]
        assert rec["gave_up"] and list(rec["unanswered"].values()) == [3] and rec["next_attempt_at"] is None
        assert "raise notify.timeout_seconds" in rec["last_error"] and not rec["delivered"]
        assert delivery.due(state_file.read(run_dir), n, NOTICES) == []  # no pass sends it again
        row = next(r for r in status_json()["runs"] if r["id"] == "r-slow")
        assert row["notices"]["spiral"] == {
            "delivered": False,
            "attempts": 4,
            "gave_up": True,
            "last_error": rec["last_error"],
        }
        assert len(slow.got) == 3  # each attempt reached it; the fourth sent nothing
    finally:
        slow.stop()


def test_a_hanging_target_holds_up_no_other_and_alone_is_given_up(home: Path, drip: DripReceiver) -> None:
    from orchestrator.demo.sink import Sink

    with Sink() as phone:
        run_dir = tripped_run(home, "r-two")
        hanging = Target(f"json://127.0.0.1:{drip.port}/hook")
        n = Notifier(targets=[hanging, Target(phone.url)], timeout_s=3.0, retry_initial_s=0.01, retry_max_s=0.01)
        first = delivery.deliver(run_dir, "spiral", n, NOTICES)
        assert first.startswith(f"failed: delivery to json://127.0.0.1:{drip.port}/hook did not finish"), first
        assert len(phone.bodies()) == 1  # the working target took it in the first attempt, not after
        outcomes = []
        for _ in range(3):
            time.sleep(0.05)  # past the backoff
            outcomes.append(delivery.deliver(run_dir, "spiral", n, NOTICES))
        assert outcomes[-1].startswith("gave up: gave up on 1 target after 3 attempts"), outcomes
        assert outcomes[-1].endswith("; the others took it")
        rec = state(home, "r-two")
        assert rec["spiral"]["notified"] and len(phone.bodies()) == 1 and drip.requests == 3


def test_an_idle_watcher_stays_while_a_notice_waits_to_be_retried(home: Path) -> None:
    from orchestrator.demo.sink import Sink

    sink = Sink()  # its port, not listening yet: the endpoint is down
    write_config(home, notify={"urls": [sink.url], "retry_initial_seconds": 0.3, "retry_max_seconds": 0.3})
    run_dir = tripped_run(home, "r-owed")
    state_file.update(run_dir, lambda r: state_file.end(r, "failed", "agent exited 1"))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "watch", "--tick", "0.2", "--idle-exit", "1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        started = time.monotonic()

        def owed_and_idle_long() -> bool:  # (or the watcher left: said below)
            tried = state(home, "r-owed")["notices"].get("spiral", {}).get("attempts", 0) >= 2
            return watcher.poll() is not None or (tried and time.monotonic() - started >= 4)

        # two attempts and four times its idle limit: no run is active, but the page is owed
        wait(owed_and_idle_long, timeout=120, what="two attempts, well past the idle limit")
        assert watcher.poll() is None, watcher.stderr.read() if watcher.stderr else ""
        sink.start()  # the endpoint is back: the retry delivers, and then the watcher may go
        assert watcher.wait(timeout=30) == 0
        assert state(home, "r-owed")["notices"]["spiral"]["delivered"]
        bodies = sink.bodies()
        assert [b["title"] for b in bodies if "spiraling" in b["title"]] == ["run r-owed may be spiraling"]
        # ...and the notice of the run's failed ending (a default event: no ending is silent), at least once
        assert {b["title"] for b in bodies} == {"run r-owed failed", "run r-owed may be spiraling"}
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait(timeout=10)
        sink.stop()


def test_the_watch_log_says_how_an_attempt_left_in_flight_ended_and_not_every_skip(home: Path) -> None:
    slow = SlowReceiver(delay=2.0)  # answers after the pass's half-second wait
    try:
        # the page alone: the failed ending's notice (a default event) would interleave its own lines
        write_config(home, notify={"urls": [slow.url], "timeout_seconds": 10, "events": ["spiral"]})
        run_dir = tripped_run(home, "r-late")
        state_file.update(run_dir, lambda r: state_file.end(r, "failed", "agent exited 1"))
        p = subprocess.run(
            [sys.executable, "-m", "orchestrator", "watch", "--tick", "0.3", "--idle-exit", "1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert lines[:2] == [
            "r-late: spiral notice in flight",
            "r-late: spiral notice delivered (the attempt left in flight)",
        ]
        assert not any("skipped" in line for line in lines), lines
        assert len(slow.got) == 1
    finally:
        slow.stop()
