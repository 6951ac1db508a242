"""The report as a person sees it: opened in real headless Chromium (Debian's), drawn, no console errors."""

from __future__ import annotations

from pathlib import Path

from orchestrator.report import render_case
from tests.browser import file_url, open_page
from tests.helpers import CORPUS


def test_the_spiral_report_renders_in_chromium(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(render_case(CORPUS / "spiral-001-fixture-shim"))
    with open_page(file_url(report)) as page:
        page.wait_for_selector("#timeline .main-svg")
        assert page.locator("#timeline svg.main-svg").count() >= 1
        assert page.locator("#timeline .scatterlayer .trace").count() >= 4  # call kinds, suspicion, threshold, spend
        assert page.locator("#timeline .barlayer .point").count() >= 5  # the signals' on intervals
        assert page.locator("#timeline .shapelayer path").count() >= 3  # regions and marks
        assert "page 70 min" in page.locator("#timeline").inner_text()
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert not page.console_errors, page.console_errors
        assert [u for u in page.requests if not u.startswith(("file:", "data:", "blob:"))] == []  # no network
    assert shot.stat().st_size > 20_000
