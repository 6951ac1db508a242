"""`status` over many live runs, and what a per-run supervisor costs in memory.

Run:  .venv/bin/python speedbench/status.py [--runs 50] [--lines 100000] [--repeats 7]

Sets ORCHESTRATOR_HOME to a fresh folder under speedbench/out/ (gitignored; removed at
the end), makes a small git repo and a config.yaml with a `fake` agent profile
(tests/fake_agent.py, generic format), and launches N big-bucket tickets with
`python -m orchestrator launch`. Each agent prints one tool call every 0.5 s
(tests, reads, greps over many files: never a loop) for longer than the
benchmark lasts, so no run is overdue, silent or spiraling.

Prints, each measured in this run (wall time, and CPU time where it tells
computing from waiting):
  1. launch wall time per run; the startup floor (`python -c pass`,
     `python -c "import orchestrator.cli"`, every module `status` imports, and
     `status --json` over an empty state folder); `python -m orchestrator status
     --json` over the N runs, first call (it builds every run's detector cache)
     and steady state (median, each call paired with an empty-folder call), and
     the in-process `orchestrator.runs.watch.one_pass` time; then the same after every
     events.jsonl grew by --lines generated lines (the catch-up call, steady
     state, ratio vs the small logs), and once more with the caches deleted;
  2. RSS and USS (psutil memory_full_info) of every supervisor and every fake
     agent: mean / min / max;
  3. every run killed (orchestrator.runs.kill.kill_run) and a check that no
     supervisor or agent process is left.

Not a test: no pass/fail targets, but anything that looks wrong (a run that is
not running and healthy, a status error, a process left behind) is listed under
"problems" at the end and makes the exit status 1. Cleans up on Ctrl-C and errors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import psutil

from orchestrator.buckets import BucketsFile
from orchestrator.config import load
from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.runs import evaluator, monitor
from orchestrator.runs.kill import kill_run
from orchestrator.runs.watch import one_pass
from spiral.model import ToolCall
from spiral.timestamps import format_ts

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
FAKE_AGENT = ROOT / "tests" / "fake_agent.py"
PY = sys.executable

LINE_EVERY_S = 0.5
MAX_ARG_BYTES = 128 * 1024 - 1  # Linux MAX_ARG_STRLEN: the prompt is one argv element
STATUS_IMPORTS = (
    "import orchestrator.cli, orchestrator.buckets, orchestrator.notify.channels, orchestrator.tables, "
    "orchestrator.config, orchestrator.runs.watch"
)
MB = 1024 * 1024
KILLERS = 16  # runs killed at a time
T = TypeVar("T")

# a healthy agent's vocabulary: many distinct targets, so no window signal fills up
PKGS = ["core", "api", "cli", "db", "io", "net", "auth", "cache", "jobs", "web", "util", "model"]
NAMES = ["base", "client", "config", "errors", "handlers", "loader", "main", "models", "parser", "routes"]
SRC = [f"src/{p}/{n}.py" for p in PKGS for n in NAMES]  # 120 files
TESTS = [f"tests/test_{p}.py" for p in PKGS]  # 12 files
WORDS = ["value", "config", "result", "items", "request", "payload", "cursor", "index", "buffer", "record"]
CYCLE = 4 * len(SRC)  # tool_call(i) repeats with this period


# ---- small helpers ------------------------------------------------------------------


def say(text: str = "") -> None:
    print(text, flush=True)


def row(label: str, value: str) -> None:
    say(f"  {label:<58} {value}")


def section(title: str) -> None:
    say()
    say(f"== {title} ==")


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def secs(x: float) -> str:
    return f"{x:.3f} s"


def spread(xs: Sequence[float]) -> str:
    return f"median {med(xs):.3f} s  (min {min(xs):.3f}, max {max(xs):.3f}, n={len(xs)})"


@dataclass(frozen=True)
class Took:
    wall: float
    cpu: float  # user + system seconds of the timed process: far below `wall` means it waited (I/O, locks)

    def __str__(self) -> str:
        return f"{self.wall:.3f} s  (CPU {self.cpu:.3f} s)"


def spread_took(xs: Sequence[Took]) -> str:
    walls = [x.wall for x in xs]
    return f"{spread(walls)}  CPU median {med([x.cpu for x in xs]):.3f} s"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wall(
    argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 900
) -> tuple[Took, subprocess.CompletedProcess[str]]:
    """Wall and CPU time of one subprocess, run from the project root like a person would."""
    cpu, started = children_cpu(), time.perf_counter()
    p = subprocess.run(
        list(argv), cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    return Took(time.perf_counter() - started, children_cpu() - cpu), p


def orchestrator_cli(*args: str) -> list[str]:
    return [PY, "-m", "orchestrator", *args]


@dataclass
class Bench:
    home: Path
    empty_home: Path
    run_dirs: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    held: list[int] = field(default_factory=list)  # calls read but not yet absorbed, per run (tool_calls_seen)

    def problem(self, text: str) -> None:
        self.problems.append(text)
        say(f"  !! {text}")


# ---- the state folder: repo, config, tickets ---------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_repo(path: Path) -> Path:
    for src in SRC[:20]:
        (path / src).parent.mkdir(parents=True, exist_ok=True)
        (path / src).write_text("x = 1\n")
    (path / "tests").mkdir()
    for test in TESTS:
        (path / test).write_text("def test_x():\n    assert True\n")
    git("init", "-q", "-b", "main", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "init", cwd=path)
    return path


def write_config(home: Path) -> None:
    cfg = {"agents": {"fake": {"command": [PY, str(FAKE_AGENT)], "format": "generic"}}}
    (home / "config.yaml").write_text(json.dumps(cfg))  # JSON is YAML


def tool_call(i: int) -> dict[str, Any]:
    """The i-th call of a healthy agent: tests, reads, greps and diffs spread over many files."""
    j = i // 4
    kind = i % 4
    if kind == 0:
        return {"tool": "Bash", "command": f"pytest {TESTS[j % len(TESTS)]} -q"}
    if kind == 1:
        return {"tool": "Read", "path": SRC[j % len(SRC)]}
    if kind == 2:
        return {"tool": "Bash", "command": f"grep -rn {WORDS[j % len(WORDS)]} {SRC[(j * 7) % len(SRC)]}"}
    return {"tool": "Bash", "command": f"git diff {SRC[(j * 11) % len(SRC)]}"}


def agent_script(seconds: float, start: int) -> str:
    """A fake_agent.py script: one generic log line every LINE_EVERY_S for `seconds`."""
    steps = []
    for i in range(max(1, round(seconds / LINE_EVERY_S))):
        steps.append("say " + orjson.dumps(tool_call(start + i)).decode())
        steps.append(f"sleep {LINE_EVERY_S:g}")
    return "\n".join(steps)


def write_tickets(folder: Path, repo: Path, runs: int, agent_seconds: float) -> list[Path]:
    folder.mkdir()
    paths = []
    for n in range(runs):
        body = agent_script(agent_seconds, start=n * 13)
        if len(body.encode()) > MAX_ARG_BYTES:
            raise SystemExit(
                f"--agent-seconds {agent_seconds:g} makes a {len(body) // 1024} KB prompt, over the "
                f"{MAX_ARG_BYTES // 1024} KB a single argument may have; ask for fewer seconds"
            )
        front = {"id": f"bench-{n:03d}", "repo": str(repo), "bucket": "big", "agent": "fake"}
        path = folder / f"bench-{n:03d}.md"
        path.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in front.items()) + "---\n" + body + "\n")
        paths.append(path)
    return paths


# ---- launch ---------------------------------------------------------------------------


def launch_all(bench: Bench, tickets: list[Path]) -> list[float]:
    times = []
    for path in tickets:
        took, p = wall(orchestrator_cli("launch", str(path)))
        times.append(took.wall)
        if p.returncode != 0:
            raise RuntimeError(f"launch {path.name} exited {p.returncode}: {p.stderr.strip()}")
        run_id = p.stdout.strip().splitlines()[-1]
        bench.run_dirs.append(bench.home / "runs" / run_id)
    return times


def report_launch(times: list[float], prompt_bytes: int, state_bytes: list[int]) -> None:
    section(f"launch: `python -m orchestrator launch TICKET`, {len(times)} runs one after another")
    row("wall time per launch", spread(times))
    row("first / last launch", f"{times[0]:.3f} s / {times[-1]:.3f} s")
    row("all launches", secs(sum(times)))
    row(
        "prompt (agent script) per run; state.json holds it in argv",
        f"{prompt_bytes / 1024:.0f} KB; state.json {med(state_bytes) / 1024:.0f} KB",
    )


# ---- status ---------------------------------------------------------------------------


@dataclass
class StatusNumbers:
    first_cli: Took
    cli: list[Took]
    floor: list[Took]  # `status --json` over an empty state folder, timed next to each CLI call
    inproc_first: Took
    inproc: list[Took]
    rewrites: list[int]  # runs whose state.json a spaced in-process pass rewrote
    inproc_idle: list[Took]
    rewrites_idle: list[int]

    def cli_median(self) -> float:
        return med([t.wall for t in self.cli])

    def floor_median(self) -> float:
        return med([t.wall for t in self.floor])

    def inproc_median(self) -> float:
        return med([t.wall for t in self.inproc])


def check_rows(bench: Bench, rows: list[dict[str, Any]], when: str) -> None:
    """Every run we launched must still be running, healthy and signal-free."""
    by_id = {r["id"]: r for r in rows}
    bad = 0
    for run_dir in bench.run_dirs:
        r = by_id.get(run_dir.name)
        if r is None:
            bench.problem(f"{when}: {run_dir.name} missing from status")
        elif r["state"] != "running":
            bench.problem(f"{when}: {run_dir.name} is {r['state']}: {r['reason']}")
        elif r["region"] != "healthy" or r["signals"] or r["tripped_at_min"] is not None:
            bench.problem(f"{when}: {run_dir.name} region {r['region']}, signals {r['signals']}")
        else:
            continue
        bad += 1
    if bad:
        say(f"  !! {when}: {bad} of {len(bench.run_dirs)} runs not running+healthy")


def status_cli(bench: Bench, when: str) -> Took:
    took, p = wall(orchestrator_cli("status", "--json"))
    if p.returncode != 0:
        bench.problem(f"{when}: status --json exited {p.returncode}: {p.stderr.strip()[-500:]}")
        return took
    check_rows(bench, json.loads(p.stdout)["runs"], when)
    return took


def status_inproc(bench: Bench, when: str) -> tuple[Took, int]:
    """One in-process pass: (its time, runs whose state.json it rewrote)."""
    cpu, started = time.process_time(), time.perf_counter()
    views = one_pass(BucketsFile(), load())
    took = Took(time.perf_counter() - started, time.process_time() - cpu)
    check_rows(bench, [v.to_dict() for v in views], when)
    return took, sum(1 for v in views if v.events)


def spaced(bench: Bench, call: Callable[[Bench, str], T], when: str, repeats: int) -> list[T]:
    """`repeats` calls, each after a pause in which every agent prints a line."""
    out = []
    for _ in range(repeats):
        time.sleep(LINE_EVERY_S + 0.1)
        out.append(call(bench, when))
    return out


def floor_and_status(bench: Bench, when: str) -> tuple[Took, Took]:
    return empty_status(bench), status_cli(bench, when)


def measure_status(bench: Bench, label: str, repeats: int) -> StatusNumbers:
    first = status_cli(bench, f"{label}, first CLI call")
    pairs = spaced(bench, floor_and_status, f"{label}, CLI call", repeats)
    inproc_first, _ = status_inproc(bench, f"{label}, first in-process pass")
    inproc = spaced(bench, status_inproc, f"{label}, in-process pass", repeats)
    idle = [status_inproc(bench, f"{label}, back-to-back in-process pass") for _ in range(repeats)]
    return StatusNumbers(
        first,
        [c for _, c in pairs],
        [f for f, _ in pairs],
        inproc_first,
        [t for t, _ in inproc],
        [n for _, n in inproc],
        [t for t, _ in idle],
        [n for _, n in idle],
    )


def per_run_ms(total: float, floor: float, runs: int) -> str:
    if total <= floor:
        return "below the timing noise"
    return f"{(total - floor) / runs * 1000:.1f} ms"


def report_status(title: str, n: StatusNumbers, runs: int, first_what: str) -> None:
    section(title)
    row(f"CLI `status --json`, first call ({first_what})", str(n.first_cli))
    row("CLI `status --json`, steady state (every run has new lines)", spread_took(n.cli))
    outliers(n.cli)
    row("  startup floor: the same over an empty state folder, paired", spread_took(n.floor))
    row("  the rest (steady minus floor), per run", per_run_ms(n.cli_median(), n.floor_median(), runs))
    row("in-process one_pass(BucketsFile(), load()), first in this phase", str(n.inproc_first))
    row("in-process one_pass, steady state (every run has new lines)", spread_took(n.inproc))
    outliers(n.inproc)
    row("  per run", f"{n.inproc_median() / runs * 1000:.1f} ms")
    row("  state.json rewritten per pass (median)", f"{med(n.rewrites):.0f} of {runs} runs")
    row("in-process one_pass, back-to-back (little or nothing new)", spread_took(n.inproc_idle))
    row("  state.json rewritten per pass (median)", f"{med(n.rewrites_idle):.0f} of {runs} runs")


def outliers(xs: list[Took]) -> None:
    """Name any call far slower than the median, with its CPU time (so waiting shows as waiting)."""
    typical = med([x.wall for x in xs])
    slow = [x for x in xs if x.wall > 3 * typical and x.wall > typical + 0.5]
    if slow:
        row("  !! outliers (wall, CPU)", ", ".join(str(x) for x in slow))


FLOOR = "`status --json` over an empty state folder"


def empty_status(bench: Bench) -> Took:
    return wall(orchestrator_cli("status", "--json"), {"ORCHESTRATOR_HOME": str(bench.empty_home)})[0]


def measure_floor(bench: Bench, repeats: int) -> dict[str, float]:
    probes: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([PY, "-c", "pass"], {}),
        'python -c "import orchestrator.cli"': ([PY, "-c", "import orchestrator.cli"], {}),
        'python -c "import <every module `status` imports>"': ([PY, "-c", STATUS_IMPORTS], {}),
        FLOOR: (orchestrator_cli("status", "--json"), {"ORCHESTRATOR_HOME": str(bench.empty_home)}),
    }
    out = {}
    for label, (argv, env) in probes.items():
        wall(argv, env)  # warm the page cache and .pyc files
        out[label] = med([wall(argv, env)[0].wall for _ in range(repeats)])
    return out


def report_floor(floor: dict[str, float]) -> None:
    section("startup floor: subprocess wall time with no run to look at (median)")
    for label, took in floor.items():
        row(label, secs(took))
    row("  (the last adds typer building the app; typer 0.29 imports pydantic then)", "")


# ---- long logs ------------------------------------------------------------------------


def grow_logs(run_dirs: list[Path], lines: int) -> float:
    """Append `lines` generated envelopes (an agent burst) to every run's events.jsonl."""
    payloads = [orjson.dumps(tool_call(i)) for i in range(CYCLE)]
    started = time.perf_counter()
    for k, run_dir in enumerate(run_dirs):
        head = b'{"ts":' + orjson.dumps(format_ts(time.time())) + b',"data":'
        chunk = b"".join(head + payloads[(k * 13 + i) % CYCLE] + b"}\n" for i in range(lines))
        with (run_dir / "events.jsonl").open("ab") as fh:  # O_APPEND, like the supervisor's
            fh.write(chunk)
    return time.perf_counter() - started


def tool_calls_seen(bench: Bench) -> list[int]:
    """Tool calls each run's detector has absorbed, read after a refresh.

    state.json's spiral.tool_calls is rewritten only when the verdict changes, and detector.pickle
    only every so often (a process keeps the detector in memory between passes), so both lag.
    So: one in-process pass, whatever this process keeps in memory written out (monitor.KEPT, where
    it exists), then the count in each cache file. Calls read but still held back (waiting for
    their result, spiral.intake.HOLD_S) are in bench.held.
    """
    one_pass(BucketsFile(), load())
    kept = getattr(monitor, "KEPT", None)
    if kept is not None:
        kept.flush()
    counts, bench.held = [], []
    for run_dir in bench.run_dirs:
        cached = evaluator.load(RunDir(run_dir).detector_cache)
        if cached is None:
            bench.problem(f"{run_dir.name}: no readable detector.pickle after a status refresh")
            counts.append(0)
            continue
        counts.append(cached.detector.calls)
        pending = cached.intake.pending
        bench.held.append(sum(1 for item in pending if isinstance(item, ToolCall)))
    return counts


def drop_caches(run_dirs: list[Path]) -> None:
    for run_dir in run_dirs:
        (run_dir / "detector.pickle").unlink(missing_ok=True)


def report_growth(lines: int, took: float, run_dirs: list[Path], calls: list[int], held: list[int]) -> None:
    sizes = [(d / "events.jsonl").stat().st_size for d in run_dirs]
    section(f"log growth: {lines} generated lines appended to each run's events.jsonl")
    row("append time (all runs)", secs(took))
    row("events.jsonl per run now", f"{med(sizes) / MB:.1f} MB (total {sum(sizes) / MB:.0f} MB)")
    row("tool calls the detector absorbed per run (min / max)", f"{min(calls)} / {max(calls)}")
    if held:
        row("  read but held back, waiting for a result (min / max)", f"{min(held)} / {max(held)}")


def ratio(a: float, b: float) -> str:
    return f"{a:.3f} s / {b:.3f} s = {a / b:.2f}x" if a > 0 and b > 0 else "n/a: below the timing noise"


def report_ratio(small: StatusNumbers, big: StatusNumbers, cold: Took, lines: int) -> None:
    section(f"does a call's cost grow with log length? ({lines}-line logs vs small logs, medians)")
    row("CLI steady state, long / small logs", ratio(big.cli_median(), small.cli_median()))
    row(
        "CLI steady state minus its paired floor, long / small",
        ratio(big.cli_median() - big.floor_median(), small.cli_median() - small.floor_median()),
    )
    row("in-process one_pass steady state, long / small", ratio(big.inproc_median(), small.inproc_median()))
    row("first CLI call: small logs, no cache yet", str(small.first_cli))
    row(f"first CLI call after +{lines} lines, caches present (catch-up)", str(big.first_cli))
    row(f"first CLI call, {lines}-line logs, caches deleted (cold)", str(cold))


# ---- memory ---------------------------------------------------------------------------


def proc_refs(run_dirs: list[Path], key: str) -> list[proc.ProcRef]:
    refs = []
    for run_dir in run_dirs:
        try:
            ref = getattr(state_file.read(run_dir), key)
        except UserError:
            continue
        if ref is not None:
            refs.append(ref)
    return refs


def memory_mb(refs: list[proc.ProcRef]) -> tuple[list[float], list[float]]:
    rss, uss = [], []
    for ref in refs:
        p = ref.process()
        if p is None:
            continue
        try:
            info = p.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss.append(info.rss / MB)
        uss.append(info.uss / MB)
    return rss, uss


def mem_line(xs: list[float]) -> str:
    if not xs:
        return "no live process"
    return f"mean {statistics.fmean(xs):6.1f} MB  min {min(xs):6.1f}  max {max(xs):6.1f}  sum {sum(xs):7.1f} MB"


def report_memory(bench: Bench) -> None:
    section("memory per run: psutil memory_full_info() of each live process")
    for what, key in (("supervisor", "supervisor"), ("fake agent", "agent_pid")):
        refs = proc_refs(bench.run_dirs, key)
        rss, uss = memory_mb(refs)
        if len(rss) != len(bench.run_dirs):
            bench.problem(f"memory: {len(rss)} live {what} processes for {len(bench.run_dirs)} runs")
        row(f"{what} RSS ({len(rss)} processes)", mem_line(rss))
        row(f"{what} USS (unique set size)", mem_line(uss))


# ---- kill and the leftover check ---------------------------------------------------------


def kill_one(run_dir: Path, reason: str) -> tuple[float, RunRecord | str]:
    """kill_run on one run: (seconds, its final record, or the error text)."""
    started = time.perf_counter()
    try:
        final: RunRecord | str = kill_run(run_dir, reason=reason)
    except UserError as exc:
        final = str(exc)
    return time.perf_counter() - started, final


def kill_runs(run_dirs: list[Path], reason: str) -> list[tuple[float, RunRecord | str]]:
    with ThreadPoolExecutor(max_workers=KILLERS) as pool:
        return list(pool.map(lambda d: kill_one(d, reason), run_dirs))


def kill_all(bench: Bench) -> tuple[float, list[float]]:
    """Kill every run, KILLERS at a time: (total seconds, seconds per kill)."""
    started = time.perf_counter()
    results = kill_runs(bench.run_dirs, "benchmark over")
    total = time.perf_counter() - started
    for run_dir, (_, final) in zip(bench.run_dirs, results, strict=False):
        if isinstance(final, str):
            bench.problem(f"kill: {final}")
        elif final.state != "killed":
            bench.problem(f"kill: {run_dir.name} ended as {final.state}: {final.reason}")
    return total, [took for took, _ in results]


def under_home(p: psutil.Process, home: str) -> bool:
    """A process of this benchmark: its argv or working folder is in our state folder."""
    try:
        if p.pid == os.getpid() or p.status() == psutil.STATUS_ZOMBIE:
            return False
        return home in " ".join(p.cmdline()) or p.cwd().startswith(home)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def leftovers(bench: Bench) -> tuple[list[proc.ProcRef], list[proc.ProcRef], list[psutil.Process]]:
    """Recorded supervisors and agents still alive, and any other live process under the state folder."""
    sups = [r for r in proc_refs(bench.run_dirs, "supervisor") if r.alive()]
    agents = [r for r in proc_refs(bench.run_dirs, "agent_pid") if r.alive()]
    known = {r.pid for r in sups + agents}
    home = str(bench.home)
    others = [p for p in psutil.process_iter() if p.pid not in known and under_home(p, home)]
    return sups, agents, others


def report_kill(bench: Bench, total: float, each: list[float]) -> None:
    section("kill every run (orchestrator.runs.kill.kill_run) and look for survivors")
    states = [state_file.read(d).state for d in bench.run_dirs]
    row(f"kill {len(bench.run_dirs)} runs, {KILLERS} at a time", secs(total))
    row("  one kill_run", spread(each))
    codes = [state_file.read(d).exit_code for d in bench.run_dirs]
    tally = ", ".join(f"{c}: {codes.count(c)}" for c in sorted(set(codes), key=str))
    row("agent exit codes recorded (code: runs)", tally)
    if -signal.SIGTERM in codes:
        row("  note: -15 = SIGTERM: the agent outlived kill_tree's SIGINT", "(and its 3 s grace)")
    row("runs recorded `killed`", f"{states.count('killed')} of {len(states)}")
    sups, agents, others = leftovers(bench)
    row("supervisors still alive", str(len(sups)))
    row("agents still alive", str(len(agents)))
    row("other processes with argv or cwd under the state folder", str(len(others)))
    ok = not (sups or agents or others)
    row("leftover check", "OK: nothing left" if ok else "FAILED")
    if not ok:
        bench.problem(
            f"left alive after kill: supervisors {[r.pid for r in sups]}, agents {[r.pid for r in agents]}, "
            f"others {[p.pid for p in others]}"
        )


def cleanup(bench: Bench) -> None:
    """Whatever happened: stop every run and every process of ours, remove the state folder."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave agents behind
    runs = bench.home / "runs"
    run_dirs = sorted(p for p in runs.iterdir() if (p / "state.json").is_file()) if runs.is_dir() else []
    deadline = time.monotonic() + 10  # a run interrupted mid-launch: let its supervisor record itself
    while time.monotonic() < deadline and any(_state(d) == "launching" for d in run_dirs):
        time.sleep(0.1)
    active = [d for d in run_dirs if _state(d) in state_file.ACTIVE]
    try:
        kill_runs(active, "benchmark cleanup")
    except Exception as exc:
        say(f"cleanup: kill_run: {type(exc).__name__}: {exc}")
    bench.run_dirs = run_dirs
    for _ in range(3):  # a supervisor caught mid-start may still spawn its agent: look again
        sups, agents, others = leftovers(bench)
        if not (sups or agents or others):
            break
        say(f"cleanup: killing {len(sups)} supervisors, {len(agents)} agents, {len(others)} other processes by pid")
        for ref in sups + agents:
            proc.kill_tree(ref)
        for p in others:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        time.sleep(0.5)
    if active:
        left = sum(len(group) for group in leftovers(bench))
        say(f"cleanup: {len(active)} active runs killed; processes left under the state folder: {left}")
    shutil.rmtree(bench.home, ignore_errors=True)


def _state(run_dir: Path) -> str | None:
    try:
        return state_file.read(run_dir).state
    except UserError:
        return None


# ---- main -----------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=50, help="live runs to launch (default 50)")
    p.add_argument("--lines", type=int, default=100_000, help="lines appended to each log (default 100000)")
    p.add_argument("--repeats", type=int, default=7, help="timed calls per median (default 7)")
    p.add_argument(
        "--agent-seconds",
        type=float,
        default=None,
        help="how long each agent keeps printing (default: sized from --runs and --lines)",
    )
    args = p.parse_args(argv)
    if args.runs < 1 or args.repeats < 1 or args.lines < 0:
        p.error("--runs and --repeats must be >= 1, --lines >= 0")
    return args


def default_agent_seconds(runs: int, lines: int) -> float:
    """Generously longer than the benchmark: launches, status calls, the long-log catch-up."""
    return 180.0 + runs * 3.0 + runs * lines * 30e-6


def header(args: argparse.Namespace, agent_seconds: float, home: Path) -> None:
    say(f"speedbench/status.py: `status` over {args.runs} live runs, and supervisor memory")
    say(
        f"  {platform.python_implementation()} {platform.python_version()}, {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} CPUs, psutil {psutil.__version__}"
    )
    say(
        f"  agent: tests/fake_agent.py, generic format, bucket big, one tool call every {LINE_EVERY_S:g} s "
        f"for up to {agent_seconds:.0f} s"
    )
    say(f"  ORCHESTRATOR_HOME={home.relative_to(ROOT)} (removed at the end)")


def run(bench: Bench, args: argparse.Namespace, agent_seconds: float) -> None:
    repo = make_repo(bench.home / "origin")
    write_config(bench.home)
    tickets = write_tickets(bench.home / "tickets", repo, args.runs, agent_seconds)
    prompt_bytes = len(tickets[0].read_text().split("---\n", 2)[2].encode())
    launch_times = launch_all(bench, tickets)
    state_bytes = [(d / "state.json").stat().st_size for d in bench.run_dirs]
    report_launch(launch_times, prompt_bytes, state_bytes)

    report_floor(measure_floor(bench, args.repeats))

    time.sleep(2.0)  # every agent has printed a few lines
    small = measure_status(bench, "small logs", args.repeats)
    calls = tool_calls_seen(bench)
    report_status(
        f"status over {args.runs} live runs, small logs ({min(calls)}-{max(calls)} tool calls each)",
        small,
        args.runs,
        f"builds {args.runs} detector caches",
    )

    took = grow_logs(bench.run_dirs, args.lines)
    big = measure_status(bench, "long logs", args.repeats)
    report_growth(args.lines, took, bench.run_dirs, tool_calls_seen(bench), bench.held)
    report_status(
        f"status over {args.runs} live runs, logs grown by {args.lines} lines each",
        big,
        args.runs,
        f"catches up {args.lines} lines per run",
    )
    drop_caches(bench.run_dirs)
    cold = status_cli(bench, "long logs, caches deleted")
    report_ratio(small, big, cold, args.lines)

    report_memory(bench)
    report_kill(bench, *kill_all(bench))


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    agent_seconds = args.agent_seconds or default_agent_seconds(args.runs, args.lines)
    OUT.mkdir(exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="status-", dir=OUT))
    os.environ["ORCHESTRATOR_HOME"] = str(home)  # for the CLI subprocesses and one_pass in here
    os.environ["ORCHESTRATOR_AUTOSTART_WATCHER"] = "0"  # measured here: status alone, no background watcher
    bench = Bench(home, home / "empty-home")
    started = time.perf_counter()
    try:
        bench.empty_home.mkdir()
        header(args, agent_seconds, home)
        run(bench, args, agent_seconds)
    except KeyboardInterrupt:
        say("\ninterrupted: cleaning up")
        return 130
    finally:
        cleanup(bench)
    section("summary")
    row("benchmark wall time", f"{time.perf_counter() - started:.0f} s")
    row("state folder removed", str(not home.exists()))
    if not bench.problems:
        row("problems", "none")
        return 0
    say(f"  problems ({len(bench.problems)}):")
    for text in bench.problems[:50]:
        say(f"    - {text}")
    if len(bench.problems) > 50:
        say(f"    ... and {len(bench.problems) - 50} more")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
