"""Timeline ops rendered as the native log lines of each agent format (see orchestrator/corpus/timeline.py)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.corpus.log_lines import Line, format_ts

if TYPE_CHECKING:
    from orchestrator.corpus.timeline import Timeline


@dataclass
class _Op:
    ts: float
    kind: str  # tool | fs
    tool: str = ""
    command: str | None = None
    path: str | None = None
    content: bytes | None = None
    is_error: bool = False
    output: str | None = ""  # a Read's None: the file's own lines (realistic) or a placeholder
    exit_code: int | None = None  # given explicitly (else 1 on error, 0 on success, where rendered)
    agent: str | None = None  # the Claude subagent that made the call
    offset: int | None = None  # Read: first line (1-based) and number of lines, as Claude's input carries them
    limit: int | None = None
    name: str = ""  # the agent's own tool name when it differs from `tool` (TaskOutput)


class Renderer:
    """One timeline op -> the native log lines of the chosen agent format."""

    def __init__(self, tl: Timeline, fs: dict[str, bytes], last_of_agent: dict[str | None, _Op]) -> None:
        self.tl = tl
        self.n = 0
        self.fs = fs  # the simulated clone, as of the op being rendered (a Read shows it)
        self.last_of_agent = last_of_agent  # a subagent's last call: its Task call is answered after it
        self.agent_calls: dict[str, str] = {}  # subagent -> the id of the Task call that started it
        self._split: dict[bytes, list[str]] = {}  # a file's content -> its lines (a loop reads one file again)
        self._numbered: dict[tuple[bytes, int, int | None], str] = {}  # ...and a Read of it, as Claude numbers it
        self._ids = f"toolu_{tl.case_id[:8]}_"

    def _env(self, ts: float, data: Any) -> Line:
        return ts, data

    def start(self) -> Line:
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

    def finish(self, end: float) -> Line:
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

    def retry(self, op: _Op) -> Line:
        """One retry line of the agent's CLI while its model API fails (docs/agent-outcomes.md)."""
        status, attempt = int(op.command or 429), int(op.output or 1)
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

    def tool(self, op: _Op) -> list[Line]:
        self.n += 1
        render: Callable[[_Op], list[Line]] = getattr(self, "_" + self.tl.fmt.replace("-", "_"))
        return render(op)

    def _abs(self, path: str | None) -> str:
        return f"{self.tl.workdir}/{path}" if path else ""

    def _rich(self, op: _Op) -> bool:
        return self.tl.realistic or op.exit_code is not None

    def _exit_code(self, op: _Op) -> int:
        return op.exit_code if op.exit_code is not None else (1 if op.is_error else 0)

    def _lines(self, op: _Op) -> list[str]:
        """The lines a Read shows: its given text, else the file's, from `offset` (1-based), `limit` of them."""
        if op.output is not None:
            return op.output.splitlines()
        content = self.fs.get(op.path or "", b"")
        lines = self._split.get(content)
        if lines is None:
            lines = self._split[content] = content.decode(errors="replace").splitlines()
        first = (op.offset or 1) - 1
        return lines[first : first + (op.limit or 2000)]

    def _text(self, op: _Op, numbered: bool) -> str:
        """The result text of a call, as the agent's tool returns it."""
        if op.tool == "Read":
            if op.output is None and not self.tl.realistic:
                return "(file contents)"
            first = op.offset or 1
            if not numbered:
                return "\n".join(self._lines(op))
            key = None if op.output is not None else (self.fs.get(op.path or "", b""), first, op.limit)
            text = self._numbered.get(key) if key is not None else None
            if text is None:
                text = "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(self._lines(op)))
                if key is not None:
                    self._numbered[key] = text
            return text
        out = op.output or ""
        if not self.tl.realistic:
            return out
        if op.tool == "Edit":
            return f"The file {self._abs(op.path)} has been updated successfully."
        if op.tool == "Write":
            if op.path in self.tl.tracked:
                return f"The file {self._abs(op.path)} has been updated successfully."
            return f"File created successfully at: {self._abs(op.path)}"
        return out

    def _claude_input(self, op: _Op) -> tuple[str, dict[str, Any]]:
        if op.tool == "Bash":
            return "Bash", {"command": op.command, "description": "run"}
        if op.tool == "BashOutput":
            if op.name == "TaskOutput":
                return "TaskOutput", {"task_id": op.command, "block": True, "timeout": 30000}
            return "BashOutput", {"bash_id": op.command}
        if op.tool == "Edit":
            return "Edit", {"file_path": self._abs(op.path), "old_string": "a", "new_string": "b"}
        if op.tool == "Write":
            return "Write", {"file_path": self._abs(op.path), "content": (op.content or b"").decode()}
        inp: dict[str, Any] = {"file_path": self._abs(op.path)}
        if op.offset is not None:
            inp["offset"] = op.offset
        if op.limit is not None:
            inp["limit"] = op.limit
        return op.tool, inp

    def _claude_extra(self, ts: float, agent: str | None, transcript: bool) -> dict[str, Any]:
        if not transcript:
            return {}
        extra: dict[str, Any] = {
            "cwd": self.tl.workdir,
            "sessionId": "s-" + self.tl.case_id,
            "isSidechain": agent is not None,
            "version": "2.1.39",
            "timestamp": format_ts(ts),
        }
        if agent is not None:
            extra["agentId"] = agent
        return extra

    def _claude_message(self, mid: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        usage = {"input_tokens": 12, "output_tokens": 40, "cache_read_input_tokens": 9000}
        return {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "usage": usage,
        }

    def _claude_task(self, op: _Op, transcript: bool) -> list[Line]:
        """The main thread's Task call that starts subagent `op.agent` (answered after its last call)."""
        agent = op.agent or ""
        self.n += 1
        tid = f"{self._ids}{self.n:05d}"
        self.agent_calls[agent] = tid
        inp = {
            "description": f"subagent {agent}",
            "prompt": "Investigate and report back.",
            "subagent_type": "general-purpose",
        }
        call: dict[str, Any] = {
            "type": "assistant",
            "message": self._claude_message(
                f"msg_{self.n:05d}", [{"type": "tool_use", "id": tid, "name": "Task", "input": inp}]
            ),
            "parent_tool_use_id": None,
            **self._claude_extra(op.ts, None, transcript),
        }
        if transcript:
            call["uuid"] = f"a{self.n}"
        return [self._env(op.ts, call)]

    def _claude_task_done(self, op: _Op, transcript: bool) -> Line:
        agent = op.agent or ""
        done = op.ts + 3
        result = {
            "type": "tool_result",
            "tool_use_id": self.agent_calls[agent],
            "content": [{"type": "text", "text": f"Subagent {agent} finished its task."}],
        }
        user: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [result]}}
        if transcript:
            user.update(self._claude_extra(done, None, transcript), uuid=f"t{agent}")
        else:
            user["parent_tool_use_id"] = None
        return self._env(done, user)

    def _claude(self, op: _Op, transcript: bool) -> list[Line]:
        lines: list[Line] = []
        agent = op.agent
        if agent is not None and agent not in self.agent_calls:
            self.n -= 1  # the Task call takes this number; the op itself the next
            lines.extend(self._claude_task(op, transcript))
            self.n += 1
        name, inp = self._claude_input(op)
        tid, mid = f"{self._ids}{self.n:05d}", f"msg_{self.n:05d}"
        extra = self._claude_extra(op.ts, agent, transcript)
        parent = self.agent_calls.get(agent) if agent is not None and not transcript else None
        if self.n % 4 == 0:  # a thinking/text block on its own line, sharing the message id and usage
            lines.append(
                self._env(
                    op.ts,
                    {
                        "type": "assistant",
                        "message": self._claude_message(mid, [{"type": "text", "text": "Let me check that."}]),
                        **({"parent_tool_use_id": parent} if parent else {}),
                        **extra,
                        **({"uuid": f"a{self.n}t"} if transcript else {}),
                    },
                )
            )
        call = {
            "type": "assistant",
            "message": self._claude_message(mid, [{"type": "tool_use", "id": tid, "name": name, "input": inp}]),
            "parent_tool_use_id": parent,
            **extra,
        }
        if transcript:
            call["uuid"] = f"a{self.n}"
        lines.append(self._env(op.ts, call))
        text = self._text(op, numbered=True)
        if op.tool == "Bash" and op.is_error and self._rich(op):
            text = f"Exit code {self._exit_code(op)}\n{text}"
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": text}
        if op.is_error:
            result["is_error"] = True
        done = op.ts + 2
        user: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [result]}}
        if parent:
            user["parent_tool_use_id"] = parent
        if transcript:
            user.update(
                self._claude_extra(done, agent, transcript),
                uuid=f"r{self.n}",
                toolUseResult={"stdout": text, "stderr": "", "interrupted": False},
            )
        else:
            user["tool_use_result"] = {"stdout": text, "stderr": ""}
        lines.append(self._env(done, user))
        if agent is not None and self.last_of_agent.get(agent) is op:
            lines.append(self._claude_task_done(op, transcript))
        return lines

    def _claude_stream_json(self, op: _Op) -> list[Line]:
        return self._claude(op, transcript=False)

    def _claude_transcript(self, op: _Op) -> list[Line]:
        return self._claude(op, transcript=True)

    def _codex_json(self, op: _Op) -> list[Line]:
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
            first = op.offset or 1
            last = first + (op.limit or 200) - 1
            command = f"sed -n '{first},{last}p' {op.path}"
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
        completed = dict(
            started,
            aggregated_output=self._text(op, numbered=False),
            exit_code=self._exit_code(op),
            status="failed" if op.is_error and self._rich(op) else "completed",
        )
        return [
            self._env(op.ts, {"type": "item.started", "item": started}),
            self._env(op.ts + 2, {"type": "item.completed", "item": completed}),
        ]

    def _generic(self, op: _Op) -> list[Line]:
        data: dict[str, Any] = {"tool": op.tool}
        if op.command is not None and (op.tool != "BashOutput" or self.tl.realistic):
            data["command"] = op.command  # a BashOutput's: the task id
        if op.path is not None:
            data["path"] = op.path
        if op.is_error:
            data["is_error"] = True
        if self._rich(op):
            if op.tool == "Bash":
                data["exit_code"] = self._exit_code(op)
            data["output"] = self._text(op, numbered=False)
        return [self._env(op.ts, data)]
