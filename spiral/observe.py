"""Per-call facts the signals count: script, file, polling kind (pure)."""

from __future__ import annotations

import posixpath
from typing import NamedTuple

from spiral import model
from spiral.model import ToolCall
from spiral.paths import relativize
from spiral.shellcmd import analyse

SHELL_LIKE = frozenset({model.BASH, model.BASH_OUTPUT})


class Observed(NamedTuple):  # a tuple: built once per distinct call, cheaply
    ts: float
    tool: str
    script: str | None  # Bash only: script or test file executed (workdir-relative when inside)
    file: str | None  # the file a Read/Edit/Write acts on, or a Bash call's script / main file
    poll: str | None  # polling kind for shell-like calls: "sleep", "task-output", "until", "native"
    suite: str | None = None  # Bash only: a test run naming no file (`npm test`, `go test`): the rules count it


def observe(call: ToolCall, workdir: str | None, max_sleep_s: float) -> Observed:
    if call.tool == model.BASH and call.command:
        facts = analyse(call.command)
        script = _norm(facts.script, workdir, call.cwd)
        file = _norm(facts.file, workdir, call.cwd)
        poll = None
        if facts.task_output:
            poll = "task-output"
        elif facts.until_wait:
            poll = "until"
        elif facts.sleep_s is not None and facts.sleep_s <= max_sleep_s:
            poll = "sleep"
        return Observed(call.ts, call.tool, script, file, poll, facts.suite)
    if call.tool == model.BASH_OUTPUT:
        return Observed(call.ts, call.tool, None, None, "native")
    path = call.path if call.tool in model.FILE_TOOLS else None
    return Observed(call.ts, call.tool, None, _norm(path, None, None), None)


def norm_path(path: str | None, workdir: str | None, cwd: str | None) -> str | None:
    """A path a command names, relative to the workdir when it lies inside it."""
    return _norm(path, workdir, cwd)


def _norm(path: str | None, workdir: str | None, cwd: str | None) -> str | None:
    if not path:
        return None
    path = relativize(path, workdir, cwd)
    if path.startswith("./") or "/./" in path or "/../" in path:
        path = posixpath.normpath(path)
    return path
