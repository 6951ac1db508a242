from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL_TRACES = SHARED / "real-traces"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test may touch the real state folder or the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(tmp_path / "orchestrator-home"))
    monkeypatch.setenv("HOME", str(home))
    return home


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd, check=True, capture_output=True
    )


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
