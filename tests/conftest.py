"""Fixtures. Helpers (plain functions and constants) are in tests/helpers.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Receiver, git, orchestrator_home, write_config


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test may touch the real state folder or the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(tmp_path / "orchestrator-home"))
    monkeypatch.setenv("HOME", str(home))
    # tests start their own watchers; a test of the auto-started one says `autostart_watcher: true`
    monkeypatch.setenv("ORCHESTRATOR_AUTOSTART_WATCHER", "0")
    # every watcher pass checks that each step wrote only its own part of the record (runs/steps/base.py)
    monkeypatch.setenv("ORCHESTRATOR_CHECK_STEP_PARTS", "1")
    return home


@pytest.fixture
def home() -> Path:
    """The (tmp) state folder, created, with a config.yaml naming the `fake` agent."""
    h = orchestrator_home()
    write_config(h)
    return h


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small real git repository to launch tickets against."""
    r = tmp_path / "origin"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("print('hi')\n")
    (r / "run_tests.sh").write_text("#!/bin/sh\necho ok\n")
    git("init", "-q", "-b", "main", cwd=r)
    git("add", "-A", cwd=r)
    git("commit", "-q", "-m", "init", cwd=r)
    return r


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A started HTTP receiver for json:// pages, stopped afterwards."""
    r = Receiver().start()
    yield r
    r.stop()
