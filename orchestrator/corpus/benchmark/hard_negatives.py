"""The hard-negative families: healthy runs that look busy or repetitive and must not page."""

from __future__ import annotations

import random

from orchestrator.corpus.behaviours import productive
from orchestrator.corpus.benchmark import toolout
from orchestrator.corpus.benchmark.registry import Family, Labels, negative_labels, registrar
from orchestrator.corpus.timeline import Timeline

FAMILIES: list[Family] = []
family = registrar(FAMILIES)


def end_of(rng: random.Random, soft: float, stuck: float) -> float:
    """Negatives end inside the soft band (most) or just past stuck (a slow but healthy run)."""
    return round(rng.uniform(soft + 1, stuck - 1) if rng.random() < 0.8 else stuck + 5, 1)


@family(
    "tdd-changing-failures", False, "edit a module, run its test, read the failure; modules rotate, failures change"
)
def _tdd(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    mods = ["core", "cli", "store", "config"]
    t, k = 0.5, 0
    while t < end:
        m = mods[(k // rng.choice([1, 2])) % 4]
        tl.edit(t, f"src/app/{m}.py")
        fails = [
            (f"test_{m}_{k}_{i}", f"AssertionError: assert {k} == {i}", 10 + i)
            for i in range(k % 7 if k % 3 == 0 else 0)
        ]
        out = toolout.pytest_run(rng, f"tests/test_{m}.py", fails, 5 + k % 4, workdir=tl.workdir)
        tl.bash(t + 0.4, f"pytest tests/test_{m}.py -q", output=out, exit_code=1 if fails else 0)
        if k % 4 == 3:
            tl.write(t + 0.8, f"tests/test_{m}_{k:03d}.py")
        t += rng.uniform(1.5, 2.5)
        k += 1
    return negative_labels(), end


@family("build-after-edit", False, "a tracked build script after every edit, edits across many files")
def _build(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        changed = f"src/app/mod_{k - k % 2:03d}.py"
        tl.write(t, changed) if k % 2 == 0 else tl.edit(t, changed)
        if k % 4 != 3:
            tl.bash(t + 0.4, "./build.sh", output=toolout.build_log(rng, changed, 12 + k // 2))
        t += rng.uniform(1.4, 2.4)
        k += 1
    return negative_labels(), end


@family("ci-poll-completes", False, "a CI job polled a few times with sleep, then it finishes and work moves on")
def _ci(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    waits = sorted(rng.uniform(0.3, 0.9) * end for _ in range(rng.randint(1, 2)))
    t = 0.5
    for n, at in enumerate(waits):
        t = productive(tl, t, at, rng, prefix=f"ci{n}")
        run_id = rng.randint(9_000_000_000, 9_999_999_999)
        tl.bash(t, "git push origin HEAD", output=f"To github.com:acme/x.git\n   3f03df3..b8d614{n}  HEAD -> fix")
        polls = rng.randint(2, 4)  # then wait for the CI run to finish: queued, in progress, done
        for j in range(polls):
            tl.bash(t + 0.3, "sleep 30", output="")
            status = "queued" if j == 0 else "in_progress" if j < polls - 1 else "completed"
            text = toolout.gh_run_status(run_id, status, "success" if status == "completed" else "")
            tl.bash(t + 0.8, f"gh run view {run_id} --json status,conclusion", output=text)
            t += 0.8
    productive(tl, t, end, rng, prefix="after")
    return negative_labels(), end


@family("tail-growing-log", False, "tailing a growing build log between edits of different files")
def _tail(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        tl.bash(t, "tail -n 40 build.log", output=f"[{k + 1}/{k + 9}] compiled src/app/step_{k:03d}.py")  # it grows
        tl.edit(t + 0.4, f"src/app/{['core', 'cli', 'store', 'config'][k % 4]}.py")
        if k % 3 == 0:
            tl.write(t + 0.8, f"src/app/step_{k:03d}.py")
        t += rng.uniform(1.5, 2.5)
        k += 1
    return negative_labels(), end


@family("refactor-20-files", False, "a rename across 20 files: read, edit, test, one file after another")
def _refactor(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
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
    return negative_labels(), end


@family("git-status-between-edits", False, "git status and git diff around every edit, most of all tool calls")
def _gitstatus(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        tl.bash(t, "git status")
        tl.edit(t + 0.2, f"src/app/{['core', 'cli', 'store', 'config'][k % 4]}.py")
        tl.bash(t + 0.4, rng.choice(["git diff", "git diff --stat"]))
        if k % 3 == 0:
            tl.write(t + 0.6, f"src/app/piece_{k:03d}.py")
        t += rng.uniform(0.8, 1.4)
        k += 1
    return negative_labels(), end


@family("chunked-reads", False, "a large file read in chunks several times over the run, between real edits")
def _chunks(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    tl.tracked["src/app/big.py"] = toolout.numbered_source(2000, rng.randint(0, 99))
    t, n = 0.5, 0
    while t < end:
        size = rng.choice([150, 200, 250])
        for i in range(rng.randint(6, 9)):  # one pass through the file, chunk after chunk
            tl.read(t + i * 0.2, "src/app/big.py", offset=1 + i * size, limit=size)
        t = productive(tl, t + 2.5, t + rng.uniform(10, 16), rng, prefix=f"chunk{n}")
        n += 1
    return negative_labels(), end


@family("new-test-files", False, "one new test file after another, each run once and fixed")
def _newtests(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        name = f"tests/test_feature_{k:03d}.py"
        tl.write(t, name)
        failed = rng.random() < 0.5
        fails = [(f"test_feature_{k}", f"AssertionError: assert {k} == {k + 1}", 12)] if failed else []
        out = toolout.pytest_run(rng, name, fails, 3, workdir=tl.workdir)
        tl.bash(t + 0.4, f"pytest {name} -q", output=out, exit_code=1 if failed else 0)
        tl.edit(t + 0.8, name)
        tl.bash(t + 1.1, f"pytest {name} -q", output=toolout.pytest_run(rng, name, [], 4, workdir=tl.workdir))
        t += rng.uniform(1.8, 2.8)
        k += 1
    return negative_labels(), end


_TRANSIENT = [
    ("pip install -e .", "ERROR: Could not install packages due to an OSError: [Errno 104] Connection reset by peer"),
    ("npm ci", "npm ERR! code ECONNRESET\nnpm ERR! network aborted"),
    (
        "git fetch origin",
        "fatal: unable to access 'https://github.com/acme/x.git/': Recv failure: Connection reset by peer",
    ),
    ("./scripts/fetch_fixtures.sh", "curl: (56) Recv failure: Connection reset by peer"),
]


@family(
    "retry-transient", False, "a network-flaky command retried two or three times, then it succeeds and work goes on"
)
def _retry(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, n = 0.5, 0
    while t < end:
        cmd, error = rng.choice(_TRANSIENT)
        for _ in range(rng.randint(1, 3)):
            tl.bash(t, cmd, output=error, exit_code=1)
            t += 0.4
        tl.bash(t, cmd, output="ok")
        t = productive(tl, t + 0.5, t + rng.uniform(6, 12), rng, prefix=f"retry{n}")
        n += 1
    return negative_labels(), end


@family(
    "slow-but-productive", False, "a healthy run that crosses into the soft band, new files touched every few minutes"
)
def _slow(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    productive(tl, 0.5, end, rng, step=rng.uniform(1.2, 2.2))
    return negative_labels(), end


@family(
    "repeat-by-design",
    False,
    "a benchmarking ticket rerunning a tracked bench script by design, with per-ticket overrides",
)
def _bydesign(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
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
    return negative_labels(), end
