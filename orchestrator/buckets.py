"""buckets.yaml: the detector settings it holds (the only reader) and calibrated rewrites of it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from orchestrator import data
from orchestrator.infra import yamlfile
from orchestrator.infra.atomic import write_text_atomic
from orchestrator.infra.errors import UserError
from spiral.settings import Bucket, Settings, SettingsError


def buckets_path() -> Path:
    """`$ORCHESTRATOR_BUCKETS`, else the shipped buckets.yaml (in a checkout: ./buckets.yaml itself)."""
    env = os.environ.get("ORCHESTRATOR_BUCKETS")
    return Path(env) if env else data.path("buckets.yaml")


class BucketsFile:
    """buckets.yaml parsed once, turned into Settings per set of overrides."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or buckets_path()
        self.raw, self.lines = yamlfile.load_file(self.path)
        self.settings = self._build(None, None, ())

    def with_overrides(self, overrides: Any, source: str, lines: yamlfile.Lines, prefix: tuple[Any, ...]) -> Settings:
        if not overrides:
            return self.settings
        return self._build(overrides, source, prefix, lines)

    def _build(
        self, overrides: Any, source: str | None, prefix: tuple[Any, ...], lines: yamlfile.Lines | None = None
    ) -> Settings:
        try:
            return Settings.from_mapping(self.raw, overrides)
        except SettingsError as exc:
            if source is not None and lines is not None:
                line = yamlfile.line_of(lines, prefix + exc.path)
                raise UserError(f"{source}:{line}: overrides: {exc.message}") from None
            line = yamlfile.line_of(self.lines, exc.path)
            raise UserError(f"{self.path}:{line}: {exc.message}") from None


_LINE = re.compile(r"^(?P<indent>\s+)(?P<name>small|medium|big):\s*\{[^}\n]*\}(?P<rest>.*)$", re.M)


def _num(x: float) -> str:
    return f"{x:g}"


def write_buckets(path: Path, new: dict[str, Bucket]) -> None:
    text = path.read_text(encoding="utf-8")
    found = {m.group("name") for m in _LINE.finditer(text)}
    missing = set(new) - found
    if missing:
        raise UserError(
            f"{path}: cannot find the one-line form `{sorted(missing)[0]}: {{expected_min: ...}}` "
            f"to rewrite; edit the file by hand"
        )

    def repl(m: re.Match[str]) -> str:
        b = new.get(m.group("name"))
        if b is None:
            return m.group(0)
        calls = (
            f", expected_calls: {b.expected_calls}, soft_start_calls: {b.soft_start_calls}, "
            f"stuck_calls: {b.stuck_calls}"
            if b.expected_calls
            else ""
        )
        return (
            f"{m.group('indent')}{m.group('name')}: {{expected_min: {_num(b.expected_min)}, "
            f"soft_start_min: {_num(b.soft_start_min)}, stuck_min: {_num(b.stuck_min)}{calls}}}{m.group('rest')}"
        )

    updated = _LINE.sub(repl, text)
    data, _ = yamlfile.load_text(updated, str(path))
    try:
        Settings.from_mapping(data)
    except SettingsError as exc:
        raise UserError(f"{path}: the calibrated timings would not validate: {exc.message}") from None
    write_text_atomic(path, updated)
