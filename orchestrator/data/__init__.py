"""Defaults shipped inside the package, read through importlib.resources.

One source of truth: `buckets.yaml` and `corpus/<case>/` at the project root
are the files people edit, tools rebuild and tests read. The entries here are
relative symlinks to them (`buckets.yaml -> ../../buckets.yaml`, one per demo
case under `demo-cases/`): setuptools copies a symlink's target into the wheel,
and an editable install reads straight through it, so the two can never
differ. Symlinks point this way round, not from the root into the package,
because rewriting a root file (`calibrate --write`, `tools/build_corpus.py`)
replaces it, and a replaced symlink would silently fork the copies.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def path(*parts: str) -> Path:
    """A shipped file or folder, as a real path (resolved, so through the symlink in a checkout)."""
    ref = files(__name__).joinpath(*parts)
    # pip always unpacks wheels; callers hand these paths to subprocesses, so they must be on disk
    if not isinstance(ref, Path):
        raise RuntimeError(f"orchestrator is installed as an archive ({ref}); it needs to be unpacked")
    return ref.resolve()
