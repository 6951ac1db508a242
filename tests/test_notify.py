"""The page: delivered to a real HTTP receiver exactly once, across races, outages and crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.notify.pages import redact
from tests.receiver import Receiver
from tests.test_orchestrator import FAKE_AGENT, ROOT, cli, launch, state, status_json, ticket, wait

SECRET = "sk-ant-api03-" + "Q" * 40
BEARER = "abcdefghijklmnop1234567890"
TINY = {
    "snapshot_every_seconds": 0.3,
    "buckets": {"small": {"expected_min": 0.01, "soft_start_min": 0.03, "stuck_min": 2.0}},
}


def config(home: Path, notify: dict[str, Any], heartbeat: float | None = None) -> None:
    cfg: dict[str, Any] = {
        "agents": {"fake": {"command": [sys.executable, str(FAKE_AGENT)], "format": "generic"}},
        "notify": notify,
    }
    if heartbeat:
        cfg["heartbeat_seconds"] = heartbeat
    (home / "config.yaml").write_text(json.dumps(cfg))


def spiral_body(n: int = 400, secret: bool = False) -> str:
    cmd = f"python tmp_loop.py --token={SECRET}" if secret else "python tmp_loop.py"
    steps = ["write tmp_loop.py"]
    if secret:
        steps.append(
            json.dumps(
                {
                    "tool": "Bash",
                    "command": f"curl -H 'Authorization: Bearer {BEARER}' https://user:hunter2pass@example.com/x",
                }
            ).join(["say ", ""])
        )
    steps += [f"say {json.dumps({'tool': 'Bash', 'command': cmd})}", "sleep 0.05"] * n
    return "\n".join(steps)


@pytest.fixture
def home() -> Path:
    h = Path(os.environ["ORCHESTRATOR_HOME"])
    h.mkdir(parents=True, exist_ok=True)
    return h


@pytest.fixture
def receiver() -> Any:
    r = Receiver().start()
    yield r
    r.stop()


def tripped_run(home: Path, run_id: str) -> Path:
    """A run folder whose record says it tripped the detector in the soft band."""
    run_dir = home / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text(
        json.dumps(
            {
                "run_id": run_id,
                "ticket_id": "t",
                "bucket": "small",
                "agent": "fake",
                "state": "running",
                "spiral": {
                    "tripped_in_soft_band": True,
                    "tripped_at_min": 31,
                    "page_signals": ["polling"],
                    "page_evidence": ["6 of the last 20 shell calls polled", "1.5x expected wall-clock"],
                },
            }
        )
    )
    return run_dir


def spiral_pages(r: Receiver, run_id: str) -> int:
    return sum(1 for t in r.titles() if t == f"run {run_id} may be spiraling")


def start_watcher(tick: float = 0.2) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "watch", "--tick", str(tick)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_one_page_with_watcher_and_20_status_processes_racing(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    config(home, {"urls": [receiver.url]})
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
        time.sleep(1.5)  # a few more watcher ticks
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
    config(home, {"urls": [down.url], "retry_initial_seconds": 0.5, "retry_max_seconds": 1})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))

    def attempts() -> int:
        status_json()
        return int(state(home, run_id).get("notices", {}).get("spiral", {}).get("attempts", 0))

    wait(lambda: attempts() >= 1, timeout=20, what="a first delivery attempt")
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["notified"] is False and row["page_error"], row
    rec = state(home, run_id)["notices"]["spiral"]
    assert not rec.get("delivered")
    assert rec["last_error"] == f"delivery to {down.url} failed"
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
    config(home, {"urls": [receiver.url]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))
    first = start_watcher()
    try:
        wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=20, what="the page")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    second = start_watcher()
    try:
        time.sleep(2.0)
        assert second.poll() is None, second.stderr.read() if second.stderr else ""
    finally:
        second.terminate()
        second.wait(timeout=10)
    assert spiral_pages(receiver, run_id) == 1
    cli("kill", run_id)


def test_secrets_in_agent_output_never_reach_the_receiver(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    config(home, {"urls": [receiver.url]})
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
        config(
            home,
            {
                "urls": [{"url": ends_only.url, "tags": ["ends"]}, receiver.url],
                "events": ["spiral", "stalled", "succeeded"],
                "command": hook,
            },
            heartbeat=1.0,
        )
        ok_run = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="ok"))
        wait(lambda: state(home, ok_run)["state"] == "succeeded")
        silent = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nsleep 60', name="quiet"))
        time.sleep(1.8)
        for _ in range(3):
            status_json()
        titles = receiver.titles()
        assert titles.count(f"run {ok_run} succeeded") == 1
        assert titles.count(f"run {silent} stalled") == 1
        assert sorted(ends_only.titles()) == sorted([f"run {ok_run} succeeded", f"run {silent} stalled"])
        hooked = out.read_text().splitlines()
        assert sorted(hooked) == sorted([f"succeeded {ok_run} ok", f"stalled {silent} quiet"])
    finally:
        ends_only.stop()
        os.environ.pop("HOOK_OUT", None)


def test_bad_notify_config_is_one_line(tmp_path: Path, repo: Path, home: Path) -> None:
    config(home, {"urls": [{"link": "x"}]})
    p = cli("status")
    assert p.returncode == 2 and "config.yaml" in p.stderr and "notify.urls" in p.stderr
    config(home, {"events": ["spiral", "exploded"]})
    p = cli("watch", "--once")
    assert p.returncode == 2 and "notify.events" in p.stderr


@pytest.mark.parametrize(
    "text, secret",
    [
        (f"python x.py --token={SECRET}", SECRET),
        ("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456", "abcdefghijklmnopqrstuvwxyz123456"),
        ("curl -H 'Authorization: Bearer abcdefghijklmnop1234567890'", "abcdefghijklmnop1234567890"),
        ("git clone https://bob:s3cretpassw0rd@example.com/r.git", "s3cretpassw0rd"),
        ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("password: hunter2hunter2", "hunter2hunter2"),
    ],
)
def test_redact(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_redact_keeps_ordinary_text() -> None:
    text = "12 of 20 tool calls ran tmp_debug_mc.py (made during the run)"
    assert redact(text) == text


def test_partial_failure_retries_only_the_failed_target(tmp_path: Path, home: Path, receiver: Receiver) -> None:
    from orchestrator.notify.channels import Notifier, Target
    from orchestrator.notify.delivery import deliver

    down = Receiver()  # never started
    run_dir = tripped_run(home, "r-1")
    notifier = Notifier(targets=[Target(receiver.url), Target(down.url)], retry_initial_s=0.01, retry_max_s=0.01)
    for _ in range(3):
        assert deliver(run_dir, "spiral", notifier).startswith("failed")
        time.sleep(0.02)
    assert receiver.titles() == ["run r-1 may be spiraling"]  # the working target got it once
    down.start()
    try:
        assert deliver(run_dir, "spiral", notifier) == "delivered"
        assert len(down.titles()) == 1 and len(receiver.titles()) == 1
        assert deliver(run_dir, "spiral", notifier) == "skipped: already delivered"
    finally:
        down.stop()
    rec = json.loads((run_dir / "state.json").read_text())["notices"]["spiral"]
    assert rec["delivered"] and rec["attempts"] == 4 and len(rec["channels_done"]) == 2


def test_failing_hook_does_not_break_status(tmp_path: Path, repo: Path, home: Path) -> None:
    config(home, {"command": ["/etc/passwd"]})
    run_id = launch(ticket(tmp_path, repo, spiral_body(), overrides=TINY))

    def tried() -> bool:
        p = cli("status", "--json")
        assert p.returncode == 0, p.stderr
        return bool(state(home, run_id).get("notices", {}).get("spiral", {}).get("last_error"))

    wait(tried, timeout=20, what="a failed hook attempt")
    assert "could not run" in state(home, run_id)["notices"]["spiral"]["last_error"]
    cli("kill", run_id)


@pytest.mark.parametrize(
    "text, secret",
    [
        ('{"password": "hunter2hunter2"}', "hunter2hunter2"),
        ('{"access_token":"abcd1234efgh5678"}', "abcd1234efgh5678"),
        ("redis://:SuperSecretPw123@cache:6379", "SuperSecretPw123"),
        ("postgres://bob:p@ssw0rd!@db/x", "ssw0rd"),
        ("curl -u admin:S3cretPass https://x.y", "S3cretPass"),
        ("mysql -pSecretPw1 -h db", "SecretPw1"),
        ('docker login -p "my pass word" registry', "my pass word"),
        ('password="correct horse battery staple"', "correct horse"),
        ("sk_live_abcdefghijklmnop1234", "abcdefghijklmnop1234"),
        ("glpat-abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX", "XXXXXXXXXXXX"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaA"),
        ("export KEY=Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc", "Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc"),
    ],
)
def test_redact_more_secret_shapes(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "pytest tests/test_a.py -k case -p no:cacheprovider",
        "git show 3f2a9c0e1b7d4e5f6a7b8c9d0e1f2a3b4c5d6e7f",
        "docker run -p 8080:80 image",
        "cd /home/dev/runs/demo-fixture-shim-20261129-194920/clone",
    ],
)
def test_redact_leaves_ordinary_commands(text: str) -> None:
    assert redact(text) == text


def test_apprise_config_file_targets_get_the_page(tmp_path: Path, home: Path, receiver: Receiver) -> None:
    from orchestrator.notify.channels import Notifier
    from orchestrator.notify.delivery import deliver

    conf = tmp_path / "apprise.txt"
    conf.write_text(f"spiral={receiver.url}\n")
    run_dir = tripped_run(home, "r-2")
    assert deliver(run_dir, "spiral", Notifier(apprise_config=conf)) == "delivered"
    assert receiver.titles() == ["run r-2 may be spiraling"]


def test_notify_urls_must_be_a_list_of_known_tags(tmp_path: Path, home: Path) -> None:
    config(home, {"urls": "json://127.0.0.1:9/x"})
    p = cli("status")
    assert p.returncode == 2 and "notify.urls must be a list" in p.stderr
    config(home, {"urls": [{"url": "json://127.0.0.1:9/x", "tags": ["spirals"]}]})
    p = cli("status")
    assert p.returncode == 2 and "tags must name events" in p.stderr
