"""Detector benchmarks: tick cost vs history, full-log replay cost, eval throughput.

Run:  .venv/bin/python speedbench/detector.py [--quick] [--only tick|log|eval] [--profile tick|log|eval]

Prints, each as a ratio or rate measured in this run, with a PASS/FAIL per target:
  1. tick cost (5 new calls + one evaluate) after 1M absorbed calls vs after 1k   (<= 1.5)
     same tick workload on both sides, interleaved in slices, median of paired repeats
  2. full replay of a ~150 MB Claude stream-json log vs orjson-parsing it alone   (<= 2x)
     and the peak RSS of that replay                                               (< 200 MB)
     each run in its own child process (this script with --child), median of paired repeats
  3. `orchestrator.corpus.replay.evaluate` throughput over small generated cases         (>= 1000/s)
     each repeat starts with an empty shell-analysis cache, like a fresh CLI run

--quick: 100k calls, a 15 MB log and 100 cases (a smoke run of a few seconds; noisier ratios).

Generated data goes to a temporary folder under speedbench/out/ (gitignored) and is removed.
Exit status: 0 when every target passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import evaluate, replay_case
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.shellcmd import analyse
from spiral.timestamps import format_ts

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
T0 = 1_779_267_600.0  # 2026-05-20T09:00:00Z
WORKDIR = "/home/dev/runs/r42/clone"

TICK_TARGET = 1.5
LOG_TARGET = 2.0
RSS_TARGET_MB = 200.0
EVAL_TARGET = 1000.0


@dataclass(frozen=True)
class Plan:
    small_events: int
    big_events: int
    ticks: int
    tick_repeats: int
    log_mb: float
    log_repeats: int
    cases: int
    eval_repeats: int


FULL = Plan(
    small_events=1_000,
    big_events=1_000_000,
    ticks=3_000,
    tick_repeats=7,
    log_mb=150.0,
    log_repeats=5,
    cases=300,
    eval_repeats=7,
)
QUICK = Plan(
    small_events=1_000,
    big_events=100_000,
    ticks=1_500,
    tick_repeats=5,
    log_mb=15.0,
    log_repeats=5,
    cases=100,
    eval_repeats=5,
)


@dataclass
class Outcome:
    label: str
    value: str
    target: str
    passed: bool


# ---- shared vocabulary for synthetic work -----------------------------------------

PKGS = [
    "core",
    "api",
    "cli",
    "db",
    "io",
    "net",
    "auth",
    "cache",
    "jobs",
    "web",
    "util",
    "model",
    "parse",
    "render",
    "search",
    "store",
    "sync",
    "queue",
    "report",
    "admin",
]
NAMES = [
    "base",
    "client",
    "config",
    "errors",
    "handlers",
    "helpers",
    "loader",
    "main",
    "manager",
    "models",
    "parser",
    "registry",
    "routes",
    "schema",
    "service",
    "session",
    "state",
    "tasks",
    "types",
    "views",
    "worker",
    "events",
    "filters",
    "format",
    "hooks",
]
SRC = [f"src/{p}/{n}.py" for p in PKGS for n in NAMES]  # 500 source files
TESTS = [f"tests/test_{p}_{n}.py" for p in PKGS for n in NAMES[:8]]  # 160 test files
WORDS = [
    "value",
    "config",
    "result",
    "items",
    "request",
    "payload",
    "cursor",
    "index",
    "buffer",
    "record",
    "token",
    "schema",
    "batch",
    "offset",
    "handle",
    "state",
]


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def fmt_list(xs: list[float], spec: str = ".2f") -> str:
    return ", ".join(format(x, spec) for x in xs)


def verdict_word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# ==== 1. tick cost vs history length ==================================================

SNAP_EVERY = 10  # calls between workspace snapshots (calls ~3 s apart, snapshots ~30 s)
CALL_SPACING_S = 3.0


def synthetic_call(rng: random.Random, i: int, ts: float, tag: str) -> ToolCall:
    """One tool call from a realistic agent mix (tests, throwaway scripts, reads, edits, polls)."""
    r = rng.random()
    if r < 0.10:
        return ToolCall(ts, "Bash", command=f"python tmp_x{rng.randrange(40)}.py")
    if r < 0.22:
        return ToolCall(ts, "Bash", command=f"pytest {rng.choice(TESTS)} -q")
    if r < 0.26:
        return ToolCall(ts, "Bash", command=f"python -m pytest {rng.choice(TESTS)}::test_{rng.choice(WORDS)} -x")
    if r < 0.30:
        return ToolCall(
            ts,
            "Bash",
            command=rng.choice(
                [
                    "git status",
                    "git diff --stat",
                    f"git diff {rng.choice(SRC)}",
                    f"ls -la src/{rng.choice(PKGS)}",
                    f"cat {rng.choice(SRC)}",
                    f"head -n 40 {rng.choice(SRC)}",
                ]
            ),
        )
    if r < 0.32:
        return ToolCall(ts, "Bash", command=f"grep -rn 'sym_{tag}_{i}' src/ | head -20")  # never repeats
    if r < 0.35:
        return ToolCall(ts, "Bash", command="sleep 5")
    if r < 0.36:
        return ToolCall(ts, "Bash", command=f"sleep 5 && tail -n 20 /tmp/claude/tasks/b{rng.randrange(9)}.output")
    if r < 0.60:
        return ToolCall(ts, "Read", path=rng.choice(SRC))
    if r < 0.83:
        return ToolCall(ts, "Edit", path=rng.choice(SRC))
    if r < 0.88:
        return ToolCall(ts, "Write", path=f"src/gen/mod_{tag}_{i}.py")  # a new file: touched grows
    if r < 0.95:
        return ToolCall(ts, "Write", path=rng.choice(SRC))
    return ToolCall(ts, "Write", path=rng.choice(["tmp_x", "debug_out", "scratch_"]) + f"{rng.randrange(20)}.py")


def snapshot_pool(rng: random.Random, size: int = 64) -> list[tuple[dict[str, str], dict[str, str]]]:
    """Pre-built (status, hashes) pairs: a drifting dirty set of 20-60 files, some debris."""
    pool = []
    for k in range(size):
        paths = rng.sample(SRC, rng.randrange(20, 60))
        status = {p: rng.choice([" M", " M", "M ", "??"]) for p in paths}
        if k % 3 == 0:
            status[f"tmp_x{k % 7}.py"] = "??"
        hashes = {p: f"{zlib.crc32(f'{p}:{k}'.encode()):08x}" for p in status}
        pool.append((status, hashes))
    return pool


FINAL_SNAPSHOT = (
    {p: " M" for p in SRC[:30]} | {"tmp_x1.py": "??"},
    {p: f"{zlib.crc32(p.encode()):08x}" for p in SRC[:30]} | {"tmp_x1.py": "0"},
)


def build_detector(settings: Any, n: int, end_ts: float, seed: int, tag: str) -> Detector:
    """A detector that has absorbed `n` calls (and a snapshot every SNAP_EVERY), ending at end_ts."""
    rng = random.Random(seed)
    start = end_ts - n * CALL_SPACING_S
    det = Detector(settings, bucket="medium", started_at=start, workdir=WORKDIR)
    snaps = snapshot_pool(rng)
    for i in range(n):
        ts = start + i * CALL_SPACING_S
        det.add_call(synthetic_call(rng, i, ts, tag))
        if i % SNAP_EVERY == SNAP_EVERY - 1:
            status, hashes = snaps[(i // SNAP_EVERY) % len(snaps)]
            det.add_snapshot(Snapshot(ts, status, hashes))
    det.add_snapshot(Snapshot(end_ts, *FINAL_SNAPSHOT))  # both sides end in the same workspace
    return det


Tick = tuple[list[ToolCall], float]


def tick_stream(start_ts: float, ticks: int, per_tick: int, seed: int, tag: str) -> list[Tick]:
    """Identical tick workloads for both detectors: `per_tick` calls then an evaluate, 30 s apart."""
    rng = random.Random(seed)
    out: list[Tick] = []
    i = 0
    for t in range(ticks):
        now = start_ts + (t + 1) * 30.0
        calls = []
        for _ in range(per_tick):
            calls.append(synthetic_call(rng, i, now - 30.0 + (len(calls) + 1) * 5.0, tag))
            i += 1
        out.append((calls, now))
    return out


def warm_shell_cache(stream: list[Tick]) -> None:
    """Both sides start with the tick commands in the shell-analysis LRU cache."""
    for calls, _ in stream:
        for c in calls:
            if c.command:
                analyse(c.command)


def run_ticks(det: Detector, ticks: list[Tick]) -> float:
    """Seconds to run these ticks: add the tick's calls, then one evaluate."""
    t0 = time.perf_counter()
    for calls, now in ticks:
        det.add_calls(calls)
        det.evaluate(now)
    return time.perf_counter() - t0


CHUNK = 100  # ticks per timed slice; the two sides alternate slices so drifts hit both alike


def time_pair(
    small: Detector, big: Detector, start: float, ticks: int, warmup: int, seed: int, big_first: bool
) -> tuple[float, float]:
    """µs/tick of both detectors on the same tick workload (same calls, same timestamps)."""
    sides = {
        name: (det, tick_stream(start, ticks + warmup, 5, seed=seed, tag=f"s{seed}"))
        for name, det in (("small", small), ("big", big))
    }  # fresh call objects per side
    for det, stream in sides.values():
        warm_shell_cache(stream)
        run_ticks(det, stream[:warmup])
    order = ["big", "small"] if big_first else ["small", "big"]
    spent = {"small": 0.0, "big": 0.0}
    gc.collect()
    for i in range(warmup, warmup + ticks, CHUNK):
        for name in order:
            det, stream = sides[name]
            spent[name] += run_ticks(det, stream[i : i + CHUNK])
        order.reverse()
    return spent["small"] / ticks * 1e6, spent["big"] / ticks * 1e6


def bench_tick(plan: Plan, profile: bool) -> list[Outcome]:
    print(
        f"\n== 1. tick cost vs history  (tick = 5 new calls + 1 evaluate, "
        f"{plan.ticks} ticks x {plan.tick_repeats} repeats, median) =="
    )
    settings = BucketsFile().settings
    warmup = 100
    span = (plan.ticks + warmup + 10) * 30.0
    t0 = time.perf_counter()
    big = build_detector(settings, plan.big_events, T0, seed=1, tag="big")
    build_s = time.perf_counter() - t0
    print(
        f"  absorbed {plan.big_events:,} calls + {plan.big_events // SNAP_EVERY:,} snapshots in "
        f"{build_s:.1f} s ({plan.big_events / build_s:,.0f} calls/s); touched set: {len(big.touched):,} files"
    )
    small_us: list[float] = []
    big_us: list[float] = []
    for r in range(plan.tick_repeats):
        start = T0 + r * span
        small = build_detector(settings, plan.small_events, start, seed=2 + r, tag=f"small{r}")
        s_us, b_us = time_pair(small, big, start, plan.ticks, warmup, seed=100 + r, big_first=r % 2 == 1)
        small_us.append(s_us)
        big_us.append(b_us)
    ratios = [b / s for s, b in zip(small_us, big_us, strict=False)]
    ratio = median(ratios)
    s, b = median(small_us), median(big_us)
    print(f"  after {plan.small_events:>9,} calls: {s:8.2f} µs/tick   (repeats: {fmt_list(small_us, '.1f')})")
    print(f"  after {plan.big_events:>9,} calls: {b:8.2f} µs/tick   (repeats: {fmt_list(big_us, '.1f')})")
    print(
        f"  ratio {plan.big_events:,} / {plan.small_events:,} (median of paired repeats: {fmt_list(ratios, '.3f')}): "
        f"{ratio:.3f}   (target <= {TICK_TARGET})  {verdict_word(ratio <= TICK_TARGET)}"
    )
    if profile:
        stream = tick_stream(T0 + plan.tick_repeats * span, plan.ticks + warmup, 5, seed=999, tag="prof")
        warm_shell_cache(stream)
        run_profiled(lambda: run_ticks(big, stream), "tick on the big detector")
    return [
        Outcome(
            f"tick cost {plan.big_events:,} vs {plan.small_events:,} calls",
            f"{ratio:.3f}x ({b:.1f} vs {s:.1f} µs/tick)",
            f"<= {TICK_TARGET}",
            ratio <= TICK_TARGET,
        )
    ]


# ==== 2. full replay of a big Claude stream-json log ===================================

SESSION = "9f1c2e7a-5b1d-4f7e-8a43-2c9d0b6e1f55"
MODEL = "claude-sonnet-4-5-20250929"


def code_line(rng: random.Random, n: int) -> str:
    w, w2 = rng.choice(WORDS), rng.choice(WORDS)
    templates = [
        f"{n:>6}\t    def {w}_{n}(self, {w2}: str) -> dict[str, int]:",
        f'{n:>6}\t        return {{"{w}": len({w2}), "ok": True}}  # see {rng.choice(SRC)}',
        f"{rng.choice(TESTS)}::test_{w}_{w2} PASSED                           [{rng.randrange(100):>3}%]",
        f'{n:>6}\t        raise ValueError(f"bad {w}: {{{w2}!r}}")',
        f"E       AssertionError: assert {{'{w}': {n}}} == {{'{w}': {n + 1}}}",
        f'  File "{WORKDIR}/{rng.choice(SRC)}", line {n}, in {w}_{w2}',
        f"{n:>6}\t\tif not {w}:\t# tab\\indented \u2014 r\u00e9sum\u00e9 \u2713",
        f"{rng.choice(SRC)}:{n}:{rng.randrange(80)}: E501 line too long ({80 + n % 40} > 79 characters)",
    ]
    return rng.choice(templates)


def text_pool(rng: random.Random, count: int = 400) -> list[str]:
    """Tool output texts: mostly 1-4 KB, some 4-10 KB, a few up to 30 KB."""
    pool = []
    for _ in range(count):
        r = rng.random()
        size = (
            rng.randrange(1000, 4000)
            if r < 0.7
            else rng.randrange(4000, 10000)
            if r < 0.95
            else rng.randrange(10000, 30000)
        )
        lines: list[str] = []
        total = 0
        while total < size:
            line = code_line(rng, len(lines) + 1)
            lines.append(line)
            total += len(line) + 1
        pool.append("\n".join(lines))
    return pool


class HealthyAgent:
    """Varied, productive tool calls: files rotate, tests rotate, new files keep appearing.

    Never the same script 8 times in 20 calls, no file 6 times in 20, no debris names,
    no sleep/polling, so the replay runs to the end without paging.
    """

    def __init__(self, rng: random.Random, texts: list[str]) -> None:
        self.rng = rng
        self.texts = texts
        self.file_i = 0
        self.test_i = 0
        self.new_i = 0
        self.since_new = 0
        self.last_read = SRC[0]
        self.last_read_edits = 0  # at most 2 edits per read file: no file 6 times in 20 calls

    def next_file(self) -> str:
        self.file_i += 1 + self.rng.randrange(3)
        return SRC[self.file_i % len(SRC)]

    def next_test(self) -> str:
        self.test_i += 1 + self.rng.randrange(2)
        return TESTS[self.test_i % len(TESTS)]

    def abs(self, rel: str) -> str:
        return f"{WORKDIR}/{rel}"

    def call(self) -> tuple[str, dict[str, Any]]:
        self.since_new += 1
        r = 0.5 if self.since_new > 25 else self.rng.random()  # a new file at least every 26 calls
        if r < 0.28:
            self.last_read = self.next_file()
            self.last_read_edits = 0
            return "Read", {"file_path": self.abs(self.last_read)}
        if r < 0.46:
            fresh = self.last_read_edits < 2 and self.rng.random() < 0.6
            path = self.last_read if fresh else self.next_file()
            self.last_read_edits += fresh
            old = self.rng.choice(self.texts)[: self.rng.randrange(80, 400)]
            return "Edit", {
                "file_path": self.abs(path),
                "old_string": old,
                "new_string": old.replace("value", "item"),
                "replace_all": False,
            }
        if r < 0.54:
            self.new_i += 1
            self.since_new = 0
            pkg = PKGS[self.new_i % len(PKGS)]
            return "Write", {
                "file_path": self.abs(f"src/{pkg}/feature_{self.new_i}.py"),
                "content": self.rng.choice(self.texts)[: self.rng.randrange(500, 3000)],
            }
        if r < 0.60:
            return self.rng.choice(["Grep", "Glob"]), {
                "pattern": f"def {self.rng.choice(WORDS)}_",
                "path": self.abs("src"),
            }
        return "Bash", {"command": self.bash(), "description": "Run a check"}

    def bash(self) -> str:
        rng = self.rng
        k = rng.randrange(10)
        if k < 4:
            return f"cd {WORKDIR} && python -m pytest {self.next_test()} -q 2>&1 | tail -30"
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


@dataclass
class LogInfo:
    path: Path
    bytes: int
    lines: int
    tool_calls: int
    started_at: float
    ended_at: float


def assistant_line(msg_id: str, block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 4,
                "cache_creation_input_tokens": 1832,
                "cache_read_input_tokens": 48211,
                "output_tokens": 97,
                "service_tier": "standard",
            },
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"u-{msg_id}",
    }


def result_line(tool_id: str, text: str, is_error: bool, n: int) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": is_error}],
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"r-{n}",
    }


def write_claude_log(path: Path, target_bytes: int, seed: int) -> LogInfo:
    rng = random.Random(seed)
    texts = text_pool(rng)
    agent = HealthyAgent(rng, texts)
    ts = T0
    lines = calls = 0
    with path.open("wb", buffering=1 << 20) as fh:

        def emit(data: dict[str, Any]) -> None:
            nonlocal lines
            fh.write(orjson.dumps({"ts": format_ts(ts), "data": data}) + b"\n")
            lines += 1

        emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": WORKDIR,
                "session_id": SESSION,
                "model": MODEL,
                "tools": ["Bash", "Read", "Edit", "Write", "Grep", "Glob"],
                "permissionMode": "bypassPermissions",
            }
        )
        while fh.tell() < target_bytes:
            msg_id = f"msg_{calls:08d}"
            if rng.random() < 0.3:
                emit(assistant_line(msg_id, {"type": "text", "text": rng.choice(texts)[: rng.randrange(60, 600)]}))
            name, inp = agent.call()
            tool_id = f"toolu_{calls:08d}_{rng.getrandbits(40):010x}"
            emit(assistant_line(msg_id, {"type": "tool_use", "id": tool_id, "name": name, "input": inp}))
            calls += 1
            ts += rng.uniform(0.5, 3.0)
            emit(result_line(tool_id, f"[{calls}]\n" + rng.choice(texts), rng.random() < 0.05, calls))
            if calls % 2000 == 0:
                emit(
                    {
                        "type": "system",
                        "subtype": "compact_boundary",
                        "session_id": SESSION,
                        "compact_metadata": {"trigger": "auto", "pre_tokens": 160000},
                    }
                )
            ts += rng.uniform(2.0, 10.0)
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": int((ts - T0) * 1000),
                "num_turns": calls,
                "result": "Done.",
                "session_id": SESSION,
                "total_cost_usd": 41.7,
            }
        )
        size = fh.tell()
    return LogInfo(path, size, lines, calls, T0, ts)


def write_case_yaml(
    folder: Path,
    case_id: str,
    fmt: str,
    bucket: str,
    started: float,
    ended: float,
    expect: str,
    workdir: str | None = None,
    description: str = "",
) -> None:
    text = (
        f"id: {case_id}\ndescription: {description or 'generated by speedbench/detector.py'}\n"
        f"format: {fmt}\nbucket: {bucket}\n"
        f"started_at: {format_ts(started)}\nended_at: {format_ts(ended)}\noutputs: []\n"
        + (f"workdir: {workdir}\n" if workdir else "")
        + f"expect: {expect}\n"
    )
    (folder / "case.yaml").write_text(text, encoding="utf-8")


def peak_rss_mb() -> float:
    """This process's peak RSS in MB.

    Linux keeps ru_maxrss across fork+execve, so a child's ru_maxrss is at least the parent's RSS
    at spawn time (here: the parent holding the 1M-call detector). VmHWM belongs to the child's
    own address space, so it is read first; ru_maxrss is the fallback where /proc is missing.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_main(mode: str, target: str) -> None:
    """Runs in a fresh interpreter: one measurement, one JSON line on stdout."""
    out: dict[str, Any] = {}
    if mode == "baseline":
        t0 = time.perf_counter()
        n = 0
        with open(target, "rb") as fh:
            for line in fh:
                orjson.loads(line)
                n += 1
        out["seconds"] = time.perf_counter() - t0
        out["lines"] = n
    else:
        buckets = BucketsFile()
        t0 = time.perf_counter()
        res = replay_case(Path(target), buckets)
        out["seconds"] = time.perf_counter() - t0
        out.update(tool_calls=res.tool_calls, spiral=res.spiral, skipped=res.skipped_lines, signals=res.signals)
    out["maxrss_mb"] = peak_rss_mb()
    sys.stdout.write(orjson.dumps(out).decode() + "\n")


def run_child(mode: str, target: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {mode} failed ({proc.returncode}):\n{proc.stderr}")
    return orjson.loads(proc.stdout.strip().splitlines()[-1])


def bench_log(plan: Plan, tmp: Path, profile: bool) -> list[Outcome]:
    print(
        f"\n== 2. full replay of a {plan.log_mb:g} MB Claude stream-json log vs orjson parse alone "
        f"({plan.log_repeats} repeats each, child processes, median) =="
    )
    case = tmp / "big-claude-log"
    case.mkdir()
    t0 = time.perf_counter()
    info = write_claude_log(case / "events.jsonl", int(plan.log_mb * 1e6), seed=7)
    write_case_yaml(
        case,
        "bench-big-claude-log",
        "claude-stream-json",
        "medium",
        info.started_at,
        info.ended_at + 30.0,
        "{spiral: false}",
        WORKDIR,
    )
    hours = (info.ended_at - info.started_at) / 3600
    print(
        f"  generated {info.bytes / 1e6:.1f} MB, {info.lines:,} lines, {info.tool_calls:,} tool calls, "
        f"{hours:.1f} h of log in {time.perf_counter() - t0:.1f} s"
    )
    base: list[dict[str, Any]] = []
    full: list[dict[str, Any]] = []
    for _ in range(plan.log_repeats):
        base.append(run_child("baseline", case / "events.jsonl"))
        full.append(run_child("full", case))
    for res in full:
        if res["tool_calls"] != info.tool_calls or res["spiral"]:
            raise SystemExit(f"replay did not run to the end: {res} (generated {info.tool_calls} calls)")
    b = median([r["seconds"] for r in base])
    f = median([r["seconds"] for r in full])
    rss = max(r["maxrss_mb"] for r in full)
    base_rss = max(r["maxrss_mb"] for r in base)
    ratios = [x["seconds"] / y["seconds"] for x, y in zip(full, base, strict=False)]
    ratio = median(ratios)
    mbps = info.bytes / 1e6
    print(
        f"  orjson parse only : {b:7.2f} s  ({mbps / b:6.1f} MB/s)  peak RSS {base_rss:6.1f} MB   "
        f"(repeats: {fmt_list([r['seconds'] for r in base])})"
    )
    print(
        f"  full replay       : {f:7.2f} s  ({mbps / f:6.1f} MB/s)  peak RSS {rss:6.1f} MB   "
        f"(repeats: {fmt_list([r['seconds'] for r in full])})"
    )
    print(
        f"  replay checked    : tool_calls={full[0]['tool_calls']:,} (== generated), spiral={full[0]['spiral']}, "
        f"skipped_lines={full[0]['skipped']}, signals fired={full[0]['signals']}"
    )
    print(
        f"  ratio full / parse (median of paired repeats: {fmt_list(ratios, '.3f')}): {ratio:.3f}   "
        f"(target <= {LOG_TARGET})  {verdict_word(ratio <= LOG_TARGET)}"
    )
    print(f"  peak RSS of replay: {rss:.1f} MB   (target < {RSS_TARGET_MB:g} MB)  {verdict_word(rss < RSS_TARGET_MB)}")
    if profile:
        buckets = BucketsFile()
        run_profiled(lambda: replay_case(case, buckets), "full replay")
    return [
        Outcome(
            "full replay / orjson parse",
            f"{ratio:.3f}x ({f:.2f} vs {b:.2f} s)",
            f"<= {LOG_TARGET}",
            ratio <= LOG_TARGET,
        ),
        Outcome("full replay peak RSS", f"{rss:.1f} MB", f"< {RSS_TARGET_MB:g} MB", rss < RSS_TARGET_MB),
    ]


# ==== 3. eval throughput over many small cases ==========================================

Event = tuple[float, dict[str, Any]]


@dataclass
class Scenario:
    kind: str
    bucket: str
    minutes: float
    events: list[Event]
    expect: str
    snapshots: bool


def healthy_events(rng: random.Random, start: float, end: float, tag: str) -> list[Event]:
    """Varied work every 20-60 s: rotating reads/edits, rotating tests, new files now and then."""
    out: list[Event] = []
    ts = start + rng.uniform(5, 40)
    n = 0
    while ts < end:
        n += 1
        r = rng.random()
        if r < 0.3:
            out.append((ts, {"tool": "Read", "path": SRC[(n * 7 + rng.randrange(3)) % len(SRC)]}))
        elif r < 0.5:
            out.append((ts, {"tool": "Edit", "path": SRC[(n * 11) % len(SRC)]}))
        elif r < 0.6:
            out.append((ts, {"tool": "Write", "path": f"src/{tag}/new_{n}.py"}))
        elif r < 0.85:
            out.append(
                (
                    ts,
                    {
                        "tool": "Bash",
                        "command": f"pytest {TESTS[(n * 3) % len(TESTS)]} -q",
                        "is_error": rng.random() < 0.2,
                    },
                )
            )
        else:
            out.append(
                (
                    ts,
                    {
                        "tool": "Bash",
                        "command": rng.choice(["git status", "git diff --stat", f"ls src/{rng.choice(PKGS)}"]),
                    },
                )
            )
        ts += rng.uniform(20, 60)
    return out


def loop_events(rng: random.Random, start: float, end: float, loop: list[dict[str, Any]]) -> list[Event]:
    """The same few calls over and over, every 15-30 s."""
    out: list[Event] = []
    ts = start
    i = 0
    while ts < end:
        out.append((ts, dict(loop[i % len(loop)])))
        i += 1
        ts += rng.uniform(15, 30)
    return out


def make_scenario(rng: random.Random, i: int) -> Scenario:
    k = i % 10
    tag = f"c{i}"
    if k < 4:  # healthy, small bucket, done before the soft band
        m = rng.uniform(10, 28)
        return Scenario(
            "healthy-small", "small", m, healthy_events(rng, T0, T0 + m * 60, tag), "{spiral: false}", i % 2 == 0
        )
    if k < 6:  # healthy, medium bucket, some running into the soft band
        m = rng.uniform(35, 80)
        return Scenario(
            "healthy-medium", "medium", m, healthy_events(rng, T0, T0 + m * 60, tag), "{spiral: false}", i % 2 == 0
        )
    if k < 8:  # a throwaway script re-run while one file is edited: pages in the soft band
        m = rng.uniform(33, 40)
        split = T0 + rng.uniform(8, 15) * 60
        loop = [
            {"tool": "Bash", "command": f"python tmp_repro{i % 5}.py"},
            {"tool": "Edit", "path": "src/core/parser.py"},
            {"tool": "Bash", "command": f"python tmp_repro{i % 5}.py", "is_error": True},
        ]
        return Scenario(
            "spiral-repetition",
            "small",
            m,
            healthy_events(rng, T0, split, tag) + loop_events(rng, split, T0 + m * 60, loop),
            "{spiral: true, notify_after_min: 30, notify_before_min: 35, signals: [repetition]}",
            i % 2 == 0,
        )
    if k == 8:  # polling a background task
        m = rng.uniform(33, 40)
        split = T0 + rng.uniform(8, 15) * 60
        loop = [
            {"tool": "Bash", "command": "sleep 30 && tail -5 /tmp/claude-1000/tasks/bg1.output"},
            {"tool": "Bash", "command": "cat /tmp/claude-1000/tasks/bg1.output"},
        ]
        return Scenario(
            "spiral-polling",
            "small",
            m,
            healthy_events(rng, T0, split, tag) + loop_events(rng, split, T0 + m * 60, loop),
            "{spiral: true, signals: [polling]}",
            i % 2 == 0,
        )
    m = rng.uniform(72, 90)  # medium: one test file hammered for half an hour
    split = T0 + rng.uniform(30, 45) * 60
    loop = [
        {"tool": "Bash", "command": "pytest tests/test_core_parser.py -x -q", "is_error": True},
        {"tool": "Edit", "path": SRC[(i * 13) % len(SRC)]},
        {"tool": "Bash", "command": "python -m pytest tests/test_core_parser.py::test_value -x"},
    ]
    return Scenario(
        "spiral-sustained",
        "medium",
        m,
        healthy_events(rng, T0, split, tag) + loop_events(rng, split, T0 + m * 60, loop),
        "{spiral: true, notify_after_min: 70, notify_before_min: 85, signals: [sustained_bash]}",
        i % 2 == 0,
    )


def workspace_lines(events: list[Event], start: float, end: float) -> list[bytes]:
    """A snapshot every 30 s: every file written so far is dirty, hashes change on each write."""
    status: dict[str, str] = {}
    hashes: dict[str, str] = {}
    out: list[bytes] = []
    j = 0
    ts = start
    while ts <= end:
        while j < len(events) and events[j][0] <= ts:
            data = events[j][1]
            if data["tool"] in ("Edit", "Write"):
                path = data["path"]
                status.setdefault(path, "??" if data["tool"] == "Write" else " M")
                hashes[path] = f"{zlib.crc32(f'{path}:{j}'.encode()):08x}"
            elif data["tool"] == "Bash" and "tmp_" in data.get("command", ""):
                name = data["command"].split()[-1]
                status[name] = "??"
                hashes[name] = "e69de29"
            j += 1
        porcelain = "".join(f"{st} {p}\n" for p, st in status.items())
        out.append(orjson.dumps({"ts": format_ts(ts), "porcelain": porcelain, "hashes": hashes}) + b"\n")
        ts += 30.0
    return out


def write_scenario(root: Path, i: int, sc: Scenario) -> None:
    folder = root / f"{i:04d}-{sc.kind}"
    folder.mkdir(parents=True)
    end = T0 + sc.minutes * 60
    write_case_yaml(
        folder,
        f"bench-{i:04d}-{sc.kind}",
        "generic",
        sc.bucket,
        T0,
        end,
        sc.expect,
        description=f"{sc.kind}, {sc.minutes:.0f} min",
    )
    with (folder / "events.jsonl").open("wb") as fh:
        for ts, data in sc.events:
            fh.write(orjson.dumps({"ts": format_ts(ts), "data": data}) + b"\n")
    if sc.snapshots:
        (folder / "workspace.jsonl").write_bytes(b"".join(workspace_lines(sc.events, T0, end)))


def time_eval(root: Path, repeats: int) -> tuple[list[float], dict[str, Any]]:
    """Seconds per `evaluate` run; each starts like a fresh process (empty shell-analysis cache)."""
    secs: list[float] = []
    summary: dict[str, Any] = {}
    for _ in range(repeats):
        analyse.cache_clear()
        gc.collect()
        t0 = time.perf_counter()
        summary = evaluate([root], BucketsFile())
        secs.append(time.perf_counter() - t0)
    return secs, summary


def bench_eval(plan: Plan, tmp: Path, profile: bool) -> list[Outcome]:
    print(f"\n== 3. eval throughput  ({plan.cases} generated cases, {plan.eval_repeats} repeats, median) ==")
    root = tmp / "cases"
    rng = random.Random(11)
    kinds: dict[str, int] = {}
    events = 0
    minutes = 0.0
    for i in range(plan.cases):
        sc = make_scenario(rng, i)
        write_scenario(root, i, sc)
        kinds[sc.kind] = kinds.get(sc.kind, 0) + 1
        events += len(sc.events)
        minutes += sc.minutes
    print(f"  cases: {', '.join(f'{k} {v}' for k, v in kinds.items())}")
    print(
        f"  {events:,} events (avg {events / plan.cases:.0f}/case), avg {minutes / plan.cases:.0f} min "
        f"recorded/case, half with a workspace.jsonl snapshot every 30 s"
    )
    secs, summary = time_eval(root, plan.eval_repeats)
    s = median(secs)
    rate = plan.cases / s
    print(
        f"  evaluate([dir], BucketsFile()): {s * 1000:.0f} ms for {plan.cases} cases "
        f"(repeats: {', '.join(f'{x * 1000:.0f}' for x in secs)} ms) = {s / plan.cases * 1e3:.2f} ms/case"
    )
    print(
        f"  sanity: tp={summary['tp']} fp={summary['fp']} tn={summary['tn']} fn={summary['fn']} "
        f"passed={summary['passed']}/{plan.cases}"
    )
    print(f"  throughput: {rate:,.0f} scenarios/s   (target >= {EVAL_TARGET:g})  {verdict_word(rate >= EVAL_TARGET)}")
    corpus = HERE.parent / "corpus"
    if any(corpus.glob("*/case.yaml")):
        n = len(list(corpus.glob("*/case.yaml")))
        c_secs, _ = time_eval(corpus, plan.eval_repeats)
        print(
            f"  (info) the project's corpus/: {n} cases in {median(c_secs) * 1000:.0f} ms = "
            f"{n / median(c_secs):,.0f} scenarios/s"
        )
    if profile:
        analyse.cache_clear()
        run_profiled(lambda: evaluate([root], BucketsFile()), "eval")
    return [Outcome("eval throughput", f"{rate:,.0f} scenarios/s", f">= {EVAL_TARGET:g}", rate >= EVAL_TARGET)]


# ==== driver ============================================================================


def run_profiled(fn: Callable[[], Any], what: str, top: int = 22) -> None:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    for key, n in (("cumulative", top), ("tottime", top // 2)):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(n)
        body = buf.getvalue().splitlines()
        start = next((i for i, ln in enumerate(body) if ln.lstrip().startswith("ncalls")), 0)
        print(f"\n  -- cProfile: {what}, top {n} by {key} --")
        print("\n".join("  " + ln.replace(str(HERE.parent) + "/", "") for ln in body[start:] if ln.strip()))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_state() -> str:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = [ln for ln in git("status", "--porcelain", "--untracked-files=no").splitlines() if ln]
    return f"git {head}" + (f" + {len(dirty)} uncommitted changed files" if dirty else " (clean)")


def header(plan: Plan, quick: bool) -> None:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("spiral detector benchmark" + (" (--quick)" if quick else ""))
    print(f"  machine : {os.cpu_count()} CPUs ({affinity} usable), {cpu_model()}, {platform.platform()}")
    print(f"  python  : {platform.python_implementation()} {platform.python_version()}, orjson {orjson.__version__}")
    print(f"  project : {git_state()}")
    print(
        f"  plan    : ticks after {plan.small_events:,} vs {plan.big_events:,} calls; "
        f"{plan.log_mb:g} MB log; {plan.cases} eval cases"
    )


def footer(outcomes: list[Outcome], elapsed: float) -> bool:
    print(f"\n== summary ({elapsed:.0f} s) ==")
    for o in outcomes:
        print(f"  {verdict_word(o.passed)}  {o.label:<34} {o.value:<34} target {o.target}")
    return all(o.passed for o in outcomes)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small run (100k calls, 15 MB log, 100 cases)")
    p.add_argument("--only", choices=["tick", "log", "eval"], action="append", help="run only these parts")
    p.add_argument(
        "--profile", choices=["tick", "log", "eval"], action="append", help="also print a cProfile of these parts"
    )
    p.add_argument("--child", nargs=2, metavar=("MODE", "TARGET"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.child:
        child_main(*args.child)
        return 0
    plan = QUICK if args.quick else FULL
    parts = args.only or ["tick", "log", "eval"]
    profile = set(args.profile or [])
    header(plan, args.quick)
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    OUT.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-", dir=OUT))
    try:
        if "tick" in parts:
            outcomes += bench_tick(plan, "tick" in profile)
        if "log" in parts:
            outcomes += bench_log(plan, tmp, "log" in profile)
        if "eval" in parts:
            outcomes += bench_eval(plan, tmp, "eval" in profile)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if footer(outcomes, time.perf_counter() - started) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
