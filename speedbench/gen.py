"""Generated inputs for the speed benchmarks (speedbench/goals.py).

A healthy Claude Code agent's `--output-format stream-json` log, written as the
supervisor writes events.jsonl (one `{"ts": ISO, "data": <native line>}` envelope
a line), the clone snapshots of workspace.jsonl (one a 30 s of run time, `git status
--porcelain=v1 -z` text and blob ids of a rolling dirty set), case folders and live run
folders as `launch` leaves them (state.json through orchestrator.record.state_file).

Healthy means: varied reads, edits, new files and test runs over 500 source files, never
the same script or file often enough in a window to fill a signal, so nothing pages.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from orchestrator.buckets import BucketsFile
from orchestrator.infra.proc import ProcRef
from orchestrator.record import case_file, state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from spiral.timestamps import format_ts

SESSION = "9f1c2e7a-5b1d-4f7e-8a43-2c9d0b6e1f55"
MODEL = "claude-sonnet-4-5-20250929"
BUCKET = "big"
SNAPSHOT_EVERY_S = 30.0
DIRTY_MAX = 30  # files dirty at once; older ones drop out (as if committed)

PKGS = "core api cli db io net auth cache jobs web util model parse render search store sync queue report admin".split()
NAMES = (
    "base client config errors handlers helpers loader main manager models parser registry routes schema "
    "service session state tasks types views worker events filters format hooks"
).split()
SRC = [f"src/{p}/{n}.py" for p in PKGS for n in NAMES]  # 500 source files
TESTS = [f"tests/test_{p}_{n}.py" for p in PKGS for n in NAMES[:8]]  # 160 test files
WORDS = "value config result items request payload cursor index buffer record token schema batch offset handle".split()


def long_run_settings(minutes: float) -> dict[str, Any]:
    """buckets.yaml with the `big` bucket stretched past `minutes`, as a ticket's `overrides:` would.

    A history of 1M calls spans weeks of run time; with the stock big bucket (stuck at 150 min)
    liveness would stop it at once. Frozen into state.json like launch freezes any overrides.
    """
    raw: dict[str, Any] = copy.deepcopy(BucketsFile().raw)
    expected = max(90.0, round(minutes * 2))
    raw["buckets"][BUCKET] = {"expected_min": expected, "soft_start_min": expected * 1.5, "stuck_min": expected * 1.7}
    return raw


# ---- tool outputs -----------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """Tool output sizes: (share, low, high) bands in bytes, and the edit / write text lengths."""

    bands: tuple[tuple[float, int, int], ...]
    edit: tuple[int, int]
    write: tuple[int, int]
    # every shell command a new text (a count appended), as in a real session where commands vary: the
    # shell-analysis memo then misses as it does there (with ~10 templates it nearly always hits)
    fresh: bool = False


# the real density of a long Claude session: ~790 bytes a line, outputs mostly 100-900 bytes
REAL = Sizes(bands=((0.82, 100, 650), (0.16, 650, 1600), (0.02, 1600, 6000)), edit=(60, 300), write=(300, 2000))
# small outputs: a 1M-call history that stays a manageable file
SMALL = Sizes(bands=((1.0, 40, 200),), edit=(30, 80), write=(60, 200))
# REAL with fresh commands (issue 37: replay against the orjson floor on a fresh-content log)
FRESH = Sizes(REAL.bands, REAL.edit, REAL.write, fresh=True)


def code_line(rng: random.Random, n: int, workdir: str) -> str:
    w, w2 = rng.choice(WORDS), rng.choice(WORDS)
    templates = [
        f"{n:>6}\t    def {w}_{n}(self, {w2}: str) -> dict[str, int]:",
        f'{n:>6}\t        return {{"{w}": len({w2}), "ok": True}}  # see {rng.choice(SRC)}',
        f"{rng.choice(TESTS)}::test_{w}_{w2} PASSED                           [{rng.randrange(100):>3}%]",
        f'{n:>6}\t        raise ValueError(f"bad {w}: {{{w2}!r}}")',
        f"E       AssertionError: assert {{'{w}': {n}}} == {{'{w}': {n + 1}}}",
        f'  File "{workdir}/{rng.choice(SRC)}", line {n}, in {w}_{w2}',
        f"{n:>6}\t\tif not {w}:\t# tab\\indented \u2014 r\u00e9sum\u00e9 \u2713",
        f"{rng.choice(SRC)}:{n}:{rng.randrange(80)}: E501 line too long ({80 + n % 40} > 79 characters)",
    ]
    return rng.choice(templates)


def text_pool(rng: random.Random, sizes: Sizes, workdir: str, count: int = 400) -> list[str]:
    pool = []
    for _ in range(count):
        r, size = rng.random(), sizes.bands[-1][2]
        for share, lo, hi in sizes.bands:
            if r < share:
                size = rng.randrange(lo, hi)
                break
            r -= share
        lines: list[str] = []
        total = 0
        while total < size:
            line = code_line(rng, len(lines) + 1, workdir)
            lines.append(line)
            total += len(line.encode()) + 1
        pool.append("\n".join(lines)[:size])
    return pool


# ---- the agent ----------------------------------------------------------------------------


class HealthyAgent:
    """Varied, productive tool calls: files rotate, tests rotate, new files keep appearing.

    Never the same script 8 times in 20 calls, no file 6 times in 20, no debris names,
    no sleep/polling. Keeps the clone's dirty set for the workspace snapshots.
    """

    def __init__(self, rng: random.Random, sizes: Sizes, workdir: str) -> None:
        self.rng, self.sizes, self.workdir = rng, sizes, workdir
        self.texts = text_pool(rng, sizes, workdir)
        self.file_i = self.test_i = self.new_i = self.since_new = self.bash_n = 0
        self.last_read = SRC[0]
        self.last_read_edits = 0
        self.dirty: OrderedDict[str, tuple[str, str]] = OrderedDict()  # path -> (status, blob id)
        self.edits = 0

    def next_file(self) -> str:
        self.file_i += 1 + self.rng.randrange(3)
        return SRC[self.file_i % len(SRC)]

    def next_test(self) -> str:
        self.test_i += 1 + self.rng.randrange(2)
        return TESTS[self.test_i % len(TESTS)]

    def touch(self, rel: str, status: str) -> None:
        self.edits += 1
        blob = hashlib.sha1(f"{rel}:{self.edits}".encode()).hexdigest()
        self.dirty.pop(rel, None)
        self.dirty[rel] = (status, blob)
        if len(self.dirty) > DIRTY_MAX:
            self.dirty.popitem(last=False)

    def text(self, bounds: tuple[int, int]) -> str:
        return self.rng.choice(self.texts)[: self.rng.randrange(*bounds)]

    def call(self) -> tuple[str, dict[str, Any]]:
        rng, wd = self.rng, self.workdir
        self.since_new += 1
        r = 0.5 if self.since_new > 25 else rng.random()  # a new file at least every 26 calls
        if r < 0.28:
            self.last_read, self.last_read_edits = self.next_file(), 0
            return "Read", {"file_path": f"{wd}/{self.last_read}"}
        if r < 0.46:
            fresh = self.last_read_edits < 2 and rng.random() < 0.6
            path = self.last_read if fresh else self.next_file()
            self.last_read_edits += fresh
            self.touch(path, " M")
            old = self.text(self.sizes.edit)
            new = old.replace("value", "item")
            return "Edit", {"file_path": f"{wd}/{path}", "old_string": old, "new_string": new, "replace_all": False}
        if r < 0.54:
            self.new_i += 1
            self.since_new = 0
            path = f"src/{PKGS[self.new_i % len(PKGS)]}/feature_{self.new_i}.py"
            self.touch(path, "??")
            return "Write", {"file_path": f"{wd}/{path}", "content": self.text(self.sizes.write)}
        if r < 0.60:
            return rng.choice(["Grep", "Glob"]), {"pattern": f"def {rng.choice(WORDS)}_", "path": f"{wd}/src"}
        command = self.bash()
        if self.sizes.fresh:
            self.bash_n += 1
            command += f" # {self.bash_n}"
        return "Bash", {"command": command, "description": "Run a check"}

    def bash(self) -> str:
        rng = self.rng
        k = rng.randrange(10)
        if k < 4:
            return f"cd {self.workdir} && python -m pytest {self.next_test()} -q 2>&1 | tail -30"
        if k == 4:
            return f"pytest {self.next_test()}::test_{rng.choice(WORDS)} -x -q"
        if k == 5:
            return rng.choice(["git status", "git diff --stat", "git log --oneline -5"])
        if k == 6:
            return f"ruff check {self.next_file()} && mypy {self.next_file()}"
        if k == 7:
            return f"rg -n '{rng.choice(WORDS)}_{rng.randrange(500)}' src/ | head -20"
        if k == 8:
            return f"python scripts/check_{self.test_i % 97}.py --fast"
        return f"ls -la src/{rng.choice(PKGS)}"

    def snapshot(self) -> tuple[str, dict[str, str]]:
        porcelain = "".join(f"{st} {p}\0" for p, (st, _) in self.dirty.items())
        return porcelain, {p: blob for p, (_, blob) in self.dirty.items()}


# ---- Claude stream-json lines ----------------------------------------------------------------


def _assistant(msg_id: str, block: dict[str, Any]) -> dict[str, Any]:
    usage = {
        "input_tokens": 4,
        "cache_creation_input_tokens": 1832,
        "cache_read_input_tokens": 48211,
        "output_tokens": 97,
        "service_tier": "standard",
    }
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [block],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return {"type": "assistant", "message": message, "parent_tool_use_id": None, "session_id": SESSION, "uuid": msg_id}


def _result(tool_id: str, text: str, is_error: bool, n: int) -> dict[str, Any]:
    block = {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": is_error}
    return {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"r-{n}",
    }


def envelope(ts: float, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"ts": format_ts(ts), "data": data}) + b"\n"


INIT = {
    "type": "system",
    "subtype": "init",
    "session_id": SESSION,
    "model": MODEL,
    "tools": ["Bash", "Read", "Edit", "Write", "Grep", "Glob"],
    "permissionMode": "bypassPermissions",
}


class ClaudeSession:
    """One agent's stream: `calls(n, until)` gives the lines of its next n tool calls, ending at `until`."""

    def __init__(self, workdir: str, sizes: Sizes, seed: int) -> None:
        self.rng = random.Random(seed)
        self.agent = HealthyAgent(self.rng, sizes, workdir)
        self.workdir = workdir
        self.n = 0

    def init_line(self, ts: float) -> bytes:
        return envelope(ts, {**INIT, "cwd": self.workdir})

    def one_call(self, ts: float) -> list[bytes]:
        """A call at `ts`: sometimes a text line first, then the tool_use and its result a moment later."""
        rng, out = self.rng, []
        msg_id = f"msg_{self.n:08d}"
        if rng.random() < 0.3:
            out.append(envelope(ts, _assistant(msg_id, {"type": "text", "text": self.agent.text((60, 400))})))
        name, inp = self.agent.call()
        tool_id = f"toolu_{self.n:08d}_{rng.getrandbits(40):010x}"
        out.append(envelope(ts, _assistant(msg_id, {"type": "tool_use", "id": tool_id, "name": name, "input": inp})))
        self.n += 1
        text = f"[{self.n}]\n" + rng.choice(self.agent.texts)
        out.append(envelope(ts + 0.5, _result(tool_id, text, rng.random() < 0.05, self.n)))
        return out

    def snapshot_line(self, ts: float) -> bytes:
        porcelain, hashes = self.agent.snapshot()
        return orjson.dumps({"ts": format_ts(ts), "porcelain": porcelain, "hashes": hashes}) + b"\n"


@dataclass
class LogInfo:
    events: Path
    bytes: int
    lines: int
    tool_calls: int
    snapshots: int
    started_at: float
    ended_at: float


def _times(start: float, spacing: float, rng: random.Random) -> Iterator[float]:
    ts = start
    while True:
        yield ts
        ts += rng.uniform(0.2, 1.8) * spacing


def write_log(
    folder: Path,
    session: ClaudeSession,
    *,
    start: float,
    spacing: float,
    calls: int | None = None,
    target_bytes: int | None = None,
    workspace: bool = True,
) -> LogInfo:
    """events.jsonl (and workspace.jsonl) in `folder`: `calls` calls, or as many as fill `target_bytes`."""
    lines = snaps = 0
    next_snap = start + SNAPSHOT_EVERY_S
    times = _times(start, spacing, random.Random(session.rng.random()))
    ts = start
    with (
        (folder / "events.jsonl").open("wb", buffering=1 << 20) as ev,
        (folder / "workspace.jsonl").open("wb", buffering=1 << 20) as ws,
    ):
        ev.write(session.init_line(start))
        lines += 1
        while (calls is not None and session.n < calls) or (target_bytes is not None and ev.tell() < target_bytes):
            ts = next(times)
            while workspace and next_snap <= ts:
                ws.write(session.snapshot_line(next_snap))
                snaps += 1
                next_snap += SNAPSHOT_EVERY_S
            chunk = session.one_call(ts)
            ev.write(b"".join(chunk))
            lines += len(chunk)
        size = ev.tell()
    return LogInfo(folder / "events.jsonl", size, lines, session.n, snaps, start, ts + 1.0)


def append_calls(rd: RunDir, session: ClaudeSession, n: int, start: float, end: float, snapshot: bool) -> int:
    """What `n` calls between start and end add to a live run's files (O_APPEND, like the supervisor)."""
    step = (end - start) / max(1, n)
    chunk = [line for i in range(n) for line in session.one_call(start + i * step)]
    with rd.events.open("ab") as fh:
        fh.write(b"".join(chunk))
    if snapshot:
        with rd.workspace.open("ab") as fh:
            fh.write(session.snapshot_line(end))
    return len(chunk)


# ---- folders ---------------------------------------------------------------------------------


def write_case_yaml(folder: Path, case_id: str, info: LogInfo, workdir: str, settings: dict[str, Any]) -> None:
    """A replayable case for the log in `folder` (the shape of corpus/*/case.yaml)."""
    over = {"buckets": {BUCKET: settings["buckets"][BUCKET]}}
    text = (
        f"id: {case_id}\ndescription: generated by speedbench/gen.py\nformat: claude-stream-json\n"
        f"bucket: {BUCKET}\nstarted_at: '{format_ts(info.started_at)}'\nended_at: '{format_ts(info.ended_at + 30)}'\n"
        f"outputs: []\nworkdir: {workdir}\noverrides: {orjson.dumps(over).decode()}\nexpect:\n  spiral: false\n"
    )
    (folder / "case.yaml").write_text(text, encoding="utf-8")


def tracked_files() -> str:
    return "".join(p + "\n" for p in [*SRC, *TESTS])


@dataclass(frozen=True)
class Owner:
    """The live processes a live run points at: its supervisor and its agent (ours: `sleep` children)."""

    supervisor: ProcRef
    agent: ProcRef


def new_run_dir(home: Path, run_id: str) -> RunDir:
    rd = RunDir(home / "runs" / run_id)
    rd.clone.mkdir(parents=True)
    (home / "claude-config").mkdir(exist_ok=True)
    rd.tracked.write_text(tracked_files(), encoding="utf-8")
    rd.ticket.write_text(f"---\nid: {run_id}\nrepo: /dev/null\nbucket: {BUCKET}\n---\nBenchmark run.\n")
    return rd


def write_live_record(rd: RunDir, started_at: float, owner: Owner, settings: dict[str, Any]) -> RunRecord:
    """state.json of a running run as launch + its supervisor leave it: settings frozen, processes recorded."""
    home = rd.path.parent.parent
    started = format_ts(started_at)
    record = RunRecord(
        run_id=rd.run_id,
        ticket_id=rd.run_id,
        ticket_path=str(rd.ticket),
        bucket=BUCKET,
        agent="claude",
        format="claude-stream-json",
        argv=["claude", "-p", "--output-format", "stream-json", "--verbose", "--", "Benchmark run."],
        agent_homes={"CLAUDE_CONFIG_DIR": str(home / "claude-config"), "CODEX_HOME": str(home / "codex")},
        model=MODEL,
        repo="/dev/null",
        branch=f"ticket/{rd.run_id}",
        settings=settings,
        state="running",
        created_at=started,
        started_at=started,
        spawned_at=started,
        supervisor=owner.supervisor,
        agent_pid=owner.agent,
    )
    state_file.write(rd, record)
    case_file.write_run_case(rd, record)
    return record
