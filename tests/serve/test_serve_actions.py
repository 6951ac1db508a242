"""`serve --actions` against hostile requests: each refused with nothing changed in the run's record.

Forged, expired, replayed and other-run or other-action tokens; cross-site form posts; GET on a
write endpoint; traversal in run ids; a flood of a thousand requests a second; and `serve` without
--actions, which takes no POST at all. The real server, on 127.0.0.1, any free port.
"""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest

from orchestrator.infra import action_tokens as tokens
from orchestrator.infra.errors import UserError
from orchestrator.serve.server import Server, make_server
from tests.helpers import cli, orchestrator_home, serving_in_thread, tripped_run


def post(
    server: Server, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    body = urlencode(form or {}).encode()
    heads = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    conn.request("POST", path, body=body, headers=heads)
    res = conn.getresponse()
    out = res.status, res.read().decode(), dict(res.getheaders())
    conn.close()
    return out


def get(server: Server, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    conn.request("GET", path)
    res = conn.getresponse()
    out = res.status, res.read().decode()
    conn.close()
    return out


def record(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


@pytest.fixture
def paged() -> Path:
    orchestrator_home()
    return tripped_run(orchestrator_home(), "r1")


def token(action: str, run_id: str = "r1", ttl: float = 3600) -> str:
    return tokens.mint(tokens.load_key(), run_id, action, time.time() + ttl)


def test_a_good_token_acts_once_and_is_recorded(paged: Path) -> None:
    with serving_in_thread(actions=True) as server:
        tok = token("false-alarm")
        status, text, _ = post(server, "/runs/r1/act/false-alarm", {"token": tok})
        assert status == 200 and text.startswith("page 1 judged false-alarm"), text
        (taken,) = record(paged)["actions"]
        assert taken["action"] == "false-alarm" and taken["ok"] and taken["remote"] == "127.0.0.1"
        assert taken["token_id"] == tok.split(".")[0]
        assert tok not in json.dumps(record(paged))  # its id is kept, never the token
        assert record(paged)["feedback"][0]["via"] == "page" and record(paged)["feedback"][0]["signals"] == ["polling"]
        before = record(paged)
        status, text, _ = post(server, "/runs/r1/act/false-alarm", {"token": tok})  # replayed
        assert status == 403 and "used already" in text
        assert record(paged) == before
        # the status row shows both
        row = next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == "r1")
        assert row["actions"][0]["action"] == "false-alarm" and row["feedback"][0]["verdict"] == "false-alarm"


def test_bad_tokens_change_nothing(paged: Path) -> None:
    key = tokens.load_key()
    now = time.time()
    good = tokens.mint(key, "r1", "useful", now + 3600)
    ident, expires, mac = good.split(".")
    forged = [
        "",
        "garbage",
        f"{ident}.{int(now) + 99999}.{mac}",  # a later expiry under the old MAC
        f"{ident[::-1]}.{expires}.{mac}",  # another id
        tokens.mint(b"k" * 64, "r1", "useful", now + 3600),  # another key
        tokens.mint(key, "r2", "useful", now + 3600),  # another run's
        tokens.mint(key, "r1", "false-alarm", now + 3600),  # another action's
        tokens.mint(key, "r1", "useful", now - 1),  # expired
        good + "x",
    ]
    before = record(paged)
    with serving_in_thread(actions=True) as server:
        for bad in forged:
            status, text, _ = post(server, "/runs/r1/act/useful", {"token": bad})
            assert status == 403, (bad, status, text)
            status, _, _ = post(server, "/runs/r1/act/useful", headers={"X-Action-Token": bad})
            assert status == 403
    assert record(paged) == before


def test_cross_site_posts_get_and_traversal_are_refused(paged: Path, tmp_path: Path) -> None:
    before = record(paged)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "state.json").write_text(json.dumps({"run_id": "outside", "state": "running"}))
    with serving_in_thread(actions=True) as server:
        tok = token("useful")
        # a form on another site posting to this one: refused before the token is even looked at
        for heads in (
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
            {"Sec-Fetch-Site": "same-site", "Origin": "http://other.127.0.0.1.nip.io"},
            {"Sec-Fetch-Site": "cross-site", "Origin": "http://127.0.0.1"},  # the browser's word counts
        ):
            status, text, _ = post(server, "/runs/r1/act/useful", {"token": tok}, heads)
            assert status == 403 and "another site" in text
        assert get(server, "/runs/r1/act/useful?token=" + tok)[0] == 405  # GET never acts
        for path in ("/runs/..%2F..%2Foutside/act/useful", "/runs/../outside/act/useful", "/runs/.x/act/useful"):
            assert post(server, path, {"token": tok})[0] in (403, 404), path
        assert get(server, "/runs/..%2Foutside")[0] == 404
        assert post(server, "/runs/r1/act/rm-rf", {"token": tok})[0] == 404
        assert post(server, "/runs/r1/act/useful", {"token": tok}, {"Content-Length": "999999"})[0] == 413
    assert record(paged) == before
    # the same token still works once, from this site
    with serving_in_thread(actions=True) as server:
        status, _, _ = post(server, "/runs/r1/act/useful", {"token": tok}, {"Origin": "http://127.0.0.1"})
        assert status == 200


def test_a_flood_is_held_to_a_rate_and_changes_nothing(paged: Path) -> None:
    before = record(paged)
    with serving_in_thread(actions=True) as server:
        forged = tokens.mint(b"k" * 64, "r1", "useful", time.time() + 3600)

        def one(_: int) -> int:
            return post(server, "/runs/r1/act/useful", {"token": forged})[0]

        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(one, range(1000)))
        took = time.monotonic() - started
        assert set(codes) <= {403, 429} and codes.count(429) >= 900, (codes.count(403), codes.count(429), took)
        assert record(paged) == before
        time.sleep(1.0)  # the bucket fills again: a good token acts
        assert post(server, "/runs/r1/act/useful", {"token": token("useful")})[0] == 200


def test_without_actions_serve_takes_no_post(paged: Path) -> None:
    before = record(paged)
    with serving_in_thread() as server:
        status, text, heads = post(server, "/runs/r1/act/useful", {"token": token("useful")})
        assert status == 405 and heads["Allow"] == "GET, HEAD"
        status, page = get(server, "/runs/r1")
        assert status == 200 and "<form" not in page and "r1" in page  # the run page, with no button
    assert record(paged) == before


def test_actions_beyond_this_machine_need_their_own_flag() -> None:
    with pytest.raises(UserError, match="allow-remote-actions"):
        make_server("0.0.0.0", 0, "a-token", actions_on=True)
    server = make_server("0.0.0.0", 0, "a-token", actions_on=True, remote_actions=True)
    server.server_close()
    p = cli("serve", "--host", "0.0.0.0", "--port", "0", "--token", "t", "--actions")
    assert p.returncode != 0 and "allow-remote-actions" in p.stderr and "Traceback" not in p.stderr


def test_the_action_key_is_private_and_made_once(paged: Path) -> None:
    key = tokens.load_key()
    path = tokens.key_path()
    assert path.stat().st_mode & 0o777 == 0o600
    assert tokens.load_key() == key
