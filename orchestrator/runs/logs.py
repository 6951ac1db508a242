"""`logs`: a run's tool calls, one readable line each, optionally followed.

A call is printed once, with what its result said, so it is printed when
its result is known:

- without -f, after the whole log is read: every result the log holds is
  known. A call the log has no result for (the run ended mid-call) is marked
  `[no result]`.
- with -f, as soon as its result arrives, or GRACE_S (5 s, on this
  process's clock) after the call was read if it has not (a long test run,
  a subagent at work, a call whose result will never come): then it is
  printed marked `[running]`, and its result, when it arrives later, is not
  printed. Calls keep the log's order, so a call waiting for its result holds
  back the ones after it, for at most GRACE_S. Once the run has ended and
  its log is read to the end, whatever still waits is printed (`[no result]`).
  While the log is quiet, `check` (the CLI passes the watcher's refresh of
  this run) is called at most every CHECK_S, so a run whose supervisor died with
  no watcher running is found dead and recorded, and -f ends, instead of
  waiting for an ending nobody will write.

What is printed is redacted (orchestrator/infra/redaction.py): an agent's
log holds whatever it echoed, keys and tokens included.

Marks: `[denied]` (the agent's permission layer or sandbox refused it: it did
not run), `[error]` or `[error, exit N]` (it failed), each followed by the
start of the tool's output. `--json` lines carry the same facts: `is_error`,
`denied`, `exit_code`, `output` (an excerpt) and `result_seen` (false: printed
before its result was known, and nothing can be said about success).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.infra.errors import UserError
from orchestrator.infra.lines import whole_lines
from orchestrator.infra.printable import printable
from orchestrator.infra.redaction import redact
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from spiral.adapters import make_adapter
from spiral.envelope import parse_envelope
from spiral.model import ToolCall
from spiral.timestamps import format_ts, parse_ts

GRACE_S = 5.0  # -f: how long a call waits for its result before it is printed without one
CHECK_S = 10.0  # -f: how often a quiet run's liveness is checked (`check`)
_SHOWN_OUTPUT = 100  # characters of output on a readable line


def mark(call: ToolCall, output: str | None, waiting: bool = False) -> str:
    """The readable line's flag: what the call's result said (`output`: its text, redacted), or that there was none."""
    if call.denied:
        flag = "[denied]"
    elif call.is_error:
        flag = "[error]" if call.exit_code is None else f"[error, exit {call.exit_code}]"
    elif not call.result_seen and call.call_id is not None:
        return "  [running]" if waiting else "  [no result]"
    else:
        return ""
    out = output or ""
    if len(out) > _SHOWN_OUTPUT:
        out = out[: _SHOWN_OUTPUT - 3] + "..."
    return f"  {flag} {out}".rstrip()


def describe(call: ToolCall, started: float, what: str, output: str | None, waiting: bool = False) -> str:
    """The readable line: `what` (the command or path) and `output`, redacted before they are cut here."""
    minute = (call.ts - started) / 60.0
    what = " ".join(what.split())
    if len(what) > 160:
        what = what[:157] + "..."
    line = f"{format_ts(call.ts)[11:19]}  +{minute:6.1f}m  {call.tool:<11} {what}{mark(call, output, waiting)}"
    return printable(line)  # a command or an output may hold terminal escapes: shown, never run


def as_row(call: ToolCall, started: float, waiting: bool = False) -> dict[str, Any]:
    # redacted whole, before anything is cut for the line (a cut key no longer matches its pattern)
    command, path, output = _redacted(call.command), _redacted(call.path), _redacted(call.output)
    return {
        "ts": format_ts(call.ts),
        "minute": round((call.ts - started) / 60.0, 2),
        "tool": call.tool,
        "command": command,
        "path": path,
        "is_error": call.is_error,
        "denied": call.denied,
        "exit_code": call.exit_code,
        "output": output,
        "result_seen": call.result_seen,
        "line": describe(call, started, command or path or "", output, waiting),
    }


def _redacted(text: str | None) -> str | None:
    return redact(text) if text else text


def _decided(call: ToolCall) -> bool:
    # a call without an id can never be joined to a result: nothing to wait for
    return call.result_seen or call.call_id is None


def tool_calls(
    run_dir: Path,
    follow: bool,
    poll_s: float = 0.5,
    grace_s: float = GRACE_S,
    check: Callable[[], object] | None = None,
) -> Iterator[dict[str, Any]]:
    """The run's calls as rows (see as_row), each once, in log order; see the module docstring for when."""
    rd = RunDir.of(run_dir)
    record = state_file.read(rd)
    try:
        adapter = make_adapter(str(record.format), str(rd.clone))
    except ValueError:  # a record written by hand, or by something else than us
        raise UserError(f"{rd.state_json}: run {rd.run_id} names no known log format ({record.format!r})") from None
    started = parse_ts(record.started_at)  # None while queued: read again as the run starts (-f)
    path = rd.events
    offset = 0
    waiting: deque[tuple[float, ToolCall]] = deque()  # (print by, call), in log order
    checked_at, seen = -CHECK_S, -1  # when `check` last ran; the log's size at the previous poll
    while True:
        for line, end in whole_lines(path, offset):
            offset = end
            env = parse_envelope(line) if line.strip() else None
            if env is None:
                continue
            calls = adapter.feed(*env)
            if calls:
                by = time.monotonic() + grace_s
                waiting.extend((by, call) for call in calls)
        if not follow:
            break
        now = time.monotonic()
        current = state_file.read(rd)
        started = started if started is not None else parse_ts(current.started_at)
        while waiting and (_decided(waiting[0][1]) or waiting[0][0] <= now):
            call = waiting.popleft()[1]
            yield as_row(call, call.ts if started is None else started, waiting=True)
        if current.ended and (not path.exists() or path.stat().st_size == offset):
            break
        if check is not None and offset == seen and now - checked_at >= CHECK_S:
            check()  # the log is quiet: is anything still running the agent?
            checked_at = now
        seen = offset
        time.sleep(poll_s)
    while waiting:
        call = waiting.popleft()[1]
        yield as_row(call, call.ts if started is None else started)
