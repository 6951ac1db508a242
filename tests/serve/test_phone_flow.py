"""The phone flow, end to end: a live demo run pages through a real ntfy-speaking receiver on
127.0.0.1; the page's click URL opens the run's page in real headless Chromium at a phone's
412 px; each button is tapped (nudge, snooze, useful, kill with its confirmation), the nudge
reaches the demo agent's inbox and its receipt shows on the page; and the notification's own
buttons are pressed as the ntfy app presses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.demo.sink import free_port
from orchestrator.infra.serve_config import ServeConfig
from tests.browser import need_chromium, open_page
from tests.helpers import CORPUS, cli, launch, serving_in_thread, start_watcher, state, ticket, wait, write_config
from tests.ntfy import NtfyReceiver, parse_actions, press

PHONE = {"width": 412, "height": 915}
# the seed's 88-minute fixture-shim spiral, re-enacted at 60x (88 s): a soft band from its minute 10, so
# it pages within about 15 s and is still live, taking guidance, for a minute after
BANDS = {"expected_min": 5.0, "soft_start_min": 10.0, "stuck_min": 600.0}
OVERRIDES = {"snapshot_every_seconds": 0.3, "buckets": {"small": BANDS, "medium": BANDS}}


@contextmanager
def paging_demo_run(tmp_path: Path, repo: Path, home: Path) -> Iterator[tuple[str, str, NtfyReceiver]]:
    """A live demo run that paged (to an ntfy receiver), with serve answering actions on its public URL."""
    ntfy = NtfyReceiver().start()
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    write_config(home, notify={"urls": [ntfy.url]})
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["serve"] = {"public_url": public, "actions": True}
    (home / "config.yaml").write_text(json.dumps(cfg))
    watcher = start_watcher(0.2)
    run_id = ""
    try:
        with serving_in_thread(port, actions=True, settings=ServeConfig(public, True)):
            case = CORPUS / "spiral-001-fixture-shim"
            t = ticket(
                tmp_path,
                repo,
                "re-enact",
                agent="demo",
                demo_case=str(case),
                speed=60.0,
                overrides=OVERRIDES,
                escalation=[{"do": "nudge", "after_minutes": 600}],
            )
            run_id = launch(t)
            wait(lambda: any(m.get("headers", {}).get("X-Actions") for m in ntfy.received()), 60, "the page")
            yield run_id, public, ntfy
    finally:
        if run_id and state(home, run_id)["state"] in ("running", "launching"):
            cli("kill", run_id)
        watcher.terminate()
        watcher.wait(timeout=30)
        ntfy.stop()


def test_a_page_opens_the_run_page_on_a_phone_and_each_button_acts(tmp_path: Path, repo: Path, home: Path) -> None:
    need_chromium()
    with paging_demo_run(tmp_path, repo, home) as (run_id, public, ntfy):
        (page_msg,) = [m for m in ntfy.received() if m.get("title") == f"run {run_id} may be spiraling"]
        click = page_msg["headers"]["X-Click"]
        assert click == f"{public}/runs/{run_id}" and f"open: {click}" in page_msg["message"]
        buttons = parse_actions(page_msg["headers"]["X-Actions"])
        assert [b["label"] for b in buttons] == ["Nudge", "False alarm", "Open"]
        assert all("token" not in b["url"] for b in buttons)  # the token rides in a header, never the address

        with open_page(click, **PHONE) as page:
            assert page.evaluate("document.scrollingElement.scrollWidth") <= 412
            assert page.locator("h1").inner_text() == run_id
            page.screenshot(path=str(tmp_path / "run-page-phone.png"), full_page=True)
            # nudge: queued, then the demo agent reads its inbox and the receipt shows
            with page.expect_navigation():
                page.get_by_role("button", name="Nudge").click()
            assert "nudge queued as g1" in page.locator("#said").inner_text()
            wait(lambda: state(home, run_id)["guidance"][0]["received_at"] is not None, 60, "the receipt")
            page.reload()
            assert "g1 nudge by person: received" in page.locator("#guidance").inner_text()
            # the other stock wordings
            for name, said in (("Redirect", "redirect queued as g2"), ("Wrap up", "wrap-up queued as g3")):
                with page.expect_navigation():
                    page.get_by_role("button", name=name).click()
                assert said in page.locator("#said").inner_text()
            # snooze the ladder
            with page.expect_navigation():
                page.get_by_role("button", name="Snooze ladder 1 h").click()
            assert "ladder snoozed until" in page.locator("#said").inner_text()
            assert state(home, run_id)["ladder"]["snoozed_until"] is not None
            # a verdict on the page, then a second thought: the later one counts
            with page.expect_navigation():
                page.get_by_role("button", name="False alarm").click()
            assert "page 1 judged false-alarm" in page.locator("#said").inner_text()
            with page.expect_navigation():
                page.get_by_role("button", name="Useful page").click()
            assert "page 1 judged useful" in page.locator("#said").inner_text()
            assert "judged useful" in page.locator("text=page 1:").inner_text()
            # kill asks first; then the run ends
            with page.expect_navigation():
                page.get_by_role("button", name="Kill…").click()
            assert page.locator("h1").inner_text().startswith("Kill ")
            assert state(home, run_id)["state"] == "running"  # nothing done yet
            with page.expect_navigation():
                page.get_by_role("button", name="Kill now").click()
            assert "killed" in page.locator("#said").inner_text()
            assert page.evaluate("document.scrollingElement.scrollWidth") <= 412
            assert not page.console_errors, page.console_errors
        s = state(home, run_id)
        assert s["state"] == "killed"
        assert [a["action"] for a in s["actions"]] == [
            "nudge",
            "redirect",
            "wrap-up",
            "snooze",
            "false-alarm",
            "useful",
            "kill",
        ]
        assert [g["kind"] for g in s["guidance"]] == ["nudge", "redirect", "wrap-up"]
        assert all(a["ok"] and a["remote"] == "127.0.0.1" for a in s["actions"])
        assert s["feedback"][-1]["verdict"] == "useful" and s["feedback"][-1]["via"] == "page"
        # the report lists them too
        out = tmp_path / "report.html"
        assert cli("report", run_id, "--out", str(out)).returncode == 0
        html = out.read_text()
        assert "page 1 judged useful (page," in html and "action kill at " in html and "from 127.0.0.1" in html


def test_the_notifications_buttons_act_as_the_ntfy_app_sends_them(tmp_path: Path, repo: Path, home: Path) -> None:
    with paging_demo_run(tmp_path, repo, home) as (run_id, public, ntfy):
        (page_msg,) = [m for m in ntfy.received() if m.get("title") == f"run {run_id} may be spiraling"]
        nudge, false_alarm, open_ = parse_actions(page_msg["headers"]["X-Actions"])
        assert open_["action"] == "view" and open_["url"] == f"{public}/runs/{run_id}"
        assert nudge["action"] == "http" and nudge["method"] == "POST" and nudge["url"].endswith("/act/nudge")
        status, text = press(nudge)
        assert status == 200 and text.startswith("nudge queued as g1"), text
        assert press(nudge)[0] == 403  # the same button again: its token is spent
        status, text = press(false_alarm)
        assert status == 200 and "judged false-alarm" in text
        other = dict(nudge, url=nudge["url"].replace(run_id, run_id + "x"))
        assert press(other)[0] == 404
        s = state(home, run_id)
        assert [(a["action"], a["ok"]) for a in s["actions"]] == [("nudge", True), ("false-alarm", True)]
        assert s["feedback"][-1]["via"] == "notification" and s["guidance"][0]["kind"] == "nudge"
        wait(lambda: state(home, run_id)["guidance"][0]["received_at"] is not None, 60, "the receipt")
