"""What an audit of the pages people look at found (2026-12-03): `serve`, its rows and its reports, and
`report`. Each test fails on the code before its fix."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.report.chart import figure
from orchestrator.report.page import document
from orchestrator.report.sources import run_timeline
from tests.helpers import ROOT, cli, one_line_error, status_json
from tests.report.test_report import spiral_run
from tests.serve.test_serve import fetch, serving

TOKEN = "ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
PASSWORD = "Sup3rS3cretPw"


def test_a_failed_hooks_error_and_a_shortened_paths_token_reach_no_row(home: Path) -> None:
    run = spiral_run("leaky-1")
    record = json.loads((run / "state.json").read_text())
    record["spiral"]["evidence"] = [f"10 of 20 tool calls ran ...{TOKEN[8:]}/some/deeper/conf/app.py"]
    record["notices"] = {
        "spiral": {"last_error": f"notify command exited 1: POST https://alerts:{PASSWORD}@pager.example.com {TOKEN}"}
    }
    record["state"], record["ended_at"] = "running", None  # as a watcher left a live run
    record.setdefault("ceilings", {})["live"] = {"tokens": 253000, "cost_usd": 1.155}
    (run / "state.json").write_text(json.dumps(record))
    with serving() as url:
        code, _, body = fetch(url + "/api/runs")
    assert code == 200
    for secret in (PASSWORD, TOKEN[8:], TOKEN[-12:]):
        assert secret not in body, (secret, body)
    row = json.loads(body)["runs"][0]
    assert row["evidence"] == ["10 of 20 tool calls ran .../some/deeper/conf/app.py"]
    assert row["page_error"].startswith("notify command exited 1: POST https://")
    assert (row["tokens"], row["cost_usd"]) == (253000, 1.155)  # a live run's spend, as `status` shows it


def test_a_hooks_stderr_is_redacted_whole_before_it_is_cut(tmp_path: Path) -> None:
    from orchestrator.notify.channels import Notifier

    hook = tmp_path / "hook.sh"
    pad = "x" * 170  # the token straddles the 200th character of the line kept
    hook.write_text(f"#!/bin/sh\necho 'curl: (22) {pad} {TOKEN} https://a:{PASSWORD}@h/x' >&2\nexit 1\n")
    hook.chmod(0o755)
    ok, error = Notifier(command=(str(hook),)).send("spiral", "t", "b", set(), {})
    assert not ok and error is not None and error.startswith("notify command exited 1: curl: (22)"), error
    assert TOKEN[:12] not in error and TOKEN[-8:] not in error and PASSWORD not in error, error


def test_a_served_report_is_priced_as_the_report_command_prices_it(home: Path) -> None:
    spiral_run("priced-1")
    (home / "config.yaml").write_text(json.dumps({"prices": {"claude-sonnet-4-5": {"input": 1000, "output": 1000}}}))
    p = cli("report", "priced-1")
    assert p.returncode == 0, p.stderr
    written = Path(p.stdout.strip()).read_text()
    with serving() as url:
        code, _, served = fetch(url + "/runs/priced-1/report")
    assert code == 200 and served == written


def test_a_queued_runs_report_is_not_found_not_a_server_error(home: Path) -> None:
    d = home / "runs" / "queued-1"
    d.mkdir(parents=True)
    record = {"run_id": "queued-1", "ticket_id": "t", "bucket": "small", "agent": "fake", "state": "queued"}
    (d / "state.json").write_text(json.dumps(record))
    with serving() as url:
        code, _, body = fetch(url + "/runs/queued-1/report")
    assert code == 404 and body.startswith("no report of queued-1: "), (code, body)


def test_a_client_that_leaves_mid_answer_is_no_server_error(home: Path) -> None:
    spiral_run("big-1")  # its report is megabytes: the server is still writing when the client resets
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_SERVE_TOKEN"}
    p = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None
        port = int(p.stdout.readline().split("/")[2].rsplit(":", 1)[1])
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /runs/big-1/report HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.recv(64)  # the answer has begun
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # a reset, as a closed tab gives
        time.sleep(1.0)
        assert fetch(f"http://127.0.0.1:{port}/api/runs")[0] == 200  # still serving
    finally:
        p.terminate()
        _, err = p.communicate(timeout=15)
    assert "ConnectionResetError" not in err and "BrokenPipeError" not in err and "Traceback" not in err, err


def test_serve_refuses_a_state_folder_that_is_a_file(tmp_path: Path) -> None:
    home_file = tmp_path / "home-file"
    home_file.write_text("not a folder")
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "serve", "--port", "0"],
        cwd=ROOT,
        env={**os.environ, "ORCHESTRATOR_HOME": str(home_file)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    one_line_error(p, "not a folder")


def test_the_chart_and_the_last_calls_show_commands_as_they_are(home: Path) -> None:
    run = spiral_run("odd-1")
    events = run / "events.jsonl"
    text = events.read_text()
    assert "python tmp_debug_mc" in text  # every debris rerun, the last calls' too
    events.write_text(text.replace("python tmp_debug_mc", "grep '<br>' t | sed 's/<i>//' \\u202e; python tmp_debug_mc"))
    tl = run_timeline(run)
    fig = figure(tl).to_dict()
    shown = [t for trace in fig["data"] for t in (trace.get("text") or []) if isinstance(t, str)]
    assert any("grep '&lt;br&gt;' t | sed 's/&lt;i&gt;//'" in t for t in shown), shown[:5]
    assert not any("<br>" in t or "<i>" in t for t in shown)
    assert any("\u202e" in line for line in tl.last_calls)  # the record keeps it; the page shows a mark
    html = document(tl)
    assert "\u202e" not in html and "sed &#x27;s/&lt;i&gt;//&#x27; ?;" in html
    assert status_json()["runs"][0]["id"] == "odd-1"
