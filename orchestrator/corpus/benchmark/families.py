"""Seeded scenario families: each writes corpus-format cases with labels.

A family is one kind of run (a spiral pattern or a hard negative); each of
its scenarios varies the bucket, the log format, the timings and the noise,
deterministically from (family, index). Labels go into `scenario.json`
beside `case.yaml`: must it page, which signal should, and from when.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.corpus.behaviours import productive, repo
from orchestrator.corpus.timeline import Timeline
from spiral.adapters import FORMATS
from spiral.settings import Settings


@dataclass(frozen=True)
class Labels:
    must_page: bool
    signal: str | None  # the signal that should name the spiral
    onset_min: float | None  # when the spiral starts (positives)
    window: tuple[float, float] | None  # when a page is right (positives)


@dataclass(frozen=True)
class Family:
    name: str
    positive: bool
    description: str
    build: Callable[[Timeline, random.Random, float, float, float], Labels | tuple[Labels, float]]


FAMILIES: list[Family] = []


def family(name: str, positive: bool, description: str) -> Callable[..., Any]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        FAMILIES.append(Family(name, positive, description, fn))
        return fn

    return register


def _onset(rng: random.Random, expected: float, soft: float) -> float:
    return round(rng.uniform(0.25 * expected, soft - 12), 1)


def _late_or_early(rng: random.Random, expected: float, soft: float) -> float:
    """A quarter of the fast-to-detect loops start only inside the soft band."""
    return _onset(rng, expected, soft) if rng.random() < 0.75 else round(soft + 0.5, 1)


def _positive(signal: str, onset: float, soft: float, stuck: float) -> Labels:
    return Labels(True, signal, onset, (max(onset, soft), stuck))


def _negative() -> Labels:
    return Labels(False, None, None, None)


# ---- positives ----------------------------------------------------------------------------


@family(
    "versioned-repros", True, "repro_v1.py, repro_v2.py, ... rerun with tweaked flags; the real module is left alone"
)
def _versioned(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng, new_files=False)
    t, v = onset, 0
    while t < stuck + 3:
        if v < 4 and t >= onset + v * rng.uniform(6, 10):
            v += 1
            tl.write(t, f"repro_v{v}.py")
            t += 0.3
        tl.bash(t, f"python repro_v{v}.py --case {rng.randint(1, 30)}", error=True, output="Traceback")
        t += rng.uniform(0.4, 0.9)
        if rng.random() < 0.3:
            tl.edit(t, f"repro_v{v}.py")
            t += 0.3
    return _positive("repetition", onset, soft, stuck)


@family(
    "tracked-test-rerun", True, "one tracked test file rerun again and again, with edits to one module between runs"
)
def _tracked_rerun(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    t, k = onset, 0
    while t < stuck + 3:
        tl.bash(t, f"pytest tests/test_store.py::test_case_{rng.randint(1, 4)} -x", error=True, output="1 failed")
        t += rng.uniform(0.5, 1.0)
        if k % 3 == 0:
            tl.edit(t, "src/app/store.py")
        elif k % 3 == 1:
            tl.read(t, "src/app/store.py")
        t += rng.uniform(0.3, 0.8)
        k += 1
    return _positive("sustained_bash", onset, soft, stuck)


@family("bg-poll-shell", True, "a backgrounded test polled with sleep and cat of its /tmp/.../tasks/*.output")
def _poll_shell(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _late_or_early(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.bash(onset, "pytest -q > /tmp/out.log 2>&1 &")
    out = f"/tmp/claude-1000/-home-dev-runs-x/tasks/b{rng.randint(100, 999)}.output"
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash(t, f"sleep {rng.choice([5, 10, 15, 30])}")
        t += rng.uniform(0.2, 0.6)
        tl.bash(t, rng.choice([f"cat {out}", f"tail -20 {out}"]), output="collecting ...")
        t += rng.uniform(0.2, 0.6)
    return _positive("polling", onset, soft, stuck)


@family(
    "bg-poll-native", True, "a background shell read with the agent's own BashOutput/TaskOutput tool, over and over"
)
def _poll_native(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _late_or_early(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.bash(onset, "npm run build &")
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash_output(t, "b7")
        t += rng.uniform(0.3, 0.8)
        if rng.random() < 0.3:
            tl.read(t, "src/app/cli.py")
            t += 0.3
    return _positive("polling", onset, soft, stuck)


@family("until-wait", True, "`until grep -q DONE log; do sleep N; done` waits that time out and are started again")
def _until(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.bash(onset, "make build > /tmp/build.log 2>&1 &")
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash(
            t,
            rng.choice(
                [
                    "until grep -q DONE /tmp/build.log; do sleep 10; done",
                    "until [ -s /tmp/build.done ]; do sleep 5; done",
                ]
            ),
            output="(timed out)",
        )
        t += rng.uniform(1.0, 2.0)
    return _positive("polling", onset, soft, stuck)


@family("edit-revert-pingpong", True, "one file edited, reverted, re-read and edited again; nothing new is touched")
def _pingpong(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    t, k = onset, 0
    while t < stuck + 3:
        (tl.edit, tl.read, tl.revert)[k % 3](t, "src/app/config.py")
        t += rng.uniform(0.4, 1.0)
        k += 1
    return _positive("repetition", onset, soft, stuck)


@family(
    "debris-flat-tree", True, "tmp_/debug_/scratch_ files pile up while varied commands run; no declared output moves"
)
def _debris(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    tl.outputs = ["src/app/core.py"]
    productive(tl, 0.5, onset, rng, new_files=False)
    t, n = onset, 0
    while t < stuck + 3:
        if n < 6 and rng.random() < 0.25:
            n += 1
            tl.write(t, f"{rng.choice(['tmp_', 'debug_', 'scratch_'])}probe{n}.py")
        else:
            tl.bash(
                t,
                rng.choice(
                    ["ls -la", "git diff", "python -c 'import app'", "env | sort", "grep -rn TODO src", "which python"]
                ),
            )
        t += rng.uniform(0.5, 1.2)
    return _positive("debris", onset, soft, stuck)


@family(
    "interleaved-loop", True, "run an agent-made script, peek at another file, run it again, with a new args each time"
)
def _interleaved(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = _onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.write(onset, "check_parse.py")
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash(t, f"python check_parse.py input_{rng.randint(1, 9)}.txt", error=rng.random() < 0.6)
        t += rng.uniform(0.3, 0.7)
        tl.read(t, rng.choice(["src/app/core.py", "src/app/cli.py", "tests/test_core.py"]))
        t += rng.uniform(0.3, 0.7)
    return _positive("repetition", onset, soft, stuck)


# ---- hard negatives --------------------------------------------------------------------------


def _end(rng: random.Random, soft: float, stuck: float) -> float:
    """Negatives end inside the soft band (most) or just past stuck (a slow but healthy run)."""
    return round(rng.uniform(soft + 1, stuck - 1) if rng.random() < 0.8 else stuck + 5, 1)


@family(
    "tdd-changing-failures", False, "edit a module, run its test, read the failure; modules rotate, failures change"
)
def _tdd(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    mods = ["core", "cli", "store", "config"]
    t, k = 0.5, 0
    while t < end:
        m = mods[(k // rng.choice([1, 2])) % 4]
        tl.edit(t, f"src/app/{m}.py")
        tl.bash(t + 0.4, f"pytest tests/test_{m}.py -q", error=k % 3 == 0, output=f"{k % 7} failed")
        if k % 4 == 3:
            tl.write(t + 0.8, f"tests/test_{m}_{k:03d}.py")
        t += rng.uniform(1.5, 2.5)
        k += 1
    return _negative(), end


@family("build-after-edit", False, "a tracked build script after every edit, edits across many files")
def _build(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        tl.write(t, f"src/app/mod_{k:03d}.py") if k % 2 == 0 else tl.edit(t, f"src/app/mod_{k - 1:03d}.py")
        if k % 4 != 3:
            tl.bash(t + 0.4, "./build.sh", output="ok")
        t += rng.uniform(1.4, 2.4)
        k += 1
    return _negative(), end


@family("ci-poll-completes", False, "a CI job polled a few times with sleep, then it finishes and work moves on")
def _ci(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    waits = sorted(rng.uniform(0.3, 0.9) * end for _ in range(rng.randint(1, 2)))
    t = 0.5
    for n, at in enumerate(waits):
        t = productive(tl, t, at, rng, prefix=f"ci{n}")
        for _ in range(rng.randint(2, 4)):  # push, then wait for the CI run to finish
            tl.bash(t, "sleep 30")
            tl.bash(t + 0.5, "gh run view --log | tail -5")
            t += 0.8
    productive(tl, t, end, rng, prefix="after")
    return _negative(), end


@family("tail-growing-log", False, "tailing a growing build log between edits of different files")
def _tail(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        tl.bash(t, "tail -n 40 build.log")
        tl.edit(t + 0.4, f"src/app/{['core', 'cli', 'store', 'config'][k % 4]}.py")
        if k % 3 == 0:
            tl.write(t + 0.8, f"src/app/step_{k:03d}.py")
        t += rng.uniform(1.5, 2.5)
        k += 1
    return _negative(), end


@family("refactor-20-files", False, "a rename across 20 files: read, edit, test, one file after another")
def _refactor(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    files = [f"src/app/part_{i:02d}.py" for i in range(20)]
    for f in files:
        tl.tracked[f] = b"x = 1\n"
    t, k = 0.5, 0
    while t < end:
        f = files[k % 20]
        tl.read(t, f)
        tl.edit(t + 0.3, f)
        if k % 5 == 4:
            tl.bash(t + 0.6, rng.choice(["pytest -q", "ruff check src", "mypy src"]))
        if k % 7 == 6:
            tl.write(t + 0.8, f"tests/test_part_{k:03d}.py")
        t += rng.uniform(1.0, 1.8)
        k += 1
    return _negative(), end


@family("git-status-between-edits", False, "git status and git diff around every edit, most of all tool calls")
def _gitstatus(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        tl.bash(t, "git status")
        tl.edit(t + 0.2, f"src/app/{['core', 'cli', 'store', 'config'][k % 4]}.py")
        tl.bash(t + 0.4, rng.choice(["git diff", "git diff --stat"]))
        if k % 3 == 0:
            tl.write(t + 0.6, f"src/app/piece_{k:03d}.py")
        t += rng.uniform(0.8, 1.4)
        k += 1
    return _negative(), end


@family("chunked-reads", False, "a large file read in chunks several times over the run, between real edits")
def _chunks(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    tl.tracked["src/app/big.py"] = b"x = 1\n" * 2000
    t, n = 0.5, 0
    while t < end:
        for i in range(rng.randint(6, 9)):
            tl.read(t + i * 0.2, "src/app/big.py")
        t = productive(tl, t + 2.5, t + rng.uniform(10, 16), rng, prefix=f"chunk{n}")
        n += 1
    return _negative(), end


@family("new-test-files", False, "one new test file after another, each run once and fixed")
def _newtests(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        name = f"tests/test_feature_{k:03d}.py"
        tl.write(t, name)
        tl.bash(t + 0.4, f"pytest {name} -q", error=rng.random() < 0.5)
        tl.edit(t + 0.8, name)
        tl.bash(t + 1.1, f"pytest {name} -q")
        t += rng.uniform(1.8, 2.8)
        k += 1
    return _negative(), end


@family(
    "retry-transient", False, "a network-flaky command retried two or three times, then it succeeds and work goes on"
)
def _retry(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    t, n = 0.5, 0
    while t < end:
        cmd = rng.choice(["pip install -e .", "npm ci", "git fetch origin", "./scripts/fetch_fixtures.sh"])
        for _ in range(rng.randint(1, 3)):
            tl.bash(t, cmd, error=True, output="Connection reset")
            t += 0.4
        tl.bash(t, cmd, output="ok")
        t = productive(tl, t + 0.5, t + rng.uniform(6, 12), rng, prefix=f"retry{n}")
        n += 1
    return _negative(), end


@family(
    "slow-but-productive", False, "a healthy run that crosses into the soft band, new files touched every few minutes"
)
def _slow(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    productive(tl, 0.5, end, rng, step=rng.uniform(1.2, 2.2))
    return _negative(), end


@family(
    "repeat-by-design",
    False,
    "a benchmarking ticket rerunning a tracked bench script by design, with per-ticket overrides",
)
def _bydesign(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = _end(rng, soft, stuck)
    tl.tracked["bench.sh"] = b"#!/bin/sh\n"
    tl.tracked["src/app/hot.py"] = b"def hot(): ...\n"
    tl.outputs = ["src/app/hot.py"]
    tl.overrides = {"signals": {"repetition": {"same_file": 40}, "sustained_bash": {"same_target": 40}}}
    t, k = 0.5, 0
    while t < end:
        tl.edit(t, "src/app/hot.py")
        tl.bash(t + 0.3, f"./bench.sh --iterations {rng.choice([100, 1000, 5000])}", output="12.3 ms/op")
        if k % 6 == 0:
            tl.write(t + 0.6, f"bench/results_{k:03d}.md")
        t += rng.uniform(0.8, 1.4)
        k += 1
    return _negative(), end


# ---- writing scenarios --------------------------------------------------------------------------


def scenario_id(fam: Family, i: int) -> str:
    return f"{fam.name}-{i:03d}"


def write_scenario(fam: Family, i: int, out: Path, seed: int = 0, settings: Settings | None = None) -> Path:
    """One scenario, timed against the buckets of `settings` (default: the built-in timings)."""
    rng = random.Random(zlib.crc32(f"{seed}:{fam.name}:{i}".encode()))
    bucket = ("small", "medium", "big")[i % 3]
    fmt = FORMATS[(i // 3) % len(FORMATS)]
    b = (settings or _default_settings()).bucket(bucket)
    expected, soft, stuck = b.expected_min, b.soft_start_min, b.stuck_min
    tl = Timeline(scenario_id(fam, i), fmt, bucket, f"{fam.description} (benchmark family {fam.name})", repo())
    built = fam.build(tl, rng, expected, soft, stuck)
    labels, end = built if isinstance(built, tuple) else (built, stuck + 3)
    tl.expect = {"spiral": labels.must_page}
    if labels.window:
        tl.expect.update(notify_after_min=labels.window[0], notify_before_min=labels.window[1])
    if labels.signal:
        tl.expect["signals"] = [labels.signal]
    folder = out / tl.case_id
    tl.write_case(folder, end)
    meta = {
        "family": fam.name,
        "positive": fam.positive,
        "must_page": labels.must_page,
        "signal": labels.signal,
        "onset_min": labels.onset_min,
        "window": list(labels.window) if labels.window else None,
        "bucket": bucket,
        "format": fmt,
    }
    (folder / "scenario.json").write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def generate(
    out: Path, per_family: int, seed: int = 0, families: list[str] | None = None, settings: Settings | None = None
) -> list[Path]:
    chosen = [f for f in FAMILIES if not families or f.name in families]
    return [write_scenario(f, i, out, seed, settings) for f in chosen for i in range(per_family)]


def _default_settings() -> Settings:
    from orchestrator.buckets import BucketsFile

    return BucketsFile().settings
