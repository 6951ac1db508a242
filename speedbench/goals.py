"""The speed goals of issue 17, each measured on the real code path, as a ratio to its floor.

Run:  .venv/bin/python speedbench/goals.py [--quick] [--only tick|first-pass|big-rss|status|eval]

Every goal is timed side by side with its floor (or its small twin) in the same run,
interleaved, median and spread of >= 3 repeats, because the machine is shared and noisy:

  tick        one watcher tick exactly as `watch` does it: `orchestrator.runs.watch.one_pass`
              (run lock, state.json, detector.pickle load and save, liveness) over a live run
              with 1M calls of history vs one with 1k, ~5 new calls a tick, both in this one
              long-lived process (as one watcher), alternating slices            (<= 1.5x)
  first-pass  a ~150 MB Claude stream-json log (~190k lines, ~82k calls): replay_case in a
              child process vs a child that only orjson-parses each line (loop time), and the
              first `python -m orchestrator status --json` on a cold cache vs the floor
              child (whole-process wall times); peak RSS of both                (<= 2x, < 200 MB)
  big-rss     peak RSS of replay_case over a 1M-call case (with its workspace.jsonl) and of
              the first cold `status --json` over the 1M-call live run         (< 200 MB)
  status      `python -m orchestrator status --json` over 100 live runs of ~82k calls each,
              warm (caches built, a few lines new in every log), with an empty-home floor (< 1 s)
  eval        `python -m orchestrator eval --bench --json` as a whole process   (<= 5 s)
              and our detector alone over the bench's own scenarios, in process (>= 1000/s)

--quick: 100k vs 1k calls, a 15 MB log, 10 runs of ~8k calls, `eval --bench --per-family 4`;
reports only (exit 0). Full mode exits 1 when a goal fails. Live runs point at `sleep`
children of this script as their supervisor and agent, so liveness keeps them `running`;
every goal checks they still are at the end (else the measurement is invalid and fails).
Generated data lives in a temporary folder under speedbench/out/ (gitignored), removed at
the end. Each goal ends with one summary line `NAME: VALUE (goal TARGET) PASS|FAIL`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402  (speedbench/gen.py, next to this file)

import spiral  # noqa: E402
from orchestrator.buckets import BucketsFile  # noqa: E402
from orchestrator.config import load as load_config  # noqa: E402
from orchestrator.infra.proc import ProcRef  # noqa: E402
from orchestrator.record import state_file  # noqa: E402
from orchestrator.record.layout import RunDir  # noqa: E402

OUT = HERE / "out"
PY = sys.executable
RSS_HOOK = HERE / "rsshook"  # sitecustomize.py: a child's own VmHWM, written at exit
SPACING_S = 3.0  # mean seconds between an agent's tool calls
WATCHER_TICK_S = 30.0  # the watcher's default tick (config.yaml watcher_tick_seconds)


@dataclass(frozen=True)
class Plan:
    tick_small: int
    tick_big: int
    tick_repeats: int
    ticks_per_slice: int
    log_mb: float
    log_repeats: int
    case_calls: int
    status_runs: int
    status_calls: int
    status_repeats: int
    per_family: int | None
    eval_repeats: int


FULL = Plan(1_000, 1_000_000, 5, 16, 150.0, 3, 1_000_000, 100, 82_000, 5, None, 3)
QUICK = Plan(1_000, 100_000, 3, 16, 15.0, 3, 100_000, 10, 8_200, 3, 4, 3)
GOALS = ("tick", "first-pass", "big-rss", "status", "eval")


# ---- printing ---------------------------------------------------------------------------------


def say(text: str = "") -> None:
    print(text, flush=True)


def detail(label: str, value: str) -> None:
    say(f"  {label:<52} {value}")


def spread(xs: Sequence[float], unit: str = "s", scale: float = 1.0, digits: int = 3) -> str:
    ys = [x * scale for x in xs]
    return f"median {statistics.median(ys):.{digits}f} {unit} (min {min(ys):.{digits}f}, max {max(ys):.{digits}f}, n={len(ys)})"


def count(n: float) -> str:
    """1000000 -> 1M, 100000 -> 100k, 82000 -> 82k, 8200 -> 8k."""
    if n >= 1e6 and n % 1e6 == 0:
        return f"{n / 1e6:g}M"
    return f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:g}"


@dataclass
class Outcome:
    name: str
    value: str
    goal: str
    passed: bool | None  # None: a figure reported with no goal

    def line(self) -> str:
        if self.passed is None:
            return f"{self.name}: {self.value} (no goal: reported)"
        return f"{self.name}: {self.value} (goal {self.goal}) {'PASS' if self.passed else 'FAIL'}"


@dataclass
class Bench:
    plan: Plan
    tmp: Path
    outcomes: list[Outcome] = field(default_factory=list)
    sleepers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    owner: gen.Owner | None = None
    tick_runs: dict[int, TickRun] = field(default_factory=dict)

    def result(self, o: Outcome) -> None:
        self.outcomes.append(o)
        say(o.line())

    def live_owner(self) -> gen.Owner:
        """Two `sleep` children: the supervisor and the agent every live run of this bench points at."""
        if self.owner is None:
            procs = [subprocess.Popen(["sleep", "100000"]) for _ in range(2)]
            self.sleepers += procs
            self.owner = gen.Owner(ProcRef.of(procs[0].pid), ProcRef.of(procs[1].pid))
        return self.owner


# ---- child processes -----------------------------------------------------------------------------


def hwm_mb() -> float:
    """This process's own peak RSS (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_main(mode: str, target: str) -> None:
    """Runs in a fresh interpreter: one measurement, one JSON line on stdout."""
    out: dict[str, Any] = {}
    if mode == "floor":
        t0, n = time.perf_counter(), 0
        with open(target, "rb") as fh:
            for line in fh:
                orjson.loads(line)
                n += 1
        out.update(seconds=time.perf_counter() - t0, lines=n)
    else:
        from orchestrator.corpus.replay import replay_case

        buckets = BucketsFile()
        t0 = time.perf_counter()
        res = replay_case(Path(target), buckets)
        out.update(seconds=time.perf_counter() - t0, tool_calls=res.tool_calls, spiral=res.spiral)
        out.update(signals=res.signals, failures=res.failures)
    out["hwm_mb"] = hwm_mb()
    sys.stdout.write(orjson.dumps(out).decode() + "\n")


@dataclass
class Ran:
    wall: float
    out: str
    hwm_mb: float  # the child's own VmHWM
    maxrss_mb: float  # wait4's ru_maxrss: carried over from this process at fork, so an upper bound
    workers_mb: list[float] = field(default_factory=list)  # VmHWM of each Python it started (spawned workers)

    @property
    def tree_mb(self) -> float:
        """The process and its workers: the sum of their peaks (an upper bound: peaks need not coincide)."""
        return self.hwm_mb + sum(self.workers_mb)

    def rss(self) -> str:
        if not self.workers_mb:
            return f"{self.hwm_mb:.0f} MB"
        each = ", ".join(f"{w:.0f}" for w in self.workers_mb)
        return f"{self.tree_mb:.0f} MB (main {self.hwm_mb:.0f} + {len(self.workers_mb)} workers: {each})"


def run_child(argv: list[str], env: dict[str, str] | None = None, timeout: float = 1800) -> Ran:
    """Wall time, stdout and peak RSS of one whole child process (os.wait4 for its own rusage)."""
    fd, hwm_file = tempfile.mkstemp(prefix="hwm-", dir=OUT)
    os.close(fd)
    extra = os.environ.get("PYTHONPATH")
    full_env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": str(RSS_HOOK) + (os.pathsep + extra if extra else ""),
        "SPEEDBENCH_RSS_OUT": hwm_file,
    }
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, cwd=ROOT, env=full_env, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    hwm = read_kb(Path(hwm_file))
    workers = [read_kb(f) for f in sorted(Path(hwm_file).parent.glob(Path(hwm_file).name + ".*"))]
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {p.returncode}: {errors.strip()[-800:]}")
    return Ran(wall, text, hwm, usage.ru_maxrss / 1024, workers)


def read_kb(path: Path) -> float:
    """A VmHWM file the RSS hook wrote (kB), in MB; removed once read."""
    try:
        return int(path.read_text() or 0) / 1024
    finally:
        path.unlink(missing_ok=True)


def bench_child(mode: str, target: Path) -> tuple[Ran, dict[str, Any]]:
    ran = run_child([PY, str(Path(__file__).resolve()), "--child", mode, str(target)])
    return ran, orjson.loads(ran.out.strip().splitlines()[-1])


def status_child(home: Path) -> tuple[Ran, list[dict[str, Any]]]:
    ran = run_child([PY, "-m", "orchestrator", "status", "--json"], {"ORCHESTRATOR_HOME": str(home)})
    return ran, json.loads(ran.out)["runs"]


@contextmanager
def home_env(home: Path) -> Iterator[None]:
    """ORCHESTRATOR_HOME for in-process calls (orchestrator/infra/paths.py reads it on every call)."""
    before = os.environ.get("ORCHESTRATOR_HOME")
    os.environ["ORCHESTRATOR_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("ORCHESTRATOR_HOME", None)
        else:
            os.environ["ORCHESTRATOR_HOME"] = before


def bad_rows(rows: list[dict[str, Any]], expect: int, when: str) -> list[str]:
    """Why these status rows are not `expect` healthy running runs (empty when they are)."""
    bad = [
        f"{when}: {r['id']}: {r['state']} ({r['reason']}), signals {r['signals']}, error {r['error']}"
        for r in rows
        if r["state"] != "running" or r["signals"] or r["error"]
    ]
    if len(rows) != expect:
        bad.append(f"{when}: {len(rows)} runs in status, {expect} expected")
    return bad


def not_running(run_dirs: Sequence[RunDir]) -> list[str]:
    out = []
    for rd in run_dirs:
        r = state_file.read(rd)
        if r.state != "running":
            out.append(f"{rd.run_id} is {r.state}: {r.reason}")
    return out


# ---- live runs ---------------------------------------------------------------------------------


@dataclass
class LiveRun:
    home: Path
    rd: RunDir
    session: gen.ClaudeSession
    info: gen.LogInfo


def make_live_run(
    bench: Bench, home: Path, run_id: str, sizes: gen.Sizes, *, calls: int | None = None, mb: float | None = None
) -> LiveRun:
    """A live run folder as launch + supervisor leave it, its log ending about now."""
    rd = gen.new_run_dir(home, run_id)
    session = gen.ClaudeSession(str(rd.clone), sizes, seed=zlib.crc32(run_id.encode()))
    est_calls = calls if calls is not None else int((mb or 0) * 1e6 / 1500)
    span = est_calls * SPACING_S
    start = time.time() - span * 1.1 - 60
    info = gen.write_log(
        rd.path,
        session,
        start=start,
        spacing=SPACING_S,
        calls=calls,
        target_bytes=None if mb is None else int(mb * 1e6),
        workspace=calls is not None,
    )
    settings = gen.long_run_settings(span * 1.2 / 60)
    gen.write_live_record(rd, start, bench.live_owner(), settings)
    return LiveRun(home, rd, session, info)


def describe(info: gen.LogInfo) -> str:
    days = (info.ended_at - info.started_at) / 86400
    ws = f", {info.snapshots:,} snapshots" if info.snapshots else ""
    return (
        f"{info.bytes / 1e6:.1f} MB, {info.lines:,} lines ({info.bytes / info.lines:.0f} B/line), "
        f"{info.tool_calls:,} calls{ws}, {days:.1f} days of run time"
    )


def hardlink_case(bench: Bench, run: LiveRun, name: str) -> Path:
    """A case folder holding the live run's files (hard links: no copy), replayable by replay_case."""
    folder = bench.tmp / name
    folder.mkdir()
    for f in ("events.jsonl", "workspace.jsonl", "tracked.txt"):
        os.link(run.rd.path / f, folder / f)
    record = state_file.read(run.rd)
    assert record.settings is not None
    info = gen.LogInfo(run.info.events, 0, 0, 0, 0, run.info.started_at, time.time())
    gen.write_case_yaml(folder, name, info, str(run.rd.clone), record.settings)
    return folder


# ---- 1. tick ---------------------------------------------------------------------------------


@dataclass
class TickRun:
    live: LiveRun
    catch_up_s: float
    ticks: list[list[float]] = field(default_factory=list)  # per repeat, per tick seconds
    snaps_due: int = 0
    writes: int = 0  # timed ticks that wrote detector.pickle
    vticks: int = 0  # ticks on this side's watcher clock
    last_end: float = 0.0


def tick_run(bench: Bench, calls: int) -> TickRun:
    """The live run with `calls` of history, brought up to date by one untimed pass (cached per bench)."""
    if calls not in bench.tick_runs:
        home = bench.tmp / f"tick-{count(calls)}"
        t0 = time.perf_counter()
        live = make_live_run(bench, home, f"tick-{count(calls)}", gen.SMALL, calls=calls)
        gen_s = time.perf_counter() - t0
        from orchestrator.runs.watch import one_pass

        with home_env(home):
            t0 = time.perf_counter()
            one_pass(BucketsFile(), load_config(), notifier=None)
            catch_up = time.perf_counter() - t0
        detail(f"{count(calls)} history: generated in {gen_s:.1f} s", describe(live.info))
        detail(f"{count(calls)} history: untimed catch-up pass", f"{catch_up:.1f} s")
        bench.tick_runs[calls] = TickRun(live, catch_up, last_end=time.time())
    return bench.tick_runs[calls]


class WatcherClock:
    """The monotonic clock the code sees, moved on WATCHER_TICK_S per tick of a side, as if the watcher slept.

    The ticks run back to back to keep the bench short; anything the code does once per so many
    seconds (the cache write, at most once per evaluator.PERSIST_S per run) then happens as often
    per tick as in a real watcher ticking every WATCHER_TICK_S. Each side has its own count (one
    watcher passes over both runs once a tick). Replaced: time.monotonic, and any reference to it
    the kept-state object (monitor.KEPT, where it exists) holds. The run clock (time.time) is real.
    """

    def __init__(self) -> None:
        self.real = time.monotonic
        self.offset = 0.0
        self.patched: list[tuple[object, str]] = []
        self.kept_was: bool | None = None

    def now(self) -> float:
        return self.real() + self.offset

    def __enter__(self) -> WatcherClock:
        from orchestrator.runs import monitor

        time.monotonic = self.now
        kept = getattr(monitor, "KEPT", None)
        for name, value in list(vars(kept).items()) if kept is not None else []:
            if value is self.real:
                setattr(kept, name, self.now)
                self.patched.append((kept, name))
        self.kept_was = getattr(kept, "keep", None)
        if self.kept_was is not None:
            kept.keep = True  # as `watch` sets it: states stay in memory between ticks
        return self

    def __exit__(self, *exc: object) -> None:
        from orchestrator.runs import monitor

        time.monotonic = self.real
        for obj, name in self.patched:
            setattr(obj, name, self.real)
        if self.kept_was is not None:
            monitor.KEPT.keep = self.kept_was

    def tick(self, run: TickRun) -> None:
        run.vticks += 1
        self.offset = run.vticks * WATCHER_TICK_S

    def where(self) -> str:
        return ", ".join(["time.monotonic", *(f"{type(o).__name__}.{n}" for o, n in self.patched)])


def one_tick(run: TickRun, buckets: BucketsFile, clock: WatcherClock) -> float:
    """Append ~5 calls (a snapshot every 3rd tick), then time one `watch.one_pass` on that side's home."""
    from orchestrator.runs.watch import one_pass

    now = time.time()
    run.snaps_due += 1
    gen.append_calls(run.live.rd, run.live.session, 5, run.last_end, now, snapshot=run.snaps_due % 3 == 0)
    run.last_end = now
    before = pickle_stamp(run.live.rd)
    clock.tick(run)
    with home_env(run.live.home):
        cfg = load_config()
        t0 = time.perf_counter()
        one_pass(buckets, cfg, notifier=None)
        took = time.perf_counter() - t0
    run.writes += pickle_stamp(run.live.rd) != before
    return took


def pickle_stamp(rd: RunDir) -> tuple[int, int] | None:
    try:
        st = rd.detector_cache.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_ino


def goal_tick(bench: Bench) -> None:
    plan = bench.plan
    say(
        f"\n== tick: one watcher pass (watch.one_pass) with {count(plan.tick_big)} vs {count(plan.tick_small)} calls =="
    )
    small, big = tick_run(bench, plan.tick_small), tick_run(bench, plan.tick_big)
    buckets = BucketsFile()
    with WatcherClock() as clock:
        detail("watcher clock (30 s a tick) replaces", clock.where())
        for side in (small, big):
            one_tick(side, buckets, clock)  # warm: first tick after the catch-up
            side.writes = 0
        for rep in range(plan.tick_repeats):
            order = [small, big] if rep % 2 == 0 else [big, small]
            for side in order:
                side.ticks.append([one_tick(side, buckets, clock) for _ in range(plan.ticks_per_slice)])
    per_rep = {id(s): [statistics.fmean(t) for t in s.ticks] for s in (small, big)}  # amortized: writes included
    ratios = [b / s for s, b in zip(per_rep[id(small)], per_rep[id(big)], strict=True)]
    for side, n in ((small, plan.tick_small), (big, plan.tick_big)):
        detail(f"tick after {count(n)} calls (mean tick of each slice)", spread(per_rep[id(side)], "ms", 1000, 1))
        pickle = side.live.rd.detector_cache.stat().st_size
        events = side.live.rd.events.stat().st_size
        every = [t * 1000 for ts in side.ticks for t in ts]
        detail("  every tick: median / max", f"{statistics.median(every):.1f} / {max(every):.1f} ms")
        detail("  ticks that wrote detector.pickle", f"{side.writes} of {len(every)}")
        detail("  detector.pickle / events.jsonl at the end", f"{pickle / 1e6:.1f} MB / {events / 1e6:.0f} MB")
    detail("ratio per repeat (big / small)", ", ".join(f"{r:.2f}" for r in ratios))
    invalid = not_running([small.live.rd, big.live.rd])
    ratio = statistics.median(ratios)
    name = f"tick {count(plan.tick_big)}/{count(plan.tick_small)}"
    if invalid:
        say("  !! invalid: a run did not stay running: " + "; ".join(invalid))
        bench.result(Outcome(name, f"invalid ({'; '.join(invalid)})", "<= 1.5x", False))
        return
    bench.result(Outcome(name, f"{ratio:.2f}x", "<= 1.5x", ratio <= 1.5))


# ---- 2. first pass near the parse floor ----------------------------------------------------------


def goal_first_pass(bench: Bench) -> None:
    plan = bench.plan
    mb = f"{plan.log_mb:g}MB"
    say(f"\n== first pass: a {mb} Claude stream-json log, replay and cold status vs an orjson-only child ==")
    home = bench.tmp / "first-pass"
    t0 = time.perf_counter()
    live = make_live_run(bench, home, "first-pass", gen.REAL, mb=plan.log_mb)
    case = hardlink_case(bench, live, "first-pass-case")
    detail(f"log generated in {time.perf_counter() - t0:.1f} s", describe(live.info))
    floors: list[tuple[Ran, dict[str, Any]]] = []
    replays: list[tuple[Ran, dict[str, Any]]] = []
    statuses: list[Ran] = []
    problems: list[str] = []
    for rep in range(plan.log_repeats):
        steps: list[Callable[[], None]] = [
            lambda: floors.append(bench_child("floor", live.info.events)),
            lambda: replays.append(bench_child("replay", case)),
            lambda: statuses.append(cold_status(home, [live.rd], problems)),
        ]
        for step in steps[rep % 3 :] + steps[: rep % 3]:  # rotate the order between repeats
            step()
    for _, r in replays:
        if r["spiral"] or r["tool_calls"] != live.info.tool_calls or r["failures"]:
            problems.append(f"replay: {r} (generated {live.info.tool_calls} calls)")
    loop = [f["seconds"] for _, f in floors]
    floor_wall = [ran.wall for ran, _ in floors]
    replay_s = [r["seconds"] for _, r in replays]
    status_wall = [s.wall for s in statuses]
    detail("floor child: orjson.loads of every line, loop only", spread(loop))
    detail("floor child: whole process wall", spread(floor_wall))
    detail("replay_case in a child (replay call only)", spread(replay_s))
    detail("status --json, cold cache (whole process wall)", spread(status_wall))
    detail("lines parsed by the floor", f"{floors[0][1]['lines']:,}")
    detail("peak RSS (VmHWM): floor / replay / status", rss_triple(floors, replays, statuses))
    detail("status wait4 ru_maxrss (upper bound, incl. fork)", spread([s.maxrss_mb for s in statuses], "MB", 1, 0))
    r_ratio = statistics.median([r / f for r, f in zip(replay_s, loop, strict=True)])
    s_ratio = statistics.median([s / f for s, f in zip(status_wall, floor_wall, strict=True)])
    peak = max([r.tree_mb for r, _ in replays] + [s.tree_mb for s in statuses])
    if problems:
        say(f"  !! invalid ({len(problems)} problems): " + "; ".join(problems[:5]))
    ok = not problems
    bench.result(Outcome(f"first pass replay {mb}/orjson", f"{r_ratio:.1f}x", "<= 2x", ok and r_ratio <= 2))
    bench.result(Outcome(f"first status cold {mb}/orjson", f"{s_ratio:.1f}x", "<= 2x", ok and s_ratio <= 2))
    bench.result(Outcome("first pass peak RSS", f"{peak:.0f} MB", "< 200 MB", ok and peak < 200))
    fresh_content(bench, home)


def fresh_content(bench: Bench, home: Path) -> None:
    """The same replay over a log whose shell commands are all new texts (gen.FRESH): reported, no goal."""
    plan = bench.plan
    live = make_live_run(bench, home, "first-pass-fresh", gen.FRESH, mb=plan.log_mb)
    case = hardlink_case(bench, live, "first-pass-fresh-case")
    ratios = []
    for _ in range(plan.log_repeats):
        _, floor = bench_child("floor", live.info.events)
        _, replay = bench_child("replay", case)
        ratios.append(replay["seconds"] / floor["seconds"])
    detail("fresh-content log: replay / orjson per repeat", ", ".join(f"{r:.1f}x" for r in ratios))
    ratio = statistics.median(ratios)
    bench.result(Outcome(f"first pass replay {plan.log_mb:g}MB fresh/orjson", f"{ratio:.1f}x", "-", None))


def rss_triple(floors: list[tuple[Ran, Any]], replays: list[tuple[Ran, Any]], statuses: list[Ran]) -> str:
    def m(xs: list[float]) -> str:
        return f"{max(xs):.0f}"

    return (
        f"{m([r.hwm_mb for r, _ in floors])} / {m([r.hwm_mb for r, _ in replays])} / "
        f"{m([s.tree_mb for s in statuses])} MB (max of repeats; status: with its workers, summed)"
    )


def cold_status(home: Path, run_dirs: Sequence[RunDir], problems: list[str]) -> Ran:
    """The first `status --json` of a home whose runs have no detector.pickle yet."""
    for rd in run_dirs:
        rd.detector_cache.unlink(missing_ok=True)
    ran, rows = status_child(home)
    problems.extend(bad_rows(rows, len(run_dirs), "cold status"))
    return ran


# ---- 3. peak RSS of a 1M-call first pass ------------------------------------------------------------


def goal_big_rss(bench: Bench) -> None:
    plan = bench.plan
    n = count(plan.case_calls)
    say(f"\n== big-rss: first pass over {n} calls (replay_case with workspace.jsonl; cold status --json) ==")
    run = tick_run(bench, plan.case_calls)
    case = hardlink_case(bench, run.live, "big-rss-case")
    ws = (case / "workspace.jsonl").stat().st_size
    detail(
        "case: events.jsonl / workspace.jsonl", f"{run.live.rd.events.stat().st_size / 1e6:.0f} MB / {ws / 1e6:.0f} MB"
    )
    ran, res = bench_child("replay", case)
    problems: list[str] = []
    if res["spiral"] or res["failures"] or res["tool_calls"] < plan.case_calls:
        problems.append(f"replay: spiral {res['spiral']}, failures {res['failures']}, {res['tool_calls']} calls")
    detail("replay_case: time / peak RSS (VmHWM)", f"{res['seconds']:.1f} s / {ran.rss()}")
    st = cold_status(run.live.home, [run.live.rd], problems)
    detail("status --json cold: wall / peak RSS (VmHWM)", f"{st.wall:.1f} s / {st.rss()}")
    detail("status wait4 ru_maxrss (upper bound, incl. fork)", f"{st.maxrss_mb:.0f} MB")
    peak = max(ran.tree_mb, st.tree_mb)
    if problems:
        say(f"  !! invalid ({len(problems)} problems): " + "; ".join(problems[:5]))
    bench.result(Outcome(f"first pass {n} calls peak RSS", f"{peak:.0f} MB", "< 200 MB", not problems and peak < 200))


# ---- 4. status over many live runs -----------------------------------------------------------------

PLACEHOLDER = "/speedbench-clone-placeholder/clone"


def many_runs(bench: Bench, home: Path, runs: int, calls: int) -> tuple[list[LiveRun], gen.LogInfo]:
    """`runs` live runs from one generated log: each copy has its own clone path substituted in."""
    template = bench.tmp / "template"
    template.mkdir()
    session = gen.ClaudeSession(PLACEHOLDER, gen.SMALL, seed=5)
    span = calls * SPACING_S
    start = time.time() - span * 1.1 - 60
    info = gen.write_log(template, session, start=start, spacing=SPACING_S, calls=calls)
    events, workspace = (template / "events.jsonl").read_bytes(), (template / "workspace.jsonl").read_bytes()
    settings = gen.long_run_settings(span * 1.2 / 60)
    out = []
    for k in range(runs):
        rd = gen.new_run_dir(home, f"run-{k:03d}")
        clone = str(rd.clone).encode()
        rd.events.write_bytes(events.replace(PLACEHOLDER.encode(), clone))
        rd.workspace.write_bytes(workspace.replace(PLACEHOLDER.encode(), clone))
        gen.write_live_record(rd, start, bench.live_owner(), settings)
        s = gen.ClaudeSession(str(rd.clone), gen.SMALL, seed=100 + k)
        s.n = calls
        out.append(LiveRun(home, rd, s, info))
    shutil.rmtree(template)
    return out, info


def goal_status(bench: Bench) -> None:
    plan = bench.plan
    name = f"status {plan.status_runs} runs x {count(plan.status_calls)} calls"
    say(f"\n== {name}: `python -m orchestrator status --json`, warm ==")
    home, empty = bench.tmp / "status-home", bench.tmp / "empty-home"
    empty.mkdir()
    t0 = time.perf_counter()
    runs, info = many_runs(bench, home, plan.status_runs, plan.status_calls)
    detail(f"generated {plan.status_runs} runs in {time.perf_counter() - t0:.1f} s, each", describe(info))
    problems: list[str] = []
    rds = [r.rd for r in runs]
    cold = cold_status(home, rds, problems)  # also the untimed cache-building pass the warm calls need
    detail("first status --json, cold (builds every cache)", f"{cold.wall:.1f} s, peak RSS {cold.rss()}")
    warm: list[float] = []
    floor: list[float] = []
    last = time.time()
    for rep in range(plan.status_repeats):
        now = time.time()
        for r in runs:  # as between two watcher ticks: every log gained a few lines
            gen.append_calls(r.rd, r.session, 3, last, now, snapshot=rep % 2 == 0)
        last = now
        pair: list[Callable[[], None]] = [
            lambda: floor.append(status_child(empty)[0].wall),
            lambda: warm.append(warm_status(home, len(runs), problems)),
        ]
        for step in pair if rep % 2 == 0 else pair[::-1]:
            step()
    detail("status --json over an empty home (the floor)", spread(floor))
    detail("status --json warm, a few new lines in every log", spread(warm))
    detail(
        "  minus the floor, per run",
        f"{(statistics.median(warm) - statistics.median(floor)) / len(runs) * 1000:.1f} ms",
    )
    problems += not_running(rds)
    if problems:
        say(f"  !! invalid ({len(problems)} problems): " + "; ".join(problems[:5]))
    value = statistics.median(warm)
    bench.result(Outcome(name, f"{value:.2f} s", "< 1 s", not problems and value < 1))


def warm_status(home: Path, runs: int, problems: list[str]) -> float:
    ran, rows = status_child(home)
    problems.extend(bad_rows(rows, runs, "warm status"))
    return ran.wall


# ---- 5. eval --bench ---------------------------------------------------------------------------------


def goal_eval(bench: Bench) -> None:
    plan = bench.plan
    extra = ["--per-family", str(plan.per_family)] if plan.per_family else []
    say(f"\n== eval: `python -m orchestrator eval --bench --json {' '.join(extra)}`, and our detector alone ==")
    walls: list[float] = []
    scenarios = 0
    for _ in range(plan.eval_repeats):
        ran = run_child([PY, "-m", "orchestrator", "eval", "--bench", "--json", *extra])
        report = json.loads(ran.out)
        scenarios = report.get("scenarios", 0)
        walls.append(ran.wall)
        detail("  its own timing", str(report.get("timing", "(none)")))
    detail(f"eval --bench whole process ({scenarios} scenarios)", spread(walls))
    whole = statistics.median(walls)
    bench.result(Outcome("eval --bench whole", f"{whole:.1f} s", "<= 5 s", whole <= 5))
    try:
        rate = ours_alone(plan.per_family or 40)
    except Exception as exc:  # the runner is being reworked: say what moved rather than crash
        why = f"{type(exc).__name__}: {exc}"
        say(f"  !! not measurable: {why}")
        bench.result(Outcome("eval --bench our detector alone", f"not measurable: {why}", ">= 1000/s", False))
        return
    bench.result(Outcome("eval --bench our detector alone", f"{rate:.0f} scenarios/s", ">= 1000/s", rate >= 1000))


def ours_alone(per_family: int) -> float:
    """Our detector alone on the bench's own scenarios, one process: scenarios per CPU second.

    In memory and CPU-bound, so CPU time is its wall time on an idle machine; on a shared one it
    leaves out the time other processes held the CPU (the wall rate is printed too).

    The scenarios are made as runner.run makes them (scenario.make per family and index, in memory)
    and timed through runner.ours_alone (the OURS variant, one walk each). A runner without those
    names: its case folders (families.generate) replayed through walk_recording, as it did before.
    """
    from orchestrator.corpus.benchmark import families, runner
    from spiral.settings import Settings

    raw = BucketsFile().raw
    try:
        from orchestrator.corpus.benchmark import scenario

        make, alone = scenario.make, runner.ours_alone
    except (ImportError, AttributeError) as exc:
        say(f"  (runner.ours_alone / scenario.make not found: {exc}; replaying case folders instead)")
        return ours_from_files(per_family)
    settings = Settings.from_mapping(raw)
    t0 = time.perf_counter()
    made = [make(fam, i, 0, settings) for fam in families.FAMILIES for i in range(per_family)]
    made_s = time.perf_counter() - t0
    _clear_caches()
    t0 = time.perf_counter()
    n, cpu = alone(made, raw)
    wall = time.perf_counter() - t0
    detail(f"runner.ours_alone over {n} scenarios (made in {made_s:.1f} s)", f"wall {wall:.2f} s, CPU {cpu:.2f} s")
    detail("  per wall second (counts other processes' load)", f"{n / wall:.0f} scenarios/s")
    detail("  per CPU second of this process (the goal's figure)", f"{n / cpu:.0f} scenarios/s")
    return n / cpu


def ours_from_files(per_family: int) -> float:
    """The bench's case folders (families.generate, as runner.run wrote them), each replayed once through OURS."""
    from orchestrator.corpus.benchmark import families, runner
    from orchestrator.corpus.replay import walk_recording
    from orchestrator.record.case import load_case
    from orchestrator.record.layout import CaseFiles
    from orchestrator.record.run_files import LineCounter, distinct_snapshots, read_events, read_snapshots, read_tracked
    from spiral.adapters import make_adapter
    from spiral.settings import Settings, merge

    raw = BucketsFile().raw
    variants = runner.variants(raw)
    label, ours_raw, ours_over = variants[0]
    if label != getattr(runner, "OURS", label):
        raise RuntimeError(f"runner.variants()[0] is {label!r}, not {runner.OURS!r}")
    work = Path(tempfile.mkdtemp(prefix="ours-", dir=OUT))
    try:
        folders = families.generate(work, per_family, 0, settings=Settings.from_mapping(raw))
        _clear_caches()
        t0 = time.process_time()
        loaded = []
        for folder in folders:
            case = load_case(folder)
            files, counter = CaseFiles(folder), LineCounter()
            adapter = make_adapter(case.format, case.workdir)
            timeline = [(ts, adapter.feed(ts, data)) for ts, data in read_events(files.events, counter)]
            snaps = distinct_snapshots(read_snapshots(files.workspace, counter))
            merged = merge(case.overrides or {}, ours_over) if ours_over else case.overrides
            settings = Settings.from_mapping(ours_raw, merged or None)
            loaded.append((case, settings, timeline, snaps, read_tracked(files.tracked)))
        read_s = time.process_time() - t0
        t0 = time.process_time()
        paged = 0
        for case, settings, timeline, snaps, tracked in loaded:
            scope = getattr(case, "scope", None)
            walk = walk_recording(
                settings,
                bucket=case.bucket,
                start=case.started_at,
                end=case.ended_at,
                timeline=timeline,
                snaps=snaps,
                tracked=tracked,
                outputs=case.outputs,
                workdir=case.workdir,
                **({"scope": scope} if scope else {}),
            )
            paged += walk.notified is not None
        walk_s = time.process_time() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = len(folders)
    detail(
        f"our detector alone: {n} scenarios, {paged} paged", f"walk {walk_s:.2f} CPU s, read + adapt {read_s:.2f} CPU s"
    )
    detail("  with reading and adapting each case", f"{n / (walk_s + read_s):.0f} scenarios/s")
    return n / walk_s


def _clear_caches() -> None:
    """Start like a fresh process: the shell-analysis LRU caches and the fingerprints' shared memos
    empty (where they exist)."""
    try:
        from spiral import shellcmd

        shellcmd._analyse_cached.cache_clear()
        shellcmd.unwrap.cache_clear()
    except (ImportError, AttributeError):
        pass
    try:
        from spiral import fingerprint

        fingerprint._SHARED.clear()
    except (ImportError, AttributeError):
        pass


# ---- driver ------------------------------------------------------------------------------------------


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def git_state() -> str:
    def git(*args: str) -> str:
        p = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return p.stdout.strip() if p.returncode == 0 else ""

    dirty = [ln for ln in git("status", "--porcelain", "--untracked-files=no").splitlines() if ln]
    return f"git {git('rev-parse', '--short', 'HEAD') or 'unknown'}" + (
        f" + {len(dirty)} uncommitted changed files" if dirty else " (clean)"
    )


HOST_LOOP = 2_000_000  # iterations of the interpreter loop below
HOST_LINES = 50_000  # orjson.loads of one ~800-byte line, as many times


def host_speed() -> str:
    """How fast this machine runs a fixed interpreted loop and a fixed C parse loop (medians of 3).

    The ratios of the goals are measured side by side, but three goals are absolute (status over
    100 runs, eval whole, our detector alone): these two figures tell a slower host from a slower
    build when two runs on different days disagree.
    """
    line = orjson.dumps({"ts": "2026-01-01T00:00:00.000Z", "data": {"type": "user", "text": "x" * 700}})
    loop_s, parse_s = [], []
    for _ in range(3):
        t0, x = time.perf_counter(), 0
        for i in range(HOST_LOOP):
            x += i
        loop_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(HOST_LINES):
            orjson.loads(line)
        parse_s.append(time.perf_counter() - t0)
    return (
        f"interpreted loop ({HOST_LOOP:,} additions) {statistics.median(loop_s) * 1e3:.0f} ms, "
        f"orjson.loads of a {len(line)}-byte line x {HOST_LINES:,} {statistics.median(parse_s) * 1e3:.0f} ms"
    )


def header(plan: Plan, quick: bool) -> None:
    say(
        "speedbench/goals.py"
        + (" --quick" if quick else "")
        + f"  ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
    )
    usable = len(os.sched_getaffinity(0))
    say(f"  machine: {cpu_model()}, {os.cpu_count()} cores ({usable} usable), load {os.getloadavg()[0]:.1f}")
    say(f"  host   : {host_speed()}")
    say(f"  python : {platform.python_implementation()} {platform.python_version()}, orjson {orjson.__version__}")
    say(f"  project: {git_state()}")
    say(f"  spiral : {spiral.MODE}")  # the detector's build: compiled (setup.py: mypyc) or pure Python, and why
    say(f"  plan   : {plan}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smaller inputs, under 2 minutes; always exits 0")
    p.add_argument("--only", choices=GOALS, action="append", help="run only this goal (repeatable)")
    p.add_argument("--child", nargs=2, metavar=("MODE", "TARGET"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


RUNNERS: dict[str, Callable[[Bench], None]] = {
    "tick": goal_tick,
    "first-pass": goal_first_pass,
    "big-rss": goal_big_rss,
    "status": goal_status,
    "eval": goal_eval,
}


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.child:
        child_main(*args.child)
        return 0
    plan = QUICK if args.quick else FULL
    os.environ["ORCHESTRATOR_AUTOSTART_WATCHER"] = "0"
    header(plan, args.quick)
    started = time.perf_counter()
    OUT.mkdir(exist_ok=True)
    bench = Bench(plan, Path(tempfile.mkdtemp(prefix="goals-", dir=OUT)))
    try:
        for name in args.only or GOALS:
            try:
                RUNNERS[name](bench)
            except Exception as exc:
                say(f"  !! {name}: {type(exc).__name__}: {exc}")
                bench.result(Outcome(name, f"error: {type(exc).__name__}", "runs to the end", False))
    finally:
        for p in bench.sleepers:
            p.kill()
            p.wait()
        shutil.rmtree(bench.tmp, ignore_errors=True)
    say(f"\n== summary ({time.perf_counter() - started:.0f} s; temp folder removed: {not bench.tmp.exists()}) ==")
    for o in bench.outcomes:
        say(o.line())
    failed = [o for o in bench.outcomes if o.passed is False]
    return 0 if args.quick or not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
