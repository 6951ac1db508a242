"""Detector settings from buckets.yaml (the only place that reads it)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orchestrator import yamlfile
from orchestrator.errors import UserError
from spiral.settings import Settings, SettingsError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def buckets_path() -> Path:
    """`$ORCHESTRATOR_BUCKETS`, else the project's buckets.yaml."""
    env = os.environ.get("ORCHESTRATOR_BUCKETS")
    return Path(env) if env else PROJECT_ROOT / "buckets.yaml"


class BucketsFile:
    """buckets.yaml parsed once, turned into Settings per set of overrides."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or buckets_path()
        self.raw, self.lines = yamlfile.load_file(self.path)
        self.settings = self._build(None, None, ())

    def with_overrides(self, overrides: Any, source: str, lines: yamlfile.Lines,
                       prefix: tuple[Any, ...]) -> Settings:
        if not overrides:
            return self.settings
        return self._build(overrides, source, prefix, lines)

    def _build(self, overrides: Any, source: str | None, prefix: tuple[Any, ...],
               lines: yamlfile.Lines | None = None) -> Settings:
        try:
            return Settings.from_mapping(self.raw, overrides)
        except SettingsError as exc:
            if source is not None and lines is not None:
                line = yamlfile.line_of(lines, prefix + exc.path)
                raise UserError(f"{source}:{line}: overrides: {exc.message}") from None
            line = yamlfile.line_of(self.lines, exc.path)
            raise UserError(f"{self.path}:{line}: {exc.message}") from None
