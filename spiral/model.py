"""The normalised inputs the detector works on."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(slots=True)
class ToolCall:
    """One tool call, as every log format is reduced to it.

    `path` is relative to the run's workdir when the file lies inside it.
    `is_error` is filled in later when the matching result arrives.
    """

    ts: float
    tool: str
    command: str | None = None
    path: str | None = None
    is_error: bool = False
    call_id: str | None = None
    cwd: str | None = None


@dataclass(slots=True)
class Snapshot:
    """`git status --porcelain` of the clone at one moment, plus blob ids."""

    ts: float
    status: dict[str, str]  # path -> two-letter porcelain status
    hashes: dict[str, str] = field(default_factory=dict)
