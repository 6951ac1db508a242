"""The normalised inputs the detector works on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from spiral.pickling import by_fields

# Canonical tool names. Adapters map every agent's own vocabulary onto these.
BASH = "Bash"
BASH_OUTPUT = "BashOutput"  # reading a background task's output
KILL_SHELL = "KillShell"
READ = "Read"
EDIT = "Edit"
WRITE = "Write"
AGENT = "Agent"

WRITING_TOOLS = frozenset({EDIT, WRITE})
FILE_TOOLS = frozenset({READ, EDIT, WRITE})

EXCERPT = 300  # characters of a tool's output kept on its call
_KEEP = EXCERPT // 3  # of those, from the output's start; the rest from its end
_TAIL = EXCERPT - _KEEP - 5
# terminal escapes (CSI, OSC, two-byte) and the control characters str.split() keeps
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|[\x00-\x08\x0e-\x1b\x7f]")


def cut(text: str) -> str:
    """The ends of a tool's output that an excerpt is made of: two slices (the replay hot path)."""
    return text if len(text) <= 2 * EXCERPT else text[:_KEEP] + " ... " + text[-_TAIL:]


def excerpt(text: str) -> str:
    """A tool's output as one line of at most EXCERPT characters.

    Whitespace runs fold to one space; a longer output keeps its start and its
    end (where errors usually are), joined by ` ... `; terminal escapes and
    control characters are dropped. Only the ends of a huge output are read.
    """
    out = " ".join(cut(text).split())
    if len(out) > EXCERPT:
        out = out[:_KEEP].rstrip() + " ... " + out[-_TAIL:].lstrip()
    if not out.isprintable():
        out = " ".join(_CONTROL.sub("", out).split())
    return out


@dataclass(slots=True, init=False)
class ToolCall:
    """One tool call, as every log format is reduced to it.

    `path` is relative to the run's workdir when the file lies inside it.

    The result facts (`result_seen`, `is_error`, `exit_code`, `output`,
    `denied`) are filled in on this same object by the adapter when the
    matching result arrives, after the call was handed out; formats whose
    one line is the whole call set them at once. A call whose result has not
    arrived (yet) has `result_seen` false and says nothing about success.
    """

    ts: float
    tool: str
    command: str | None = None
    path: str | None = None
    is_error: bool = False  # the tool failed (a non-zero exit code, an error result, a denial)
    call_id: str | None = None
    cwd: str | None = None
    result_seen: bool = False
    denied: bool = False  # refused by the agent's permission layer or sandbox: nothing ran
    exit_code: int | None = None  # where the format reports one
    agent: str | None = None  # the subagent that made the call (its id), None for the run's own agent
    output_ends: str | None = field(default=None, repr=False)  # see `output`

    def __init__(
        self,
        ts: float,
        tool: str,
        command: str | None = None,
        path: str | None = None,
        is_error: bool = False,
        call_id: str | None = None,
        cwd: str | None = None,
        result_seen: bool = False,
        denied: bool = False,
        exit_code: int | None = None,
        agent: str | None = None,
        output_ends: str | None = None,
    ) -> None:
        # written out, so the compiled build makes it native (a dataclass's generated one runs as
        # Python): one ToolCall per call of every log read
        self.ts, self.tool, self.command, self.path, self.is_error = ts, tool, command, path, is_error
        self.call_id, self.cwd, self.result_seen, self.denied = call_id, cwd, result_seen, denied
        self.exit_code, self.agent, self.output_ends = exit_code, agent, output_ends

    @property
    def output(self) -> str | None:
        """An excerpt of what the tool returned: one line, at most EXCERPT characters (see excerpt()).

        Assigning the whole output keeps only its ends (cheap: adapters do it
        for every result); the excerpt is made when it is read.
        """
        return None if self.output_ends is None else excerpt(self.output_ends)

    @output.setter
    def output(self, text: str | None) -> None:
        self.output_ends = None if text is None else cut(text)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)  # the same pickle compiled or not (spiral/pickling.py)


@dataclass(slots=True)
class Snapshot:
    """`git status --porcelain` of the clone at one moment, plus blob ids."""

    ts: float
    status: dict[str, str]  # path -> two-letter porcelain status
    hashes: dict[str, str] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)
