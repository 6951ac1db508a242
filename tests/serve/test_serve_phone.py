"""The live page on a phone: `serve` opened in real headless Chromium at 412 x 915 (Debian's).

A person who was just paged opens the fleet page on their phone: nothing may scroll
sideways (each run is a card of labelled cells below 700 px), every state reads in full,
a very long reason wraps inside its card, and the run that paged comes first and stands
out (`hot`). The same holds after the script's first redraw from /api/runs, which must
draw the server's markup in the server's order. A screenshot is saved under the test's
tmp folder. The order itself is also checked without a browser.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from orchestrator.serve.page import COLUMNS, by_urgency, page_html, row_html, urgency
from tests.browser import need_chromium, open_page
from tests.helpers import base_url, launch, serving_in_thread, state, ticket, wait

WIDTH, HEIGHT = 412, 915  # a phone (a Pixel 7's CSS pixels)
LONG_REASON = "agent exited 1: " + "Traceback_in_/tmp/clone/src/very/deep/module_" * 12 + " then " + "x" * 300


def _ts(ago_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - ago_s))


def _record(home: Path, run_id: str, **fields: Any) -> None:
    d = home / "runs" / run_id
    d.mkdir(parents=True)
    record = {"run_id": run_id, "ticket_id": run_id, "bucket": "small", "agent": "fake", "started_at": _ts(900)}
    (d / "state.json").write_text(json.dumps({**record, **fields}))


def fleet(tmp_path: Path, repo: Path, home: Path) -> list[str]:
    """A real ended run and a few recorded ones, listed (by name) in an order urgency changes;
    returns their ids most urgent first."""
    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', name="good"))
    wait(lambda: state(home, good)["state"] == "succeeded", what="the run to end")
    ended = {"ended_at": _ts(60)}
    _record(
        home,
        "a-paged-then-killed",
        state="killed",
        reason="killed by a person",
        **ended,
        spiral={"region": "soft", "signals": ["repetition"], "suspicion": 2, "tripped_at_min": 31, "notified": True},
    )
    _record(home, "b-long-reason", state="failed", reason=LONG_REASON, **ended)
    _record(home, "c-calm", state="running", spiral={"region": "healthy"})
    _record(home, "d-waiting", state="queued", started_at=None, queued_at=_ts(30))
    spiraling = {
        "region": "soft",
        "signals": ["repetition", "debris", "stuck_check"],
        "suspicion": 3.5,
        "evidence": ["`pytest tests/test_store.py` failed identically 9 times, 7 of them after edits to store.py"],
        "tripped_at_min": 31.2,
        "notified": True,
    }
    _record(home, "e-spiraling", state="running", spiral=spiraling)  # paged, and still at work: hot
    bad = home / "runs" / "z-unreadable"
    bad.mkdir()
    (bad / "state.json").write_text("{not json")
    return ["e-spiraling", "c-calm", "d-waiting", "a-paged-then-killed", "b-long-reason", good, "z-unreadable"]


def _markup(page: Any) -> list[Any]:
    """Each row's class, and each cell's class and label: what the server and the script both draw."""
    drawn: list[Any] = page.locator("#rows").evaluate(
        """body => Array.from(body.rows).map(tr => [tr.className,
             Array.from(tr.cells).map(td => [td.className, td.getAttribute("data-label")])])"""
    )
    return drawn


def _check_phone(page: Any, order: list[str]) -> None:
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= WIDTH, f"the page scrolls sideways: {width} px wide in a {WIDTH} px viewport"
    assert page.locator("#rows td.c-run").all_inner_texts() == order
    assert page.locator("thead").is_hidden()  # cards, not a table
    for td in page.locator("#rows td.c-state").all():  # every state in full, nothing cut
        text, box = td.inner_text(), td.bounding_box()
        fits = td.evaluate("td => td.scrollWidth <= td.clientWidth")
        assert fits and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (text, box)
    assert "succeeded" in page.locator("#rows td.c-state").all_inner_texts()
    for tr in page.locator("#rows tr").all():  # every card inside the screen
        box = tr.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (tr.inner_text()[:80], box)
    reason = page.locator("#rows tr", has_text="b-long-reason").locator("td.reason")
    box = reason.bounding_box()
    assert reason.inner_text() == LONG_REASON and box["x"] + box["width"] <= WIDTH
    assert box["height"] > 8 * 16  # wrapped over many lines, inside its card
    assert reason.evaluate("td => getComputedStyle(td, '::before').content") == '"reason"'  # labelled
    hot = page.locator("#rows tr.hot")
    assert hot.count() == 1 and hot.locator("td.c-run").inner_text() == "e-spiraling"
    style = hot.evaluate("tr => [getComputedStyle(tr).borderTopColor, getComputedStyle(tr).borderTopWidth]")
    assert style == ["rgb(204, 0, 0)", "2px"], style  # stands out from every other card
    plain = page.locator("#rows tr", has_text="c-calm").evaluate("tr => getComputedStyle(tr).borderTopColor")
    assert plain != style[0]


def test_the_fleet_page_fits_a_phone_most_urgent_first(tmp_path: Path, repo: Path, home: Path) -> None:
    need_chromium()
    order = fleet(tmp_path, repo, home)
    with serving_in_thread() as server, open_page(base_url(server) + "/", width=WIDTH, height=HEIGHT) as page:
        assert page.locator("#rows tr").count() == len(order)
        _check_phone(page, order)
        drawn = _markup(page)
        assert all(
            [label for _, label in cells] == COLUMNS and all(cls.startswith(f"c-{label}") for cls, label in cells)
            for _, cells in drawn
        ), drawn
        page.screenshot(path=str(tmp_path / "serve-phone.png"), full_page=True)
        # the script's first poll (every 3 s) redraws every row from /api/runs, sorted by the script
        page.locator("#status", has_text="updated").wait_for(timeout=15_000)
        _check_phone(page, order)
        assert _markup(page) == drawn  # the script draws what the server drew, in its order
        page.screenshot(path=str(tmp_path / "serve-phone-redrawn.png"), full_page=True)
        for width, cards in ((768, True), (1001, False)):  # a tablet's cards; a desk's table, which fits
            page.set_viewport_size({"width": width, "height": HEIGHT})
            assert page.evaluate("document.scrollingElement.scrollWidth") <= width
            assert page.locator("thead").is_hidden() is cards
        assert not page.console_errors, page.console_errors
    assert (tmp_path / "serve-phone.png").stat().st_size > 10_000


def _row(run_id: str, state: str, **spiral: Any) -> dict[str, Any]:
    return {"id": run_id, "state": state, "notified": False, "tripped_at_min": None, "page_error": None, **spiral}


def test_runs_sort_by_urgency_and_keep_their_order_within_a_group() -> None:
    rows = [
        _row("ended-1", "succeeded"),
        _row("paged-but-ended", "killed", notified=True, tripped_at_min=31.0),
        _row("queued-1", "queued"),
        _row("running-1", "running"),
        _row("due", "running", tripped_at_min=30.5),  # tripped, its page not sent yet
        _row("unreadable", "unreadable"),
        _row("launching-1", "launching"),
        _row("page-failed", "running", tripped_at_min=30.0, page_error="connection refused"),
        _row("sent", "launching", notified=True),
        _row("ended-2", "failed"),
        _row("at-threshold", "running", at_threshold=True),  # over the threshold before the soft band
    ]
    got = [r["id"] for r in by_urgency(rows)]
    assert got == [
        "due",
        "page-failed",
        "sent",
        "at-threshold",
        "queued-1",
        "running-1",
        "launching-1",
        "ended-1",
        "paged-but-ended",
        "unreadable",
        "ended-2",
    ]
    assert [urgency(r) for r in by_urgency(rows)] == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2]
    assert [r["id"] for r in rows][0] == "ended-1"  # the rows given are left as they were
    html = page_html(rows)
    assert [html.index(f">{x}</a>") for x in got] == sorted(html.index(f">{x}</a>") for x in got)
    hot = row_html(rows[4])
    assert hot.startswith('<tr class="r- hot">') and 'class="c-page" data-label="page">due<' in hot
    assert 'class="r-"' in row_html(rows[1])  # an ended run is never hot
    assert all(f'data-label="{c}"' in hot for c in COLUMNS)
