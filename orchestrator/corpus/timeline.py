"""Write a recorded run (a corpus case folder) from a scripted timeline.

Used to build the corpus and generated scenarios: the script says what the
agent did and when (shell commands, reads, edits, files appearing); the
writer renders it in the agent's native log format and simulates the clone so
`workspace.jsonl` carries real porcelain and blob ids every 30 seconds.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from orchestrator.record.case_file import write_case
from orchestrator.record.layout import CaseFiles
from spiral.adapters import FORMATS
from spiral.timestamps import format_ts, parse_ts


def blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class _Op:
    ts: float
    kind: str  # tool | fs
    tool: str = ""
    command: str | None = None
    path: str | None = None
    content: bytes | None = None
    is_error: bool = False
    output: str = ""


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
    ops: list[_Op] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert self.fmt in FORMATS, self.fmt
        self.t0 = parse_ts(self.started_at) or 0.0
        self.workdir = f"/home/dev/runs/{self.case_id}/clone"
        self._edits: dict[str, int] = {}

    def _ts(self, minute: float) -> float:
        return self.t0 + minute * 60.0

    # ---- what the agent does --------------------------------------------

    def bash(self, minute: float, command: str, *, error: bool = False, output: str = "ok") -> None:
        self.ops.append(_Op(self._ts(minute), "tool", "Bash", command=command, is_error=error, output=output))

    def read(self, minute: float, path: str) -> None:
        self.ops.append(_Op(self._ts(minute), "tool", "Read", path=path, output="(file contents)"))

    def edit(self, minute: float, path: str) -> None:
        """Edit a file: new content each time (so its blob id changes)."""
        n = self._edits.get(path, 0) + 1
        self._edits[path] = n
        base = self.tracked.get(path, b"")
        content = base + f"# edit {n}\n".encode()
        self.ops.append(_Op(self._ts(minute), "tool", "Edit", path=path, content=content, output="edited"))

    def write(self, minute: float, path: str, text: str = "") -> None:
        n = self._edits.get(path, 0) + 1
        self._edits[path] = n
        content = (text or f"# {path} v{n}\n").encode()
        self.ops.append(_Op(self._ts(minute), "tool", "Write", path=path, content=content, output="written"))

    def revert(self, minute: float, path: str) -> None:
        """Edit a tracked file back to its committed content."""
        self.ops.append(
            _Op(self._ts(minute), "tool", "Edit", path=path, content=self.tracked.get(path, b""), output="edited")
        )

    def bash_output(self, minute: float, task_id: str = "b1") -> None:
        self.ops.append(_Op(self._ts(minute), "tool", "BashOutput", command=task_id, output="running"))

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
        ops = sorted(self.ops, key=lambda o: o.ts)
        end = self._ts(end_minute)
        render = _Renderer(self)
        events: list[bytes] = [render.start()]
        snaps: list[bytes] = []
        fs = dict(self.tracked)
        next_snap = self.t0
        i = 0
        while next_snap <= end:
            while i < len(ops) and ops[i].ts <= next_snap:
                op = ops[i]
                if op.kind == "fs" or op.tool in ("Edit", "Write"):
                    if op.content is None:
                        fs.pop(op.path or "", None)
                    else:
                        fs[op.path or ""] = op.content
                if op.kind == "tool":
                    events.extend(render.tool(op))
                elif op.kind == "retry":
                    events.append(render.retry(op))
                i += 1
            snaps.append(self._snapshot(next_snap, fs))
            next_snap += self.snapshot_every_s
        events.append(render.finish(end))
        files = CaseFiles(folder)
        files.events.write_bytes(b"".join(events))
        files.workspace.write_bytes(b"".join(snaps))
        files.tracked.write_text("".join(p + "\n" for p in sorted(self.tracked)))
        case = {
            "id": self.case_id,
            "description": self.description,
            "format": self.fmt,
            "bucket": self.bucket,
            "started_at": self.started_at,
            "ended_at": format_ts(end).replace(".000Z", "Z"),
            "outputs": self.outputs,
            "workdir": self.workdir,
            "overrides": self.overrides,
            "expect": self.expect,
        }
        # the scripted corpus is ASCII at 88 columns: tools/build_corpus.py must reproduce it byte for byte
        write_case(files, case, width=88, ascii_only=True)

    def _snapshot(self, ts: float, fs: dict[str, bytes]) -> bytes:
        lines, hashes = [], {}
        for path in sorted(set(fs) | set(self.tracked)):
            if path in self.tracked and path not in fs:
                lines.append(f" D {path}")
            elif path not in self.tracked:
                lines.append(f"?? {path}")
                hashes[path] = blob_id(fs[path])
            elif fs[path] != self.tracked[path]:
                lines.append(f" M {path}")
                hashes[path] = blob_id(fs[path])
        porcelain = "".join(line + "\n" for line in lines)
        return orjson.dumps({"ts": format_ts(ts), "porcelain": porcelain, "hashes": hashes}) + b"\n"


class _Renderer:
    """One timeline op -> the native log lines of the chosen agent format."""

    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        self.n = 0

    def _env(self, ts: float, data: Any) -> bytes:
        return orjson.dumps({"ts": format_ts(ts), "data": data}) + b"\n"

    def start(self) -> bytes:
        tl = self.tl
        if tl.fmt == "claude-stream-json":
            data: Any = {
                "type": "system",
                "subtype": "init",
                "cwd": tl.workdir,
                "session_id": "s-" + tl.case_id,
                "tools": ["Bash", "Read", "Edit", "Write", "BashOutput"],
                "model": "claude-sonnet-4-5",
            }
        elif tl.fmt == "claude-transcript":
            data = {
                "type": "user",
                "message": {"role": "user", "content": "Work on the ticket."},
                "cwd": tl.workdir,
                "sessionId": "s-" + tl.case_id,
                "uuid": "u0",
                "parentUuid": None,
                "isSidechain": False,
                "timestamp": format_ts(tl.t0),
            }
        elif tl.fmt == "codex-json":
            data = {"type": "thread.started", "thread_id": "t-" + tl.case_id}
        else:
            data = {"tool": "Note", "text": "started"}
        return self._env(tl.t0, data)

    def finish(self, end: float) -> bytes:
        tl = self.tl
        if tl.fmt == "claude-stream-json":
            data: Any = {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "num_turns": self.n,
                "total_cost_usd": round(0.01 * self.n, 4),
            }
        elif tl.fmt == "claude-transcript":
            data = {"type": "summary", "summary": "recording ends", "leafUuid": f"u{self.n}"}
        elif tl.fmt == "codex-json":
            data = {"type": "turn.completed", "usage": {"input_tokens": 1000 * self.n, "output_tokens": 50 * self.n}}
        else:
            data = {"tool": "Note", "text": "recording ends"}
        return self._env(end, data)

    def retry(self, op: _Op) -> bytes:
        """One retry line of the agent's CLI while its model API fails (docs/agent-outcomes.md)."""
        status, attempt = int(op.command or 429), int(op.output)
        if self.tl.fmt == "claude-stream-json":
            kind = {429: "rate_limit", 529: "overloaded", 401: "authentication_failed"}.get(status, "server_error")
            data: Any = {
                "type": "system",
                "subtype": "api_retry",
                "attempt": attempt,
                "max_retries": 1000,
                "retry_delay_ms": 30000,
                "error_status": status,
                "error": kind,
            }
        else:
            data = {"type": "error", "message": f"Reconnecting... {(attempt - 1) % 5 + 1}/5 (last status: {status})"}
        return self._env(op.ts, data)

    def tool(self, op: _Op) -> list[bytes]:
        self.n += 1
        render: Callable[[_Op], list[bytes]] = getattr(self, "_" + self.tl.fmt.replace("-", "_"))
        return render(op)

    def _abs(self, path: str | None) -> str:
        return f"{self.tl.workdir}/{path}" if path else ""

    def _claude_input(self, op: _Op) -> tuple[str, dict[str, Any]]:
        if op.tool == "Bash":
            return "Bash", {"command": op.command, "description": "run"}
        if op.tool == "BashOutput":
            return "BashOutput", {"bash_id": op.command}
        if op.tool == "Edit":
            return "Edit", {"file_path": self._abs(op.path), "old_string": "a", "new_string": "b"}
        if op.tool == "Write":
            return "Write", {"file_path": self._abs(op.path), "content": (op.content or b"").decode()}
        return op.tool, {"file_path": self._abs(op.path)}

    def _claude(self, op: _Op, transcript: bool) -> list[bytes]:
        name, inp = self._claude_input(op)
        tid, mid = f"toolu_{self.tl.case_id[:8]}_{self.n:05d}", f"msg_{self.n:05d}"
        usage = {"input_tokens": 12, "output_tokens": 40, "cache_read_input_tokens": 9000}
        lines = []
        extra: dict[str, Any] = {}
        if transcript:
            extra = {
                "cwd": self.tl.workdir,
                "sessionId": "s-" + self.tl.case_id,
                "isSidechain": False,
                "version": "2.1.39",
                "timestamp": format_ts(op.ts),
            }
        if self.n % 4 == 0:  # a thinking/text block on its own line, sharing the message id and usage
            lines.append(
                self._env(
                    op.ts,
                    {
                        "type": "assistant",
                        "message": {
                            "id": mid,
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-sonnet-4-5",
                            "content": [{"type": "text", "text": "Let me check that."}],
                            "usage": usage,
                        },
                        **extra,
                        **({"uuid": f"a{self.n}t"} if transcript else {}),
                    },
                )
            )
        call = {
            "type": "assistant",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}],
                "usage": usage,
            },
            "parent_tool_use_id": None,
            **extra,
        }
        if transcript:
            call["uuid"] = f"a{self.n}"
        lines.append(self._env(op.ts, call))
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": op.output}
        if op.is_error:
            result["is_error"] = True
        done = op.ts + 2
        user: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [result]}}
        if transcript:
            user.update(
                extra,
                uuid=f"r{self.n}",
                timestamp=format_ts(done),
                toolUseResult={"stdout": op.output, "stderr": "", "interrupted": False},
            )
        else:
            user["tool_use_result"] = {"stdout": op.output, "stderr": ""}
        lines.append(self._env(done, user))
        return lines

    def _claude_stream_json(self, op: _Op) -> list[bytes]:
        return self._claude(op, transcript=False)

    def _claude_transcript(self, op: _Op) -> list[bytes]:
        return self._claude(op, transcript=True)

    def _codex_json(self, op: _Op) -> list[bytes]:
        iid = f"item_{self.n}"
        if op.tool in ("Edit", "Write"):
            kind = "add" if op.tool == "Write" and op.path not in self.tl.tracked else "update"
            return [
                self._env(
                    op.ts,
                    {
                        "type": "item.completed",
                        "item": {
                            "id": iid,
                            "type": "file_change",
                            "status": "completed",
                            "changes": [{"path": self._abs(op.path), "kind": kind}],
                        },
                    },
                )
            ]
        if op.tool == "Read":
            command = f"sed -n '1,200p' {op.path}"
        elif op.tool == "BashOutput":
            command = f"cat /tmp/codex/tasks/{op.command}.output"
        else:
            command = op.command or ""
        wrapped = "/bin/bash -lc " + shlex.quote(command)
        started = {
            "id": iid,
            "type": "command_execution",
            "command": wrapped,
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        }
        completed = dict(started, aggregated_output=op.output, exit_code=1 if op.is_error else 0, status="completed")
        return [
            self._env(op.ts, {"type": "item.started", "item": started}),
            self._env(op.ts + 2, {"type": "item.completed", "item": completed}),
        ]

    def _generic(self, op: _Op) -> list[bytes]:
        data: dict[str, Any] = {"tool": op.tool}
        if op.command is not None and op.tool != "BashOutput":
            data["command"] = op.command
        if op.path is not None:
            data["path"] = op.path
        if op.is_error:
            data["is_error"] = True
        return [self._env(op.ts, data)]
