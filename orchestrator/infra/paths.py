"""Where state lives: `$ORCHESTRATOR_HOME`, else the user's state folder for this OS.

On Linux that is `$XDG_STATE_HOME/orchestrator`, i.e. `~/.local/state/orchestrator`
(shared/spec/cli.md); platformdirs answers for macOS and Windows.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    env = os.environ.get("ORCHESTRATOR_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_state_path  # ~5 ms: only when no override is set

    return user_state_path("orchestrator", appauthor=False)


def runs_dir() -> Path:
    return home() / "runs"


def config_path() -> Path:
    return home() / "config.yaml"
