"""`logs`: a run's tool calls, one readable line each, optionally followed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.infra.lines import whole_lines
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from spiral.adapters import make_adapter
from spiral.envelope import parse_envelope
from spiral.model import ToolCall
from spiral.timestamps import format_ts, parse_ts


def describe(call: ToolCall, started: float) -> str:
    minute = (call.ts - started) / 60.0
    what = call.command or call.path or ""
    what = " ".join(what.split())
    if len(what) > 160:
        what = what[:157] + "..."
    flag = "  [error]" if call.is_error else ""
    return f"{format_ts(call.ts)[11:19]}  +{minute:6.1f}m  {call.tool:<11} {what}{flag}"


def tool_calls(run_dir: Path, follow: bool, poll_s: float = 0.5) -> Iterator[dict[str, Any]]:
    rd = RunDir.of(run_dir)
    record = state_file.read(rd)
    adapter = make_adapter(str(record.format), str(rd.clone))
    started = parse_ts(record.started_at) or 0.0
    path = rd.events
    offset = 0
    while True:
        for line, end in whole_lines(path, offset):
            offset = end
            env = parse_envelope(line) if line.strip() else None
            if env is None:
                continue
            for call in adapter.feed(*env):
                yield {
                    "ts": format_ts(call.ts),
                    "minute": round((call.ts - started) / 60.0, 2),
                    "tool": call.tool,
                    "command": call.command,
                    "path": call.path,
                    "is_error": call.is_error,
                    "line": describe(call, started),
                }
        if not follow:
            return
        if state_file.read(rd).ended:
            if not path.exists() or path.stat().st_size == offset:
                return
        time.sleep(poll_s)
