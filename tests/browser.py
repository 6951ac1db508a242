"""Real headless Chromium for tests, through Playwright's Python package (Debian's /usr/bin/chromium).

Never `playwright install`: the browser is the system's, installed by .ci/run. A test calls
`need_chromium()` first (it skips, saying why, only where no Chromium can be had), then:

    with open_page("file:///.../report.html") as page:
        page.screenshot(path=tmp_path / "shot.png", full_page=True)
        assert not page.console_errors
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# as root there is no sandbox; the background-networking flags keep Chromium off this closed network
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def need_chromium() -> str:
    """The Chromium executable, or skip the test with the reason."""
    try:
        import playwright.sync_api  # noqa: F401  (only whether it imports)
    except ImportError as exc:
        pytest.skip(f"playwright is not installed ({exc}): pip install -e '.[test]'")
    path = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if not path:
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's chromium package; .ci/run installs it)")
    return path


class Page:
    """A Playwright page, with every console error and page error it reported, and every URL it requested."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        page.on("request", lambda req: self.requests.append(req.url))
        page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))
        page.on("pageerror", lambda exc: self.console_errors.append(f"page error: {exc}"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.page, name)


@contextmanager
def open_page(url: str, *, width: int = 1400, height: int = 1000, timeout_s: float = 30) -> Iterator[Page]:
    """`url` loaded in a fresh headless Chromium (an empty profile of its own), closed afterwards."""
    from playwright.sync_api import sync_playwright

    exe = need_chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=exe,
            headless=True,
            args=FLAGS,
            viewport={"width": width, "height": height},
        )
        try:
            page = Page(context.new_page())
            page.set_default_timeout(timeout_s * 1000)
            page.goto(url, wait_until="load")
            yield page
        finally:
            context.close()


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
