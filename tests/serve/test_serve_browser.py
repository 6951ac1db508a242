"""The live page as a person sees it: `serve` opened in real headless Chromium (Debian's).

The rows render (a hostile run's id and reason as text, never as HTML), the script's
polling of /api/runs lands under the page's Content Security Policy with no console
error, a row's link opens its run page and that its report; a screenshot is saved under the test's tmp folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.browser import need_chromium, open_page
from tests.helpers import base_url, launch, serving_in_thread, state, ticket, wait

HOSTILE_ID = 'x"><img src=x onerror=alert(1)>'


def test_the_live_page_renders_and_refreshes_in_chromium(tmp_path: Path, repo: Path, home: Path) -> None:
    need_chromium()
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="good"))
    wait(lambda: state(home, run_id)["state"] == "succeeded", what="the run to end")
    hostile = home / "runs" / HOSTILE_ID
    hostile.mkdir()
    (hostile / "state.json").write_text(
        json.dumps({"run_id": HOSTILE_ID, "state": "failed", "reason": "<script>alert(2)</script>", "bucket": "small"})
    )
    with serving_in_thread() as server, open_page(base_url(server) + "/") as page:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        assert page.locator("#rows tr").count() == 2
        # the script's first poll (every 3 s) redraws the rows from /api/runs
        page.locator("#status", has_text="updated").wait_for(timeout=15_000)  # (no eval: the page's CSP forbids it)
        assert page.locator("#rows tr").count() == 2
        assert page.locator("#rows img, #rows script").count() == 0
        assert page.locator("#rows a", has_text=HOSTILE_ID).count() == 1  # shown as text
        assert "<script>alert(2)</script>" in page.locator("#rows").inner_text()
        assert page.locator(f'#rows a[href="/runs/{run_id}"]').count() == 1
        shot = tmp_path / "serve.png"
        page.screenshot(path=str(shot), full_page=True)
        assert not page.console_errors, page.console_errors
        assert not dialogs
        with page.expect_navigation() as nav:
            page.locator(f'#rows a[href="/runs/{run_id}"]').click()
        assert nav.value.status == 200 and page.url.endswith(f"/runs/{run_id}")  # the run page...
        with page.expect_navigation() as nav:
            page.get_by_role("link", name="Full report").click()  # ...and from it, the report
        assert nav.value.status == 200 and page.url.endswith(f"/runs/{run_id}/report")
        assert page.title() != "orchestrator runs"  # the report, not the list
    assert shot.stat().st_size > 10_000
