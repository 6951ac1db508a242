"""`serve`: the real server in a subprocess, real fake-agent runs, fetched with urllib.

Rows as `status` shows them, read-only (no record is touched), escaped (reasons and ids
are agents' text), refreshed live; 127.0.0.1 unless a token is given, and then every
request carries it; bad paths 404, writes 405; Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, cli, launch, one_line_error, state, status_json, ticket, wait

HOSTILE_ID = 'x"><img src=x onerror=alert(1)>'
TOKEN = "s3cret-token-for-tests"


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """`serve --port 0 ARGS` in a subprocess; yields its base URL; stopped with Ctrl-C (SIGINT), cleanly."""
    environ = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_SERVE_TOKEN"}
    p = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "serve", "--port", "0", *args],
        cwd=ROOT,
        env={**environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert p.stdout is not None
    out = p.stdout

    def pump() -> None:
        for x in out:
            lines.put(x)

    threading.Thread(target=pump, daemon=True).start()
    try:
        first = lines.get(timeout=30)
        assert first.startswith("serving http://"), first
        port = first.split("/")[2].rsplit(":", 1)[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        p.send_signal(signal.SIGINT)
        try:
            rc = p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
            err = p.stderr.read() if p.stderr else ""
            raise AssertionError(f"serve did not stop on Ctrl-C; its stderr: {err[-2000:]!r}") from None
        err = p.stderr.read() if p.stderr else ""
        assert rc == 0, (rc, err)
        assert "Traceback" not in err, err
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    assert "stopped\n" in rest, rest


def opener(jar: CookieJar | None = None) -> urllib.request.OpenerDirector:
    handlers: list[Any] = [urllib.request.ProxyHandler({})]  # never a proxy from the environment
    if jar is not None:
        handlers.append(urllib.request.HTTPCookieProcessor(jar))
    return urllib.request.build_opener(*handlers)


def fetch(
    url: str, method: str = "GET", headers: dict[str, str] | None = None, via: Any = None
) -> tuple[int, dict[str, str], str]:
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=b"x=1" if method == "POST" else None)
    try:
        with (via or opener()).open(req, timeout=30) as res:
            return res.status, dict(res.headers), res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def hostile_run(home: Path) -> Path:
    """A run folder whose id, reason and evidence are HTML, as an agent's log could make them."""
    d = home / "runs" / HOSTILE_ID
    d.mkdir(parents=True)
    record = {
        "run_id": HOSTILE_ID,
        "ticket_id": "t",
        "bucket": "small",
        "agent": "fake",
        "state": "failed",
        "reason": "<script>alert(2)</script>",
        "created_at": "2026-01-01T00:00:00Z",
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:10:00Z",
        "spiral": {"signals": ["debris"], "evidence": ['"><script>alert(3)</script>']},
    }
    (d / "state.json").write_text(json.dumps(record))
    return d


def ended_runs(tmp_path: Path, repo: Path, home: Path) -> tuple[str, str]:
    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="good"))
    bad = launch(ticket(tmp_path, repo, "stderr <script>alert(1)</script>\nexit 3", name="bad"))
    wait(lambda: state(home, good)["state"] == "succeeded", what="the good run to end")
    wait(lambda: state(home, bad)["state"] == "failed", what="the bad run to fail")
    return good, bad


def test_the_page_and_api_show_every_run_escaped_live_and_change_nothing(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    good, bad = ended_runs(tmp_path, repo, home)
    assert "<script>" in state(home, bad)["reason"]  # the agent's stderr made it into the reason
    status_rows = {r["id"]: r for r in status_json()["runs"]}  # a pass: the ended runs are accounted
    hostile_run(home)
    before = {p: p.stat().st_mtime_ns for p in (home / "runs").glob("*/state.json")}
    with serving() as url:
        code, headers, body = fetch(url + "/api/runs")
        assert code == 200 and headers["Content-Type"] == "application/json"
        doc = json.loads(body)
        assert doc["version"] == 1
        rows = {r["id"]: r for r in doc["runs"]}
        assert set(rows) == {good, bad, HOSTILE_ID}
        for run_id in (good, bad):  # the rows of `status --json`, key for key
            assert set(rows[run_id]) == set(status_rows[run_id])
            for key in ("state", "reason", "ticket", "agent", "bucket", "expected_min", "signals", "tokens"):
                assert rows[run_id][key] == status_rows[run_id][key], key
        assert rows[HOSTILE_ID]["reason"] == "<script>alert(2)</script>"  # JSON carries it as it is

        code, headers, page = fetch(url + "/")
        assert code == 200 and headers["Content-Type"].startswith("text/html")
        assert "script-src 'sha256-" in headers["Content-Security-Policy"]
        for run_id in (good, bad):
            assert f'href="/runs/{run_id}"' in page and f">{run_id}</a>" in page
        # escaped: no tag of theirs survives, only the page's own one script
        assert page.count("<script") == 1
        assert "<img" not in page and "onerror=alert(1)>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the real run's reason
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
        assert "&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in page  # its evidence
        assert "x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in page  # its id
        # live: the page polls /api/runs every few seconds (and refreshes itself without JS)
        assert 'fetch("/api/runs"' in page and "setTimeout(poll" in page
        assert '<noscript><meta http-equiv="refresh"' in page

        code, _, _ = fetch(url + "/", method="HEAD")
        assert code == 200
    after = {p: p.stat().st_mtime_ns for p in (home / "runs").glob("*/state.json")}
    assert after == before  # read-only: no record written


def test_a_running_run_is_shown_as_last_recorded(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nsleep 30', name="slow"))
    try:
        wait(lambda: state(home, run_id)["state"] == "running", what="the run to start")
        with serving() as url:
            _, _, body = fetch(url + "/api/runs")
            (row,) = json.loads(body)["runs"]
            assert row["id"] == run_id and row["state"] == "running" and row["error"] is None
            assert row["elapsed_min"] >= 0 and row["expected_min"] > 0
            assert state(home, run_id)["state"] == "running"  # looked at, not acted on
    finally:
        cli("kill", run_id)


def test_a_rows_report_link_answers(tmp_path: Path, repo: Path, home: Path) -> None:
    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="good"))
    wait(lambda: state(home, good)["state"] == "succeeded", what="the run to end")
    with serving() as url:
        code, headers, body = fetch(f"{url}/runs/{good}/report")
    assert code == 200, body[:500]
    assert headers["Content-Type"].startswith("text/html") and "<html" in body.lower()
    assert good in body  # the report of that run (orchestrator.report's render_run)


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/api/runs/x",
        "/runs",
        "/runs/nope/report",
        "/runs/../state.json",
        "/runs/%2e%2e/report",
        "/runs/..%2F..%2Fetc%2Fpasswd/report",
        "/runs/.lock/report",
        "/runs//report",
    ],
)
def test_bad_paths_are_404(home: Path, path: str) -> None:
    with serving() as url:
        code, _, _ = fetch(url + path)
    assert code == 404, path


def test_only_get_and_head(home: Path) -> None:
    with serving() as url:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            code, headers, _ = fetch(url + "/api/runs", method=method)
            assert code == 405, method
            assert headers["Allow"] == "GET, HEAD"
        assert fetch(url + "/api/runs")[0] == 200  # still serving


def test_a_foreign_host_name_is_refused_without_a_token(home: Path) -> None:
    # a page elsewhere that rebinds its own name to 127.0.0.1 cannot read the rows
    with serving() as url:
        assert fetch(url + "/api/runs", headers={"Host": "evil.example:80"})[0] == 403
        assert fetch(url + "/api/runs", headers={"Host": "localhost:1"})[0] == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_binding_beyond_this_machine_needs_a_token(home: Path, host: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_SERVE_TOKEN"}
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "serve", "--host", host, "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    one_line_error(p, host, "token")


def test_with_a_token_every_request_carries_it(home: Path) -> None:
    # beyond this machine, the token from the environment (the test itself connects to 127.0.0.1)
    with serving("--host", "0.0.0.0", env={"ORCHESTRATOR_SERVE_TOKEN": TOKEN}) as url:
        for path in ("/", "/api/runs", "/nope"):
            code, headers, _ = fetch(url + path)
            assert code == 401, path
            assert headers["WWW-Authenticate"] == "Bearer"
        assert fetch(url + "/api/runs?token=wrong")[0] == 401
        assert fetch(url + "/api/runs", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert fetch(url + "/api/runs", headers={"Cookie": "orchestrator_serve_1=x"})[0] == 401
        code, _, body = fetch(url + "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
        assert code == 200 and json.loads(body)["runs"] == []
        # ?token= once: the page answers with a cookie and drops the token from the address
        jar = CookieJar()
        browser = opener(jar)
        code, _, page = fetch(url + "/?token=" + TOKEN, via=browser)
        assert code == 200 and "<table>" in page
        (cookie,) = list(jar)
        assert TOKEN not in (cookie.value or "")  # the cookie holds a digest, not the token
        assert fetch(url + "/api/runs", via=browser)[0] == 200  # what the page's polling does
        assert fetch(url + "/nope", via=browser)[0] == 404
        assert fetch(url + "/api/runs")[0] == 401  # another client, no cookie


def test_a_busy_port_is_one_line(home: Path) -> None:
    with serving() as url:
        port = url.rsplit(":", 1)[1]
        p = cli("serve", "--port", port, timeout=60)
    one_line_error(p, port)


def test_without_the_report_module_a_link_is_a_one_line_501(
    tmp_path: Path, repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.serve.server import make_server

    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="good"))
    wait(lambda: state(home, good)["state"] == "succeeded", what="the run to end")
    monkeypatch.setitem(sys.modules, "orchestrator.report", None)  # importing it raises ImportError
    server = make_server("127.0.0.1", 0, None)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        code, _, body = fetch(f"http://127.0.0.1:{server.server_address[1]}/runs/{good}/report")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert code == 501 and len(body.strip().splitlines()) == 1 and "report" in body
