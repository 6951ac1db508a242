"""The spiral families: loops that should page, each named by the signal that should catch it."""

from __future__ import annotations

import random

from orchestrator.corpus.behaviours import productive
from orchestrator.corpus.benchmark import toolout
from orchestrator.corpus.benchmark.registry import (
    Family,
    Labels,
    pick_late_or_early,
    pick_onset,
    positive_labels,
    registrar,
)
from orchestrator.corpus.timeline import Timeline

FAMILIES: list[Family] = []
family = registrar(FAMILIES)


@family(
    "versioned-repros", True, "repro_v1.py, repro_v2.py, ... rerun with tweaked flags; the real module is left alone"
)
def _versioned(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng, new_files=False)
    t, v = onset, 0
    while t < stuck + 3:
        if v < 4 and t >= onset + v * rng.uniform(6, 10):
            v += 1
            tl.write(t, f"repro_v{v}.py")
            t += 0.3
        error = rng.choice(["ValueError: unbalanced quote in 'a>b'", "KeyError: 'gh.cmd'"])
        out = toolout.traceback(f"repro_v{v}.py", 20 + v, error, workdir=tl.workdir)
        tl.bash(t, f"python repro_v{v}.py --case {rng.randint(1, 30)}", output=out, exit_code=1)
        t += rng.uniform(0.4, 0.9)
        if rng.random() < 0.3:
            tl.edit(t, f"repro_v{v}.py")
            t += 0.3
    return positive_labels("repetition", onset, soft, stuck)


@family(
    "tracked-test-rerun", True, "one tracked test file rerun again and again, with edits to one module between runs"
)
def _tracked_rerun(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    t, k = onset, 0
    while t < stuck + 3:
        case = f"test_case_{rng.randint(1, 4)}"
        out = toolout.pytest_run(rng, "tests/test_store.py", [(case, "AssertionError: assert None == 'v'", 31)], 0)
        tl.bash(t, f"pytest tests/test_store.py::{case} -x", output=out, exit_code=1)
        t += rng.uniform(0.5, 1.0)
        if k % 3 == 0:
            tl.edit(t, "src/app/store.py")
        elif k % 3 == 1:
            tl.read(t, "src/app/store.py")
        t += rng.uniform(0.3, 0.8)
        k += 1
    return positive_labels("sustained_bash", onset, soft, stuck)


@family("bg-poll-shell", True, "a backgrounded test polled with sleep and cat of its /tmp/.../tasks/*.output")
def _poll_shell(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_late_or_early(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.bash(onset, "pytest -q > /tmp/out.log 2>&1 &")
    out = f"/tmp/claude-1000/-home-dev-runs-x/tasks/b{rng.randint(100, 999)}.output"
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash(t, f"sleep {rng.choice([5, 10, 15, 30])}", output="")
        t += rng.uniform(0.2, 0.6)
        tl.bash(
            t,
            rng.choice([f"cat {out}", f"tail -20 {out}"]),
            output="============================= test session starts ==============================\ncollecting ...",
        )
        t += rng.uniform(0.2, 0.6)
    return positive_labels("polling", onset, soft, stuck)


@family(
    "bg-poll-native", True, "a background shell read with the agent's own BashOutput/TaskOutput tool, over and over"
)
def _poll_native(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_late_or_early(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.bash(onset, "npm run build &", output="Command running in background with ID: b7")
    t = onset + 0.3
    tool = rng.choice(["BashOutput", "TaskOutput"])
    while t < stuck + 3:
        tl.bash_output(
            t, "b7", output="<status>running</status>\n<stdout>\n> x@0.1.0 build\n> tsc -p .\n</stdout>", tool=tool
        )
        # every 12-36 s (the real loops in realsessions/ poll every few seconds): at 0.3-0.8 min with reads
        # between, a loop that starts in a small bucket's 4.5-minute soft band could not reach 6 polls in it
        t += rng.uniform(0.2, 0.6)
        if rng.random() < 0.3:
            tl.read(t, "src/app/cli.py")
            t += 0.3
    return positive_labels("polling", onset, soft, stuck)


@family("until-wait", True, "`until grep -q DONE log; do sleep N; done` waits that time out and are started again")
def _until(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
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
    return positive_labels("polling", onset, soft, stuck)


@family("edit-revert-pingpong", True, "one file edited, reverted, re-read and edited again; nothing new is touched")
def _pingpong(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    t, k = onset, 0
    while t < stuck + 3:
        (tl.edit, tl.read, tl.revert)[k % 3](t, "src/app/config.py")
        t += rng.uniform(0.4, 1.0)
        k += 1
    return positive_labels("repetition", onset, soft, stuck)


@family(
    "debris-flat-tree", True, "tmp_/debug_/scratch_ files pile up while varied commands run; no declared output moves"
)
def _debris(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
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
    return positive_labels("debris", onset, soft, stuck)


@family(
    "interleaved-loop", True, "run an agent-made script, peek at another file, run it again, with a new args each time"
)
def _interleaved(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    tl.write(onset, "check_parse.py")
    t = onset + 0.3
    while t < stuck + 3:
        tl.bash(t, f"python check_parse.py input_{rng.randint(1, 9)}.txt", error=rng.random() < 0.6)
        t += rng.uniform(0.3, 0.7)
        tl.read(t, rng.choice(["src/app/core.py", "src/app/cli.py", "tests/test_core.py"]))
        t += rng.uniform(0.3, 0.7)
    return positive_labels("repetition", onset, soft, stuck)
