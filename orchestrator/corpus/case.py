"""Reading a recorded run (a corpus case folder): case.yaml, events, snapshots."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.infra import yamlfile
from spiral.adapters import FORMATS
from spiral.settings import BUCKET_NAMES, SIGNAL_NAMES
from spiral.timestamps import parse_ts

CASE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_KEYS = {"id", "description", "format", "bucket", "started_at", "ended_at", "outputs",
         "workdir", "overrides", "expect"}
_REQUIRED = ("id", "format", "bucket", "started_at", "ended_at", "expect")
_EXPECT_KEYS = {"spiral", "notify_after_min", "notify_before_min", "signals"}


@dataclass
class Expect:
    spiral: bool
    notify_after_min: float | None = None
    notify_before_min: float | None = None
    signals: tuple[str, ...] = ()


@dataclass
class Case:
    folder: Path
    id: str
    description: str
    format: str
    bucket: str
    started_at: float
    ended_at: float
    outputs: tuple[str, ...]
    workdir: str | None
    overrides: dict[str, Any]
    expect: Expect
    lines: yamlfile.Lines = field(repr=False, default_factory=dict)

    @property
    def source(self) -> str:
        return str(self.folder / "case.yaml")


def load_case(folder: Path) -> Case:
    path = folder / "case.yaml"
    data, lines = yamlfile.load_file(path)
    fail = yamlfile.Complaints(str(path), lines)
    fail.mapping(data, _KEYS, "case.yaml", _REQUIRED)
    case_id = data["id"]
    if not isinstance(case_id, str) or not CASE_ID.match(case_id):
        raise fail(("id",), f"id must match [a-z0-9][a-z0-9-]*, got {case_id!r}")
    if data["format"] not in FORMATS:
        raise fail(("format",), f"format must be one of {', '.join(FORMATS)}, got {data['format']!r}")
    if data["bucket"] not in BUCKET_NAMES:
        raise fail(("bucket",), f"bucket must be one of {', '.join(BUCKET_NAMES)}, got {data['bucket']!r}")
    started = _when(data["started_at"])
    ended = _when(data["ended_at"])
    if started is None:
        raise fail(("started_at",), "started_at must be an ISO-8601 time")
    if ended is None:
        raise fail(("ended_at",), "ended_at must be an ISO-8601 time")
    if ended < started:
        raise fail(("ended_at",), "ended_at is before started_at")
    outputs = data.get("outputs") or []
    if not isinstance(outputs, list) or not all(isinstance(o, str) and o for o in outputs):
        raise fail(("outputs",), "outputs must be a list of paths")
    workdir = data.get("workdir")
    if workdir is not None and (not isinstance(workdir, str) or not workdir.startswith("/")):
        raise fail(("workdir",), "workdir must be an absolute path")
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise fail(("overrides",), "overrides must be a mapping")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail(("description",), "description must be text")
    return Case(folder=folder, id=case_id, description=description.strip(), format=data["format"],
                bucket=data["bucket"], started_at=started, ended_at=ended, outputs=tuple(outputs),
                workdir=workdir, overrides=overrides, expect=_expect(data["expect"], fail), lines=lines)


def _when(value: Any) -> float | None:
    if isinstance(value, datetime):  # YAML reads unquoted timestamps itself
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return parse_ts(value) if isinstance(value, str) else None


def _expect(raw: Any, fail: Any) -> Expect:
    if not isinstance(raw, dict):
        raise fail(("expect",), "expect must be a mapping")
    for key in raw:
        if key not in _EXPECT_KEYS:
            raise fail(("expect", key), f"unknown key expect.{key} (known: {', '.join(sorted(_EXPECT_KEYS))})")
    if not isinstance(raw.get("spiral"), bool):
        raise fail(("expect", "spiral"), "expect.spiral must be true or false")
    bounds = []
    for key in ("notify_after_min", "notify_before_min"):
        v = raw.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise fail(("expect", key), f"expect.{key} must be a number of minutes")
        bounds.append(float(v) if v is not None else None)
    signals = raw.get("signals") or []
    if not isinstance(signals, list) or any(s not in SIGNAL_NAMES for s in signals):
        raise fail(("expect", "signals"), f"expect.signals must list signals among {', '.join(SIGNAL_NAMES)}")
    return Expect(raw["spiral"], bounds[0], bounds[1], tuple(signals))
