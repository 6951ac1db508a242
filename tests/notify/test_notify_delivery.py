"""The page: delivered to a real HTTP receiver exactly once, across races, outages and crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import (
    BEARER,
    ROOT,
    SECRET,
    TINY,
    Receiver,
    cli,
    launch,
    spiral_body,
    spiral_pages,
    start_watcher,
    state,
    status_json,
    ticket,
    tripped_run,
    wait,
    wait_passes,
    write_config,
)


def test_one_page_with_watcher_and_20_status_processes_racing(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))
    watcher = start_watcher()
    try:
        racers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import subprocess, sys, time\n"
                    "end = time.time() + 6\n"
                    "while time.time() < end:\n"
                    "    subprocess.run([sys.executable, '-m', 'orchestrator', 'status', '--json'],"
                    " capture_output=True)\n",
                ],
                cwd=ROOT,
            )
            for _ in range(20)
        ]
        for r in racers:
            r.wait(timeout=120)
        wait(lambda: spiral_pages(receiver, run_id) >= 1, timeout=20, what="the page")
        wait_passes(5)  # a few more watcher passes
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    assert spiral_pages(receiver, run_id) == 1
    s = state(home, run_id)
    assert s["spiral"]["notified"] is True and s["notices"]["spiral"]["delivered"] is True
    assert s["notices"]["spiral"]["attempts"] == 1
    cli("kill", run_id)


def test_receiver_down_then_up_delivers_exactly_once_later(tmp_path: Path, repo: Path, home: Path) -> None:
    down = Receiver()  # not started: nothing listens on its port yet
    write_config(home, notify={"urls": [down.url], "retry_initial_seconds": 0.5, "retry_max_seconds": 1})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))

    def attempts() -> int:
        status_json()
        return int(state(home, run_id).get("notices", {}).get("spiral", {}).get("attempts", 0))

    wait(lambda: attempts() >= 1, timeout=20, what="a first delivery attempt")
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["notified"] is False and row["page_error"], row
    rec = state(home, run_id)["notices"]["spiral"]
    assert not rec.get("delivered")
    assert rec["last_error"].startswith(f"delivery to {down.url} failed: ")  # with what apprise said of it
    assert "Connection error" in rec["last_error"], rec["last_error"]
    down.start()
    try:
        wait(lambda: status_json() and spiral_pages(down, run_id) >= 1, timeout=20, what="the late page")
        for _ in range(5):
            status_json()
        assert spiral_pages(down, run_id) == 1
        rec = state(home, run_id)["notices"]["spiral"]
        assert rec["delivered"] is True and rec["attempts"] >= 2 and rec["last_error"] is None
        table = cli("status").stdout
        assert "sent" in table
    finally:
        down.stop()
        cli("kill", run_id)


def test_watcher_killed_and_restarted_pages_once(tmp_path: Path, repo: Path, home: Path, receiver: Receiver) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))
    first = start_watcher()
    try:
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=20, what="the page")
        # killed once the page is recorded: a sender killed between the receiver's 200 and that record
        # sends again, by design (notify/delivery.py: at-least-once in that window, one idempotency key)
        wait(lambda: bool(state(home, run_id)["notices"]["spiral"].get("delivered")), timeout=20, what="the record")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    second = start_watcher()
    try:
        wait_passes(5)
        assert second.poll() is None, second.stderr.read() if second.stderr else ""
    finally:
        second.terminate()
        second.wait(timeout=10)
    assert spiral_pages(receiver, run_id) == 1
    cli("kill", run_id)


def test_secrets_in_agent_output_never_reach_the_receiver(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(secret=True), overrides=TINY))
    wait(lambda: bool(status_json()) and spiral_pages(receiver, run_id) == 1, timeout=20, what="the page")
    body = "\n".join(receiver.messages())
    assert "tmp_loop.py" in body and "logs " + run_id in body and "kill " + run_id in body
    assert SECRET not in body and SECRET[:20] not in body
    assert BEARER not in body and "hunter2pass" not in body
    assert "[REDACTED]" in body
    cli("kill", run_id)


def test_ending_notices_hook_and_tags(tmp_path: Path, repo: Path, home: Path, receiver: Receiver) -> None:
    ends_only = Receiver().start()
    out = tmp_path / "hook.txt"
    hook = [
        sys.executable,
        "-c",
        "import os; open(os.environ['HOOK_OUT'], 'a').write("
        "os.environ['ORCH_EVENT'] + ' ' + os.environ['ORCH_RUN_ID'] + ' ' + os.environ['ORCH_TICKET'] + '\\n')",
    ]
    os.environ["HOOK_OUT"] = str(out)
    try:
        write_config(
            home,
            notify={
                "urls": [{"url": ends_only.url, "tags": ["ends"]}, receiver.url],
                "events": ["spiral", "stalled", "succeeded"],
                "command": hook,
            },
            heartbeat=1.0,
        )
        ok_run = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="ok"))
        wait(lambda: state(home, ok_run)["state"] == "succeeded")
        silent = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nsleep 60', name="quiet"))

        def stalled() -> bool:  # each `status` is a pass: the one after its heartbeat stops it
            status_json()
            return bool(state(home, silent)["state"] == "stalled")

        wait(stalled, timeout=60, what="the silent run's stall")
        for _ in range(2):
            status_json()  # more passes: nothing is sent twice
        titles = receiver.titles()
        assert titles.count(f"run {ok_run} succeeded") == 1
        assert titles.count(f"run {silent} stalled") == 1
        assert sorted(ends_only.titles()) == sorted([f"run {ok_run} succeeded", f"run {silent} stalled"])
        hooked = out.read_text().splitlines()
        assert sorted(hooked) == sorted([f"succeeded {ok_run} ok", f"stalled {silent} quiet"])
    finally:
        ends_only.stop()
        os.environ.pop("HOOK_OUT", None)


def test_partial_failure_retries_only_the_failed_target(tmp_path: Path, home: Path, receiver: Receiver) -> None:
    from orchestrator.notify.channels import Notifier, Target
    from orchestrator.notify.delivery import deliver
    from orchestrator.runs.pipeline import NOTICES

    down = Receiver()  # never started
    run_dir = tripped_run(home, "r-1")
    notifier = Notifier(targets=[Target(receiver.url), Target(down.url)], retry_initial_s=0.01, retry_max_s=0.01)
    for _ in range(3):
        assert deliver(run_dir, "spiral", notifier, NOTICES).startswith("failed")
        time.sleep(0.02)
    assert receiver.titles() == ["run r-1 may be spiraling"]  # the working target got it once
    down.start()
    try:
        assert deliver(run_dir, "spiral", notifier, NOTICES) == "delivered"
        assert len(down.titles()) == 1 and len(receiver.titles()) == 1
        assert deliver(run_dir, "spiral", notifier, NOTICES) == "skipped: already delivered"
    finally:
        down.stop()
    rec = json.loads((run_dir / "state.json").read_text())["notices"]["spiral"]
    assert rec["delivered"] and rec["attempts"] == 4 and len(rec["channels_done"]) == 2


def test_failing_hook_does_not_break_status(tmp_path: Path, repo: Path, home: Path) -> None:
    write_config(home, notify={"command": ["/etc/passwd"]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))

    def tried() -> bool:
        p = cli("status", "--json")
        assert p.returncode == 0, p.stderr
        return bool(state(home, run_id).get("notices", {}).get("spiral", {}).get("last_error"))

    wait(tried, timeout=20, what="a failed hook attempt")
    assert "could not run" in state(home, run_id)["notices"]["spiral"]["last_error"]
    cli("kill", run_id)


def test_apprise_config_file_targets_get_the_page(tmp_path: Path, home: Path, receiver: Receiver) -> None:
    from orchestrator.notify.channels import Notifier
    from orchestrator.notify.delivery import deliver
    from orchestrator.runs.pipeline import NOTICES

    conf = tmp_path / "apprise.txt"
    conf.write_text(f"spiral={receiver.url}\n")
    run_dir = tripped_run(home, "r-2")
    assert deliver(run_dir, "spiral", Notifier(apprise_config=conf), NOTICES) == "delivered"
    assert receiver.titles() == ["run r-2 may be spiraling"]
