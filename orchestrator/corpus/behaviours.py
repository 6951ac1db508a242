"""Agent behaviours for scripted timelines: the healthy work around a spiral."""

from __future__ import annotations

import random

from orchestrator.corpus.timeline import Timeline

BASE_REPO = {
    "README.md": b"# project\n",
    "pyproject.toml": b"[project]\nname = 'x'\n",
    "src/app/__init__.py": b"",
    "src/app/core.py": b"def run():\n    return 1\n",
    "src/app/cli.py": b"import sys\n",
    "src/app/store.py": b"class Store: ...\n",
    "src/app/config.py": b"DEBUG = False\n",
    "tests/test_core.py": b"def test_run(): ...\n",
    "tests/test_cli.py": b"def test_cli(): ...\n",
    "tests/test_store.py": b"def test_store(): ...\n",
    "build.sh": b"#!/bin/sh\npython -m build\n",
}


def repo(**extra: bytes) -> dict[str, bytes]:
    out = dict(BASE_REPO)
    out.update({k.replace("__", "/"): v for k, v in extra.items()})
    return out


def files_with(extra: dict[str, bytes]) -> dict[str, bytes]:
    """The base repository plus these files (paths as they are: no `__` spelling)."""
    return {**BASE_REPO, **extra}


def productive(
    tl: Timeline,
    start: float,
    end: float,
    rng: random.Random,
    *,
    step: float = 1.5,
    new_files: bool = True,
    prefix: str = "feature",
) -> float:
    """Varied, progressing work: read, edit new and existing files, run varied tests."""
    t = start
    k = 0
    existing = sorted(p for p in tl.tracked if p.endswith(".py"))
    while t < end:
        k += 1
        choice = k % 5
        if choice == 0 and new_files:
            tl.write(t, f"src/app/{prefix}_{k:03d}.py")
        elif choice == 1:
            tl.read(t, rng.choice(existing))
        elif choice == 2:
            tl.edit(t, rng.choice(existing))
        elif choice == 3:
            tl.bash(
                t,
                rng.choice(
                    [
                        "pytest -q",
                        "ruff check src",
                        "git diff --stat",
                        "pytest tests -x -q",
                        f"grep -rn 'def ' src/app/{rng.choice(['core', 'cli', 'store'])}.py",
                    ]
                ),
            )
        else:
            if new_files:
                tl.write(t, f"tests/test_{prefix}_{k:03d}.py")
            else:
                tl.read(t, rng.choice(existing))
        t += step * rng.uniform(0.7, 1.3)
    return t
