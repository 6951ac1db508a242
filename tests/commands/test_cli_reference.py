"""docs/reference/cli.md is generated from the commands' `--help` by tools/cli_reference.py; this
runs the tool's check as a user would (a real subprocess), so a help text changed without the
file is caught here."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT

TOOL = ROOT / "tools" / "cli_reference.py"
FIX = "run `.venv/bin/python tools/cli_reference.py` and commit docs/reference/cli.md"


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=120,
    )


def test_the_cli_reference_is_current() -> None:
    p = _check()
    assert p.returncode == 0, f"docs/reference/cli.md is stale: {FIX}\n{p.stderr}"


def test_the_reference_does_not_depend_on_the_terminal() -> None:
    """A narrow terminal, forced colour or CI's variables give the same text: the width and the
    absence of colour are the tool's, not the environment's."""
    p = _check(COLUMNS="40", TERMINAL_WIDTH="60", FORCE_COLOR="1", GITHUB_ACTIONS="true", TERM="dumb")
    assert p.returncode == 0, f"the generated reference changes with the environment:\n{p.stderr}"


def test_every_command_has_a_section() -> None:
    from typer.main import get_command

    from orchestrator.cli import app

    def names(cmd: object, path: tuple[str, ...]) -> list[str]:
        found = [" ".join(path)] if path else []
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not sub.hidden:
                found += names(sub, (*path, name))
        return found

    text = (ROOT / "docs" / "reference" / "cli.md").read_text()
    missing = [n for n in names(get_command(app), ()) if f"\n## {n}\n" not in text]
    assert not missing, f"no section for {missing}: {FIX}"
