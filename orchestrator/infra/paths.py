"""Where state lives: `$ORCHESTRATOR_HOME`, default ~/.local/state/orchestrator."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    env = os.environ.get("ORCHESTRATOR_HOME")
    return Path(env).expanduser() if env else Path.home() / ".local" / "state" / "orchestrator"


def runs_dir() -> Path:
    return home() / "runs"


def config_path() -> Path:
    return home() / "config.yaml"
