"""Rewrite the bucket timings of buckets.yaml in place, keeping its comments."""
from __future__ import annotations

import re
from pathlib import Path

from orchestrator import yamlfile
from orchestrator.atomic import write_text_atomic
from orchestrator.errors import UserError
from spiral.settings import Bucket, Settings, SettingsError

_LINE = re.compile(r"^(?P<indent>\s+)(?P<name>small|medium|big):\s*\{[^}\n]*\}(?P<rest>.*)$", re.M)


def _num(x: float) -> str:
    return f"{x:g}"


def write_buckets(path: Path, new: dict[str, Bucket]) -> None:
    text = path.read_text(encoding="utf-8")
    found = {m.group("name") for m in _LINE.finditer(text)}
    missing = set(new) - found
    if missing:
        raise UserError(f"{path}: cannot find the one-line form `{sorted(missing)[0]}: {{expected_min: ...}}` "
                        f"to rewrite; edit the file by hand")

    def repl(m: re.Match[str]) -> str:
        b = new.get(m.group("name"))
        if b is None:
            return m.group(0)
        return (f"{m.group('indent')}{m.group('name')}: {{expected_min: {_num(b.expected_min)}, "
                f"soft_start_min: {_num(b.soft_start_min)}, stuck_min: {_num(b.stuck_min)}}}{m.group('rest')}")

    updated = _LINE.sub(repl, text)
    data, _ = yamlfile.load_text(updated, str(path))
    try:
        Settings.from_mapping(data)
    except SettingsError as exc:
        raise UserError(f"{path}: the calibrated timings would not validate: {exc.message}") from None
    write_text_atomic(path, updated)
