"""The agents' own records of a run, found and read as they grow (the I/O half of spend).

Claude Code keeps a session transcript at
`CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl` (and its subagents' at
`.../<session id>/subagents/**/agent-*.jsonl`), the folder named as the CLI names it:
every character of the cwd but [A-Za-z0-9] becomes '-', and a name over 200
characters is cut there and given '-' and a hash of the cwd. The stream's init line
gives the session id, the cwd and (memory path) the folder itself.

Codex keeps `CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`; the
thread id (a UUIDv7, so its date is known) comes from exec --json's `thread.started`.

A missing file is no data yet; a torn last line waits for its newline; a file that
shrank is read again from its start (the counter keeps the largest figure per
message or response, so a line read twice counts once).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from orchestrator.infra.lines import whole_lines
from orchestrator.ledger.prices import Rates
from spiral.spend import ClaudeSession, Spend, SpendCounter

_MAX_NAME = 200


def _js_hash(text: str) -> int:
    """Claude Code's string hash: 31-based over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def claude_project_name(cwd: str) -> str:
    """The folder under CLAUDE_CONFIG_DIR/projects/ that holds a cwd's sessions."""
    units = cwd.encode("utf-16-le", "surrogatepass")
    name = "".join(
        chr(u) if chr(u).isascii() and chr(u).isalnum() else "-"
        for u in (int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2))
    )
    if len(name) <= _MAX_NAME:
        return name
    return f"{name[:_MAX_NAME]}-{_base36(abs(_js_hash(cwd)))}"


def claude_transcript(config_dir: Path, session_id: str, session: ClaudeSession) -> Path | None:
    """The session's transcript, if it exists yet."""
    projects = config_dir / "projects"
    named = Path(session.project_dir) if session.project_dir else None
    folders = [named] if named is not None and os.path.realpath(named.parent) == os.path.realpath(projects) else []
    if session.cwd:
        folders.append(projects / claude_project_name(session.cwd))
        real = os.path.realpath(session.cwd)
        if real != session.cwd:
            folders.append(projects / claude_project_name(real))
    for folder in folders:
        if (folder / f"{session_id}.jsonl").is_file():
            return folder / f"{session_id}.jsonl"
    # a cwd whose folder we could not name: the session id is unique across projects
    return next(iter(sorted(projects.glob(f"*/{session_id}.jsonl"))), None) if projects.is_dir() else None


def claude_subagents(transcript: Path) -> list[Path]:
    """The transcripts of the session's subagents (they may appear at any time)."""
    return sorted((transcript.parent / transcript.stem / "subagents").rglob("*.jsonl"))


def _uuid7_time(thread_id: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(thread_id.replace("-", "")[:12], 16) / 1000)
    except (ValueError, OverflowError, OSError):
        return None


def codex_rollouts(codex_home: Path, thread_id: str) -> list[Path]:
    """The thread's rollout file(s): first in the folders of the days around its start, else anywhere."""
    sessions = codex_home / "sessions"
    pattern = f"rollout-*-{thread_id}.jsonl"
    when = _uuid7_time(thread_id)
    if when is not None:
        for day in (when, when - timedelta(days=1), when + timedelta(days=1)):
            found = sorted((sessions / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}").glob(pattern))
            if found:
                return found
    return sorted(sessions.glob(f"*/*/*/{pattern}")) if sessions.is_dir() else []


def _lines(path: Path, offset: int) -> tuple[list[Any], int]:
    """(parsed JSON lines after `offset`, the new offset); a shrunk file is read from its start."""
    try:
        if path.stat().st_size < offset:
            offset = 0
    except OSError:
        return [], offset
    out = []
    for line, end in whole_lines(path, offset):
        offset = end
        if b'"usage"' in line or b"token_" in line or b"turn_context" in line:
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return out, offset


@dataclass
class RunSpend:
    """A run's spend state between looks: the counter of its log, what of the agent's own files was read."""

    counter: SpendCounter
    offsets: dict[str, int] = field(default_factory=dict)  # file -> bytes read
    found: dict[str, list[str]] = field(default_factory=dict)  # session / thread id -> its files, once found
    memo: dict[str, Rates | None] = field(default_factory=dict)  # prices looked up for this run

    @classmethod
    def of(cls, fmt: str, model: str | None = None) -> RunSpend:
        return cls(SpendCounter(fmt, model))

    def feed(self, data: Any) -> None:
        self.counter.feed(data)

    @property
    def spend(self) -> Spend:
        return self.counter.spend

    def read_agent_files(self, homes: dict[str, str]) -> bool:
        """Read what the agent's own files gained since the last look; True when anything was read."""
        before = dict(self.offsets)
        c = self.counter
        if c.fmt.startswith("claude") and homes.get("CLAUDE_CONFIG_DIR"):
            config = Path(homes["CLAUDE_CONFIG_DIR"])
            for sid, session in list(c.sessions.items()):
                main = (self._known(sid) or claude_transcript(config, sid, session)) if sid else None
                if main is None:
                    continue
                self.found[sid] = [str(main)]
                paths = [main, *claude_subagents(main)]
                if self._rewritten(paths):
                    session.transcript.restart()
                for path in paths:
                    for obj in self._read(path):
                        c.feed_transcript(sid, obj)
        if c.fmt == "codex-json" and homes.get("CODEX_HOME"):
            for tid in c.threads:
                paths = [Path(p) for p in self.found.get(tid, [])] or codex_rollouts(Path(homes["CODEX_HOME"]), tid)
                self.found[tid] = [str(p) for p in paths]
                if self._rewritten(paths) and tid in c.rollouts:
                    c.rollouts[tid].responses.restart()
                for path in paths:
                    for obj in self._read(path):
                        c.feed_rollout(tid, obj)
        return self.offsets != before

    def _rewritten(self, paths: list[Path]) -> bool:
        """Whether one of a session's files shrank (it was rewritten): then all are read again from their
        start, and the caller restarts the tally they feed, so it counts anew, not on top (message_tally.py)."""
        if not any(self._shrunk(p) for p in paths):
            return False
        for p in paths:
            self.offsets[str(p)] = 0
        return True

    def _shrunk(self, path: Path) -> bool:
        try:
            return path.stat().st_size < self.offsets.get(str(path), 0)
        except OSError:
            return False

    def _known(self, key: str) -> Path | None:
        paths = self.found.get(key)
        return Path(paths[0]) if paths else None

    def _read(self, path: Path) -> list[Any]:
        lines, self.offsets[str(path)] = _lines(path, self.offsets.get(str(path), 0))
        return lines
