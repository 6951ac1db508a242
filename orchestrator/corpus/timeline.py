"""Write a recorded run (a corpus case folder) from a scripted timeline.

Used to build the corpus and generated scenarios: the script says what the
agent did and when (shell commands, reads, edits, files appearing); the
writer renders it in the agent's native log format and simulates the clone so
`workspace.jsonl` carries real porcelain and blob ids every 30 seconds.

Result facts. A timeline renders by default exactly as the scripted corpus
was built (tools/build_corpus.py reproduces corpus/ byte for byte). With
`realistic=True` (the benchmark's families), or per call when an `exit_code`
is given, results carry what the agents really print: Claude's failed Bash
result reads `Exit code N\n<output>`, generic lines carry `exit_code` and
`output`, Read results are the file's lines (Claude numbers them, `     1\tline`,
from `offset`), Edit/Write results are Claude's confirmations.

Subagents. A call with `agent="<id>"` was made inside a Claude subagent:
stream-json gives it `parent_tool_use_id` (the id of a `Task` call the main
thread makes when that subagent's first call comes, answered after its last),
transcripts mark it `isSidechain: true, agentId: <id>`. Codex and generic logs
have no subagents: such calls render as ordinary ones.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from orchestrator.corpus.log_lines import Line, envelope_line, format_ts
from orchestrator.corpus.native_log import Renderer, _Op
from orchestrator.record.case_file import write_case
from orchestrator.record.layout import CaseFiles
from spiral.adapters import FORMATS
from spiral.timestamps import parse_ts


def blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Timeline:
    """A scripted run. Times are minutes since launch."""

    case_id: str
    fmt: str
    bucket: str
    description: str
    tracked: dict[str, bytes]
    started_at: str = "2026-05-20T09:00:00Z"
    outputs: list[str] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    snapshot_every_s: float = 30.0
    realistic: bool = False  # render the agents' real result texts (see the module docstring)
    scope: list[str] = field(default_factory=list)  # case.yaml `scope:` globs, written only when some
    ops: list[_Op] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert self.fmt in FORMATS, self.fmt
        self.t0 = parse_ts(self.started_at) or 0.0
        self.workdir = f"/home/dev/runs/{self.case_id}/clone"
        self._edits: dict[str, int] = {}

    def _ts(self, minute: float) -> float:
        return self.t0 + minute * 60.0

    # ---- what the agent does --------------------------------------------

    def bash(
        self,
        minute: float,
        command: str,
        *,
        error: bool = False,
        output: str = "ok",
        exit_code: int | None = None,
        agent: str | None = None,
    ) -> None:
        """A shell call; a non-zero `exit_code` is an error too."""
        self.ops.append(
            _Op(
                self._ts(minute),
                "tool",
                "Bash",
                command=command,
                is_error=error or bool(exit_code),
                output=output,
                exit_code=exit_code,
                agent=agent,
            )
        )

    def read(
        self,
        minute: float,
        path: str,
        *,
        output: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
        agent: str | None = None,
    ) -> None:
        """Read a file (lines `offset`.. of it, `limit` of them); `output` is the text shown, else the file's."""
        self.ops.append(
            _Op(self._ts(minute), "tool", "Read", path=path, output=output, offset=offset, limit=limit, agent=agent)
        )

    def edit(self, minute: float, path: str, *, agent: str | None = None) -> None:
        """Edit a file: new content each time (so its blob id changes)."""
        n = self._edits.get(path, 0) + 1
        self._edits[path] = n
        base = self.tracked.get(path, b"")
        content = base + f"# edit {n}\n".encode()
        self.ops.append(_Op(self._ts(minute), "tool", "Edit", path=path, content=content, output="edited", agent=agent))

    def write(self, minute: float, path: str, text: str = "", *, agent: str | None = None) -> None:
        n = self._edits.get(path, 0) + 1
        self._edits[path] = n
        content = (text or f"# {path} v{n}\n").encode()
        self.ops.append(
            _Op(self._ts(minute), "tool", "Write", path=path, content=content, output="written", agent=agent)
        )

    def revert(self, minute: float, path: str, *, agent: str | None = None) -> None:
        """Edit a tracked file back to its committed content."""
        self.ops.append(
            _Op(
                self._ts(minute),
                "tool",
                "Edit",
                path=path,
                content=self.tracked.get(path, b""),
                output="edited",
                agent=agent,
            )
        )

    def bash_output(
        self,
        minute: float,
        task_id: str = "b1",
        *,
        output: str = "running",
        agent: str | None = None,
        tool: str = "BashOutput",
    ) -> None:
        """Read a background task's output with the agent's own tool (Claude `BashOutput` or `TaskOutput`)."""
        assert tool in ("BashOutput", "TaskOutput"), tool
        self.ops.append(
            _Op(self._ts(minute), "tool", "BashOutput", command=task_id, output=output, agent=agent, name=tool)
        )

    def provider_down(self, start: float, end: float, *, status: int = 429, every: float = 0.5) -> None:
        """The agent's model API failing from minute `start` to `end`: only its CLI's retry lines."""
        minute, n = start, 0
        while minute < end:
            n += 1
            self.ops.append(_Op(self._ts(minute), "retry", command=str(status), output=str(n)))
            minute += every

    def appear(self, minute: float, path: str, text: str = "x\n") -> None:
        """A file appears without a tool call naming it (a script wrote it)."""
        self.ops.append(_Op(self._ts(minute), "fs", path=path, content=text.encode()))

    def remove(self, minute: float, path: str) -> None:
        self.ops.append(_Op(self._ts(minute), "fs", path=path, content=None))

    # ---- rendering ---------------------------------------------------------

    def write_case(self, folder: Path, end_minute: float) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        r = self.render(end_minute)
        files = CaseFiles(folder)
        files.events.write_bytes(b"".join(r.events))
        files.workspace.write_bytes(b"".join(snapshot_line(ts, p, h) for ts, p, h in r.snapshots))
        files.tracked.write_text("".join(p + "\n" for p in r.tracked))
        # the scripted corpus is ASCII at 88 columns: tools/build_corpus.py must reproduce it byte for byte
        write_case(files, r.case, width=88, ascii_only=True)

    def render(self, end_minute: float) -> Rendered:
        """The case's files, in memory: its log lines, its snapshots (ts, porcelain, blob ids), tracked.txt, case.yaml."""
        ops = sorted(self.ops, key=lambda o: o.ts)
        end = self._ts(end_minute)
        fs = dict(self.tracked)
        render = Renderer(self, fs, {op.agent: op for op in ops if op.kind == "tool" and op.agent})
        events: list[Line] = [render.start()]
        snaps: list[tuple[float, str, dict[str, str]]] = []
        blobs: dict[bytes, str] = {}
        state: tuple[str, dict[str, str]] | None = None  # the clone as of the last snapshot, while nothing moved
        changed: dict[str, tuple[str, str | None]] = {}  # path -> its porcelain line and blob id, if it differs
        touched: set[str] = set()  # the paths an op wrote or removed since the last snapshot
        next_snap = self.t0
        i = 0
        while next_snap <= end:
            while i < len(ops) and ops[i].ts <= next_snap:
                op = ops[i]
                if op.kind == "fs" or op.tool in ("Edit", "Write"):
                    state = None
                    touched.add(op.path or "")
                    if op.content is None:
                        fs.pop(op.path or "", None)
                    else:
                        fs[op.path or ""] = op.content
                if op.kind == "tool":
                    events.extend(render.tool(op))
                elif op.kind == "retry":
                    events.append(render.retry(op))
                i += 1
            if state is None:
                state = self._status(fs, blobs, touched, changed)
            snaps.append((next_snap, *state))
            next_snap += self.snapshot_every_s
        events.append(render.finish(end))
        case = {
            "id": self.case_id,
            "description": self.description,
            "format": self.fmt,
            "bucket": self.bucket,
            "started_at": self.started_at,
            "ended_at": format_ts(end).replace(".000Z", "Z"),
            "outputs": self.outputs,
            **({"scope": list(self.scope)} if self.scope else {}),
            "workdir": self.workdir,
            "overrides": self.overrides,
            "expect": self.expect,
        }
        return Rendered(events, snaps, sorted(self.tracked), case)

    def _status(
        self,
        fs: dict[str, bytes],
        blobs: dict[bytes, str],
        touched: set[str],
        changed: dict[str, tuple[str, str | None]],
    ) -> tuple[str, dict[str, str]]:
        """The clone's porcelain and the blob ids of its changed files (`blobs` remembers ids by content).

        `changed` holds what the last snapshot found; only the paths `touched` since can have moved
        (every other one still holds its tracked content itself), so only they are looked at again.
        """
        tracked = self.tracked
        for path in touched:
            content = fs.get(path)
            was = tracked.get(path)
            if content is was or (content is not None and was is not None and content == was):
                changed.pop(path, None)  # as tracked (the clone starts as the tracked contents themselves)
                continue
            if content is None:
                changed[path] = (f" D {path}\n", None)
                continue
            blob = blobs.get(content)
            if blob is None:
                blob = blobs[content] = blob_id(content)
            changed[path] = (f"?? {path}\n" if was is None else f" M {path}\n", blob)
        touched.clear()
        lines, hashes = [], {}
        for path in sorted(changed):
            line, blob = changed[path]
            lines.append(line)
            if blob is not None:
                hashes[path] = blob
        return "".join(lines), hashes


@dataclass
class Rendered:
    """A rendered case: its log lines, its snapshots, tracked.txt's paths and case.yaml's mapping."""

    lines: list[Line]  # events.jsonl's lines, not yet written: (epoch seconds, the native line)
    snapshots: list[tuple[float, str, dict[str, str]]]  # (ts, porcelain, blob ids); unchanged ones share theirs
    tracked: list[str]
    case: dict[str, Any]

    @property
    def events(self) -> list[bytes]:
        """The log's lines, written out as the run's events file holds them."""
        return [envelope_line(ts, data) for ts, data in self.lines]


def snapshot_line(ts: float, porcelain: str, hashes: dict[str, str]) -> bytes:
    """One workspace.jsonl line."""
    return orjson.dumps({"ts": format_ts(ts), "porcelain": porcelain, "hashes": hashes}) + b"\n"
