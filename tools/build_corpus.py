"""Build the scripted cases of corpus/ (deterministic: same output every run).

    .venv/bin/python tools/build_corpus.py [OUT_DIR]      # default: corpus/

Each case re-enacts a run described in the seed design or a hard negative a
naive detector trips on. The test suite rebuilds them into a temp folder and
checks the committed corpus still matches byte for byte.
"""

from __future__ import annotations

import random
import shutil
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from orchestrator.corpus.behaviours import files_with, productive, repo
from orchestrator.corpus.timeline import Timeline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_real_shapes import REAL_SHAPES

ROOT = Path(__file__).resolve().parent.parent

# ---- the seed's three spirals and its healthy counter-case -------------------


def spiral_001(out: Path) -> None:
    rng = random.Random(1)
    tl = Timeline(
        "spiral-001-fixture-shim",
        "claude-stream-json",
        "medium",
        "Seed spiral 1: the library fix (mergediag/resolve.py) was right by minute 5; the agent then "
        "debugged a gh.cmd test-fixture shim for the rest of the run with tmp_debug_mc.py and "
        "tmp_debug_mc2.py, re-running them with new arguments and more prints. Debris plus an "
        "untracked script rerun loop must page in the soft band.",
        repo(mergediag__resolve__py=b"def resolve(): ...\n", tests__fixtures__gh_cmd=b"@echo off\n"),
        outputs=["mergediag/resolve.py"],
        expect={"spiral": True, "notify_after_min": 70, "notify_before_min": 85, "signals": ["debris", "repetition"]},
    )
    tl.read(0.5, "mergediag/resolve.py")
    tl.edit(2.0, "mergediag/resolve.py")
    tl.bash(3.0, "pytest tests -q")
    tl.edit(4.5, "mergediag/resolve.py")
    tl.bash(5.0, "pytest tests -q", error=True, output="1 failed: test_gh_shim_args")
    tl.read(6.0, "tests/fixtures/gh.cmd")
    tl.edit(7.0, "tests/fixtures/gh.cmd")
    tl.write(8.0, "tmp_debug_mc.py")
    t = 8.5
    script = "tmp_debug_mc.py"
    while t < 88:
        if t > 30 and script == "tmp_debug_mc.py":
            tl.write(t, "tmp_debug_mc2.py")
            script = "tmp_debug_mc2.py"
            t += 0.5
        args = rng.choice(["'a>b'", "'x<y'", "a,b,c", "--raw 'a>b,c'", "--quote", ""])
        tl.bash(t, f"python {script} {args}".strip(), error=rng.random() < 0.5, output="argv mismatch")
        t += rng.uniform(0.3, 0.6)
        if rng.random() < 0.35:
            tl.edit(t, script)
            t += rng.uniform(0.2, 0.5)
        elif rng.random() < 0.2:
            tl.read(t, "tests/fixtures/gh.cmd")
            t += 0.3
    tl.write_case(out / tl.case_id, 88)


def spiral_002(out: Path) -> None:
    rng = random.Random(2)
    tl = Timeline(
        "spiral-002-tracked-test-loop",
        "claude-transcript",
        "medium",
        "Seed spiral 2: the orchestrator change was right in the first half; the agent then reran "
        "one tracked test (test.sh on test_overlap_queuing_emits_queued_event) about 15 times, "
        "editing orchestrator.sh and tailing a log between runs, and left debug_ files behind. "
        "No throwaway script is rerun, so the page rests on sustained tracked-test repetition.",
        repo(
            orchestrator_sh=b"#!/bin/bash\n",
            test_sh=b'#!/bin/bash\npytest "$@"\n',
            tests__test_batch_parallel__py=b"def test_overlap_queuing_emits_queued_event(): ...\n",
        ),
        outputs=["orchestrator.sh", "tests/test_batch_parallel.py"],
        expect={
            "spiral": True,
            "notify_after_min": 70,
            "notify_before_min": 85,
            "signals": ["repetition", "sustained_bash"],
        },
    )
    tl.tracked["orchestrator.sh"] = tl.tracked.pop("orchestrator_sh")
    tl.tracked["test.sh"] = tl.tracked.pop("test_sh")
    t = productive(tl, 0.5, 40, rng, prefix="overlap")
    tl.edit(t, "orchestrator.sh")
    tl.edit(t + 1, "tests/test_batch_parallel.py")
    t += 2
    test = "./test.sh tests/test_batch_parallel.py::test_overlap_queuing_emits_queued_event"
    n = 0
    while t < 90:
        n += 1
        tl.bash(t, test, error=True, output="FAILED: expected queued event")
        t += rng.uniform(0.6, 1.0)
        step = n % 4
        if step == 0:
            tl.edit(t, "orchestrator.sh")
        elif step == 1:
            tl.bash(t, "tail -50 /tmp/orch-test.log")
        elif step == 2:
            tl.read(t, "orchestrator.sh")
        else:
            tl.bash(t, test + " -x", error=True, output="FAILED")
        t += rng.uniform(0.6, 1.0)
        if n == 8:
            tl.write(t, "debug_overlap.sh")
        if n == 12:
            tl.appear(t, "debug_out.txt")
        if n == 16:
            tl.write(t, "debug_overlap_check.py")
    tl.write_case(out / tl.case_id, 90)


def spiral_003(out: Path) -> None:
    rng = random.Random(3)
    tl = Timeline(
        "spiral-003-bg-polling",
        "claude-stream-json",
        "small",
        "Seed spiral 3: the code change landed in the first 30 tool calls and a background test "
        "was started; the agent then spent 30 minutes alternating `sleep 5` and `cat` of the "
        "task's /tmp/.../tasks/*.output file. Only the polling signal can see it.",
        repo(src__app__roles__py=b"ROLE = 'viewer'\n"),
        outputs=["src/app/roles.py"],
        expect={"spiral": True, "notify_after_min": 30, "notify_before_min": 35, "signals": ["polling"]},
    )
    t = productive(tl, 0.3, 8, rng, step=0.4, new_files=False)
    tl.edit(t, "src/app/roles.py")
    tl.bash(t + 0.3, "pytest tests -q > /tmp/test.log 2>&1 &")
    t += 1
    out_file = "/tmp/claude-1000/-home-dev-runs-spiral-003-clone/tasks/b3f9a1.output"
    while t < 40:
        tl.bash(t, "sleep 5")
        t += rng.uniform(0.2, 0.4)
        tl.bash(t, f"cat {out_file}", output="collected 212 items")
        t += rng.uniform(0.2, 0.4)
    tl.write_case(out / tl.case_id, 40)


def healthy_001(out: Path) -> None:
    rng = random.Random(4)
    tl = Timeline(
        "healthy-001-steady-feature",
        "claude-stream-json",
        "medium",
        "Seed counter-case: a medium ticket done steadily in 55 minutes: many files read and "
        "edited, new modules and tests, varied test commands. Nothing may fire a page.",
        repo(),
        outputs=["src/app/core.py"],
        expect={"spiral": False},
    )
    productive(tl, 0.5, 55, rng)
    tl.write_case(out / tl.case_id, 56)


# ---- hard negatives ----------------------------------------------------------------


def neg_edit_test(out: Path) -> None:
    rng = random.Random(5)
    tl = Timeline(
        "neg-edit-test-cycles",
        "claude-stream-json",
        "medium",
        "Hard negative: TDD into the soft band. Edit a module, run its test file, read the "
        "failure, move on; four modules in rotation, so no one file or test reaches the "
        "repetition counts, and new tests keep the touched set growing.",
        repo(),
        expect={"spiral": False},
    )
    mods = ["core", "cli", "store", "config"]
    t, k = 0.5, 0
    while t < 80:
        m = mods[k % 4]
        tl.edit(t, f"src/app/{m}.py")
        tl.bash(t + 0.5, f"pytest tests/test_{m}.py -q", error=k % 3 == 0, output=f"{k % 5} failed")
        if k % 2 == 0:
            tl.read(t + 1.0, f"tests/test_{m}.py")
        if k % 4 == 3:
            tl.write(t + 1.3, f"tests/test_{m}_{k:03d}.py")
        t += rng.uniform(1.6, 2.2)
        k += 1
    tl.write_case(out / tl.case_id, 80)


def neg_build_script(out: Path) -> None:
    rng = random.Random(6)
    tl = Timeline(
        "neg-tracked-build-script",
        "codex-json",
        "medium",
        "Hard negative: a tracked ./build.sh run after most edits, into the soft band. The edits "
        "move across many files and the build script is part of the repo, so at most the "
        "same-file count fires (one vote): no page.",
        repo(),
        expect={"spiral": False},
    )
    t, k = 0.5, 0
    files = [f"src/app/mod_{i:02d}.py" for i in range(40)]
    while t < 82:
        tl.write(t, files[k % len(files)]) if k < len(files) else tl.edit(t, files[k % len(files)])
        if k % 3 != 2:
            tl.bash(t + 0.4, "./build.sh", output="build ok")
        else:
            tl.bash(t + 0.4, rng.choice(["git diff --stat", "pytest -q", "ls src/app"]))
        tl.read(t + 0.8, rng.choice(files[: max(1, min(k, len(files)))]))
        t += rng.uniform(1.6, 2.0)
        k += 1
    tl.write_case(out / tl.case_id, 82)


def neg_debris_progress(out: Path) -> None:
    rng = random.Random(7)
    tl = Timeline(
        "neg-debris-outputs-change",
        "claude-transcript",
        "small",
        "Hard negative: three tmp_/debug_ files sit in the clone all run long, but the declared "
        "output keeps changing every few minutes into the soft band: exploratory debris, not a "
        "spiral.",
        repo(),
        outputs=["src/app/store.py"],
        expect={"spiral": False},
    )
    tl.write(1.0, "tmp_probe.py")
    tl.write(2.0, "debug_dump.txt")
    tl.write(3.0, "scratch_notes.md")
    t, k = 4.0, 0
    while t < 34:
        tl.edit(t, "src/app/store.py")
        tl.bash(t + 0.5, rng.choice(["pytest tests/test_store.py -q", "pytest -q", "ruff check src"]))
        tl.read(t + 1.0, rng.choice(["src/app/core.py", "src/app/cli.py", "tests/test_store.py"]))
        if k % 3 == 0:
            tl.write(t + 1.5, f"tests/test_store_{k:02d}.py")
        t += rng.uniform(1.8, 2.6)
        k += 1
    tl.write_case(out / tl.case_id, 34)


def neg_slow_productive(out: Path) -> None:
    rng = random.Random(8)
    tl = Timeline(
        "neg-soft-band-slow-but-productive",
        "generic",
        "medium",
        "Hard negative: a healthy run that is simply slow: it crosses into the soft band at "
        "70 minutes and finishes at 84, touching new files every few minutes throughout.",
        repo(),
        expect={"spiral": False},
    )
    productive(tl, 0.5, 84, rng, step=2.5)
    tl.write_case(out / tl.case_id, 84)


def neg_git_status(out: Path) -> None:
    rng = random.Random(9)
    tl = Timeline(
        "neg-frequent-git-status",
        "codex-json",
        "small",
        "Hard negative: `git status` and `git diff` between every edit, two thirds of all "
        "tool calls, into the soft band. Commands without a script target never count as a loop.",
        repo(),
        expect={"spiral": False},
    )
    t, k = 0.5, 0
    while t < 34:
        tl.bash(t, "git status")
        tl.edit(t + 0.2, f"src/app/{['core', 'cli', 'store', 'config'][k % 4]}.py")
        tl.bash(t + 0.4, "git diff")
        if k % 3 == 0:
            tl.write(t + 0.6, f"src/app/part_{k:02d}.py")
        t += rng.uniform(0.8, 1.2)
        k += 1
    tl.write_case(out / tl.case_id, 34)


def neg_override(out: Path) -> None:
    rng = random.Random(10)
    tl = Timeline(
        "neg-repeat-by-design-override",
        "generic",
        "small",
        "Hard negative: a benchmarking ticket whose job is to run the tracked bench.sh over and "
        "over while tuning one file. Per-ticket overrides raise the repetition floors, so the "
        "run stays quiet even in the soft band.",
        repo(bench_sh=b"#!/bin/sh\n", src__app__hot__py=b"def hot(): ...\n"),
        overrides={"signals": {"repetition": {"same_file": 40}, "sustained_bash": {"same_target": 40}}},
        outputs=["src/app/hot.py"],
        expect={"spiral": False},
    )
    tl.tracked["bench.sh"] = tl.tracked.pop("bench_sh")
    t, k = 0.5, 0
    while t < 34:
        tl.edit(t, "src/app/hot.py")
        tl.bash(t + 0.3, f"./bench.sh --iterations {rng.choice([100, 1000, 5000])}", output="12.3 ms/op")
        if k % 5 == 0:
            tl.write(t + 0.6, f"bench/results_{k:02d}.md")
        t += rng.uniform(0.8, 1.2)
        k += 1
    tl.write_case(out / tl.case_id, 34)


def neg_chunked_reads(out: Path) -> None:
    rng = random.Random(11)
    tl = Timeline(
        "neg-chunked-reads-healthy-region",
        "claude-stream-json",
        "medium",
        "Hard negative: reading one large file in chunks (12 Reads in a row) early in the run, "
        "then editing it and moving on. Repetition fires while it happens, but it is one vote "
        "in the healthy region: recorded, never paged.",
        repo(src__app__big__py=b"x = 1\n" * 100),
        expect={"spiral": False},
    )
    for i in range(12):
        tl.read(1 + i * 0.3, "src/app/big.py")
    tl.edit(5.0, "src/app/big.py")
    productive(tl, 6.0, 60, rng)
    tl.write_case(out / tl.case_id, 60)


# ---- positives in other formats ------------------------------------------------


def spiral_codex_versions(out: Path) -> None:
    rng = random.Random(12)
    tl = Timeline(
        "spiral-codex-versioned-repros",
        "codex-json",
        "small",
        "Codex spiral: after a first edit the agent writes repro_v1.py, repro_v2.py, repro_v3.py "
        "and reruns the newest one with tweaked flags, never touching the real module again. "
        "Versioned names are debris; the rerun loop is repetition.",
        repo(),
        outputs=["src/app/core.py"],
        expect={"spiral": True, "notify_after_min": 30, "notify_before_min": 35, "signals": ["debris", "repetition"]},
    )
    productive(tl, 0.5, 6, rng, step=0.8, new_files=False)
    tl.edit(6.5, "src/app/core.py")
    t, v = 7.0, 0
    while t < 36:
        if v < 3 and t > 7 + v * 8:
            v += 1
            tl.write(t, f"repro_v{v}.py")
            t += 0.4
        tl.bash(t, f"python repro_v{v}.py --n {rng.randint(1, 9)}", error=True, output="Traceback")
        t += rng.uniform(0.4, 0.7)
        if rng.random() < 0.3:
            tl.edit(t, f"repro_v{v}.py")
            t += 0.3
    tl.write_case(out / tl.case_id, 36)


def spiral_transcript_until(out: Path) -> None:
    rng = random.Random(13)
    tl = Timeline(
        "spiral-transcript-until-wait",
        "claude-transcript",
        "medium",
        "Claude transcript spiral: a backgrounded build, then `until grep -q DONE ...; do sleep "
        "10; done` waits and BashOutput reads of the same task for half an hour, interleaved "
        "with re-reading one file.",
        repo(),
        outputs=["src/app/cli.py"],
        expect={"spiral": True, "notify_after_min": 70, "notify_before_min": 85, "signals": ["polling"]},
    )
    t = productive(tl, 0.5, 52, rng)
    tl.bash(t, "make build > /tmp/build.log 2>&1 &")
    t += 0.5
    k = 0
    while t < 86:
        if k % 3 == 0:
            tl.bash(t, "until grep -q DONE /tmp/build.log; do sleep 10; done", output="(timeout)")
        elif k % 3 == 1:
            tl.bash_output(t, "b7")
        else:
            tl.read(t, "src/app/cli.py")
        t += rng.uniform(0.5, 1.0)
        k += 1
    tl.write_case(out / tl.case_id, 86)


def spiral_generic_pingpong(out: Path) -> None:
    rng = random.Random(14)
    tl = Timeline(
        "spiral-generic-edit-pingpong",
        "generic",
        "medium",
        "Generic-format spiral: from minute 45 the agent edits src/app/config.py, reverts it, "
        "checks it, and edits it again, for 40 minutes; nothing new is touched. Same-file "
        "repetition and the stalled mutation set page together.",
        repo(),
        expect={
            "spiral": True,
            "notify_after_min": 70,
            "notify_before_min": 85,
            "signals": ["repetition", "mutation_stall"],
        },
    )
    t = productive(tl, 0.5, 45, rng)
    k = 0
    while t < 86:
        if k % 3 == 0:
            tl.edit(t, "src/app/config.py")
        elif k % 3 == 1:
            tl.read(t, "src/app/config.py")
        else:
            tl.revert(t, "src/app/config.py")
        if k % 4 == 0:
            tl.bash(t + 0.2, rng.choice(["pytest -q", "git diff", "python -c 'import app'"]))
        t += rng.uniform(0.5, 0.9)
        k += 1
    tl.write_case(out / tl.case_id, 86)


def neg_stuck_only(out: Path) -> None:
    rng = random.Random(15)
    tl = Timeline(
        "neg-loop-after-stuck-time",
        "claude-stream-json",
        "small",
        "Boundary: a rerun loop that starts only after the small bucket's stuck time (35 min). "
        "From then on liveness owns the run (stopped, recorded as stalled); the spiral path must "
        "not page.",
        repo(),
        expect={"spiral": False},
    )
    productive(tl, 0.5, 35, rng, step=1.0)
    t = 35.5
    while t < 45:
        tl.bash(t, "python tmp_loop.py")
        t += 0.4
    tl.write(35.2, "tmp_loop.py")
    tl.write_case(out / tl.case_id, 45)


def neg_provider_outage(out: Path) -> None:
    rng = random.Random(16)
    tl = Timeline(
        "neg-provider-outage",
        "claude-stream-json",
        "medium",
        "Hard negative: a productive medium run whose model API is rate limited (429) from minute 38 "
        "to 76: the CLI prints only its retry lines, no tool call lands and the clone does not change. "
        "The wait is the provider's, not a spiral: it must not count toward mutation_stall or the soft "
        "band (docs/agent-outcomes.md). Before the outage the agent was iterating on one test file.",
        repo(tests__test_core__py=b"def test_core(): ...\n"),
        outputs=["src/app/core.py"],
        expect={"spiral": False},
    )
    t = productive(tl, 0.5, 30, rng)
    while t < 38:
        tl.edit(t, "tests/test_core.py")
        tl.bash(t + 0.3, "pytest -q tests/test_core.py", error=True, output="1 failed")
        t += rng.uniform(0.9, 1.3)
    tl.provider_down(38, 76, status=429)
    productive(tl, 76.2, 84, rng, prefix="after")
    tl.write_case(out / tl.case_id, 85)


# ---- issue 11: one case per rule principle, in several log formats ------------------
#
# Each principle below is scripted once and built in at least two formats; the tool
# outputs are the texts the tools really print (pytest tracebacks whose line numbers,
# durations and tmp paths move, build logs with timings, `gh run view`, curl errors).
# tests/corpus/test_corpus_rules.py replays them and checks the evidence each page names.

_SMALL = {"notify_after_min": 30, "notify_before_min": 35}
_MEDIUM = {"notify_after_min": 70, "notify_before_min": 85}


def _bar(title: str, ch: str = "=") -> str:
    """A pytest separator line: the title centred in 80 columns."""
    return f" {title} ".center(80, ch) if title else ch * 80


def _pytest_head(workdir: str, items: int, progress: str, test_file: str) -> str:
    return (
        _bar("test session starts") + "\n"
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\n"
        f"rootdir: {workdir}\n"
        "configfile: pyproject.toml\n"
        f"collected {items} items\n\n" + f"{test_file} {progress}".ljust(73) + "[100%]\n"
    )


def _store_failure(workdir: str, line: int, secs: float, run: int, addr: int) -> str:
    """`pytest tests/test_store.py -x`: test_flush_batches fails in Store.flush, the same way each time."""
    return (
        _pytest_head(workdir, 14, ".......F", "tests/test_store.py")
        + "\n"
        + _bar("FAILURES")
        + "\n"
        + _bar("test_flush_batches", "_")
        + "\n\n"
        f"tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-{run}/test_flush_batches0')\n\n"
        "    def test_flush_batches(tmp_path):\n"
        '        store = Store(tmp_path / "db.sqlite")\n'
        "        store.put_many(range(10))\n"
        ">       assert store.flush() == 10\n\n"
        "tests/test_store.py:41: \n" + "_ " * 39 + "_\n\n"
        f"self = <app.store.Store object at 0x7f3a9c{addr:06x}>\n\n"
        "    def flush(self):\n"
        "        n = 0\n"
        "        for batch in self._batches():\n"
        ">           n += self._write(batch)\n"
        "E           TypeError: unsupported operand type(s) for +=: 'int' and 'NoneType'\n\n"
        f"src/app/store.py:{line}: TypeError\n" + _bar("short test summary info") + "\n"
        "FAILED tests/test_store.py::test_flush_batches - TypeError: unsupported operand type(s) "
        "for +=: 'int' and 'NoneType'\n"
        "!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        + _bar(f"1 failed, 7 passed in {secs:.2f}s")
        + "\n"
    )


def _same_failure_after_edits(fmt: str, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-same-failure-after-edits-{fmt}",
        fmt,
        "small",
        "Outcomes, loop: from minute 6 the agent edits src/app/store.py (now and then "
        "src/app/batching.py) and reruns the tracked tests/test_store.py after every edit; "
        "test_flush_batches fails with the same TypeError each time, only the line number in "
        "store.py, the duration, the tmp path and the object address move. The page must say "
        "it failed identically N times, M of them after edits.",
        files_with({"src/app/batching.py": b"def batches(xs, n):\n    return [xs]\n"}),
        outputs=["src/app/store.py"],
        realistic=True,
        expect={"spiral": True, **_SMALL, "signals": ["sustained_bash"]},
    )
    t = productive(tl, 0.5, 5, rng, step=0.8, new_files=False)
    test = "pytest tests/test_store.py -x"
    line, k = 52, 0
    while t < 36:
        k += 1
        module = "src/app/batching.py" if k % 5 == 0 else "src/app/store.py"
        tl.edit(t, module)
        line += rng.choice([0, 1, 2, 3]) if module == "src/app/store.py" else 0
        t += rng.uniform(0.3, 0.5)
        output = _store_failure(tl.workdir, line, rng.uniform(0.3, 1.9), 40 + k, rng.randrange(1 << 24))
        tl.bash(t, test, output=output, exit_code=1)
        t += rng.uniform(0.4, 0.7)
        if k % 4 == 0:
            tl.read(t, "src/app/store.py")
            t += rng.uniform(0.3, 0.5)
    tl.write_case(out / tl.case_id, 36)


def _build_log(secs: float, version: str) -> str:
    return (
        "+ python -m build --wheel\n"
        "* Creating isolated environment: venv+pip...\n"
        "* Installing packages in isolated environment:\n"
        "  - hatchling>=1.21\n"
        "* Getting build dependencies for wheel...\n"
        "* Building wheel...\n"
        f"Successfully built app-{version}-py3-none-any.whl\n"
        f"build.sh: wheel ok in {secs:.1f}s\n"
    )


def _api_pass(workdir: str, secs: float) -> str:
    return (
        _pytest_head(workdir, 18, "..................", "tests/test_api.py")
        + "\n"
        + _bar(f"18 passed in {secs:.2f}s")
        + "\n"
    )


def _build_after_edits(fmt: str, seed: int, build: bool, out: Path) -> None:
    rng = random.Random(seed)
    command = "./build.sh" if build else "pytest tests/test_api.py -q"
    tl = Timeline(
        f"neg-build-after-edits-{fmt}",
        fmt,
        "small",
        f"Outcomes, healthy: from minute 4 the agent edits a different module each time (new "
        f"ones too) and reruns the tracked `{command}` after every edit, into the soft band; it "
        "succeeds every time, its output differing only by timings. The five seed signals alone "
        "page this run (sustained_bash on the rerun target); the outcomes rule sees a success "
        "after a change, which is progress: no page.",
        files_with({"tests/test_api.py": b"def test_api(): ...\n"}),
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.5, 4, rng, step=0.8, new_files=False)
    modules = ["core", "cli", "store", "config", "api", "auth", "models", "views", "routes", "schemas"]
    k = 0
    while t < 34:
        name = modules[k % len(modules)]
        path = f"src/app/{name}.py"
        if path in tl.tracked or k >= len(modules):
            tl.edit(t, path)
        else:
            tl.write(t, path, f"def {name}():\n    return {k}\n")
        t += rng.uniform(0.3, 0.6)
        if build:
            tl.bash(t, command, output=_build_log(rng.uniform(6, 19), "0.4.0"))
        else:
            tl.bash(t, command, output=_api_pass(tl.workdir, rng.uniform(0.8, 2.4)))
        t += rng.uniform(0.5, 0.9)
        k += 1
    tl.write_case(out / tl.case_id, 34)


_PARSER_TESTS = [
    "test_empty_input",
    "test_single_token",
    "test_nested_parens",
    "test_unary_minus",
    "test_operator_precedence",
    "test_right_assoc_power",
    "test_function_call",
    "test_call_with_kwargs",
    "test_trailing_comma",
    "test_string_escapes",
    "test_comments_skipped",
    "test_error_position",
    "test_unicode_names",
]


def _parser_run(workdir: str, failing: list[str], secs: float) -> str:
    n = len(_PARSER_TESTS)
    if not failing:
        return (
            _pytest_head(workdir, n, "." * n, "tests/test_parser.py") + "\n" + _bar(f"{n} passed in {secs:.2f}s") + "\n"
        )
    progress = "".join("F" if name in failing else "." for name in _PARSER_TESTS)
    body = "".join(
        f"FAILED tests/test_parser.py::{name} - app.parser.ParseError: unexpected token at col {3 + i}\n"
        for i, name in enumerate(failing)
    )
    return (
        _pytest_head(workdir, n, progress, "tests/test_parser.py")
        + "\n"
        + _bar("short test summary info")
        + "\n"
        + body
        + _bar(f"{len(failing)} failed, {n - len(failing)} passed in {secs:.2f}s")
        + "\n"
    )


def _shrinking_failures(fmt: str, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-shrinking-failures-{fmt}",
        fmt,
        "small",
        "Outcomes, healthy: the agent fixes a parser test by test. After every edit of "
        "src/app/parser.py (or src/app/lexer.py) it reruns tests/test_parser.py, and one failure "
        "fewer remains each time (13 failed, 12 failed, ... passed) into the soft band. The rerun "
        "counts reach the seed's sustained_bash floor, but a changed failure after a change is "
        "progress: no page.",
        files_with(
            {
                "src/app/parser.py": b"def parse(src):\n    raise NotImplementedError\n",
                "src/app/lexer.py": b"def tokens(src):\n    return []\n",
                "tests/test_parser.py": b"def test_empty_input(): ...\n",
            }
        ),
        outputs=["src/app/parser.py"],
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.5, 9, rng, step=0.9)
    failing = list(_PARSER_TESTS)
    test = "pytest tests/test_parser.py -q"
    tl.bash(t, test, output=_parser_run(tl.workdir, failing, 0.41), exit_code=1)
    t += 0.6
    k = 0
    while failing:
        k += 1
        tl.edit(t, "src/app/lexer.py" if k % 4 == 0 else "src/app/parser.py")
        t += rng.uniform(0.4, 0.8)
        failing.pop(rng.randrange(len(failing)))
        tl.bash(
            t, test, output=_parser_run(tl.workdir, failing, rng.uniform(0.3, 0.9)), exit_code=1 if failing else None
        )
        t += rng.uniform(0.5, 0.9)
        if k % 3 == 0:
            tl.read(t, "src/app/parser.py")
            t += 0.4
    while t < 34:  # then the work moves on
        tl.write(t, f"tests/test_parser_{k:02d}.py", "def test_more(): ...\n")
        tl.edit(t + 0.5, "src/app/cli.py")
        tl.bash(t + 1.0, "ruff check src", output="All checks passed!")
        t += rng.uniform(1.2, 1.8)
        k += 1
    tl.write_case(out / tl.case_id, 34)


def _flaky_login(workdir: str, passed: bool, secs: float, port: int) -> str:
    head = _pytest_head(workdir, 1, "." if passed else "F", "tests/test_api.py")
    if passed:
        return head + "\n" + _bar(f"1 passed in {secs:.2f}s") + "\n"
    return (
        head + "\n" + _bar("FAILURES") + "\n" + _bar("test_login_refreshes_token", "_") + "\n\n"
        "    def test_login_refreshes_token(client):\n"
        '        r = client.post("/login", json={"user": "ann", "pw": "pw"})\n'
        ">       assert r.status_code == 200\n"
        "E       assert 503 == 200\n"
        "E        +  where 503 = <Response [503]>.status_code\n\n"
        "tests/test_api.py:88: AssertionError\n"
        "----------------------------- Captured log call ------------------------------\n"
        f"WARNING  app.auth:auth.py:61 token service at 127.0.0.1:{port} not ready\n"
        + _bar("short test summary info")
        + "\n"
        "FAILED tests/test_api.py::test_login_refreshes_token - assert 503 == 200\n"
        + _bar(f"1 failed in {secs:.2f}s")
        + "\n"
    )


def _unchanged_tree(fmt: str, seed: int, bucket: str, out: Path) -> None:
    rng = random.Random(seed)
    soft = 30 if bucket == "small" else 70
    end = soft + 5 if bucket == "small" else soft + 14
    tl = Timeline(
        f"spiral-rerun-unchanged-tree-{fmt}",
        fmt,
        bucket,
        "Unchanged tree: after its change landed the agent reruns the tracked login test "
        "(pytest tests/test_api.py::test_login_refreshes_token) again and again hoping the flaky "
        "token service comes up, reading logs and grepping in between but editing nothing. "
        "Passing or failing, a rerun on an unchanged tree is loop evidence: it pages.",
        files_with({"src/app/auth.py": b"def login(): ...\n", "tests/test_api.py": b"def test_login(): ...\n"}),
        outputs=["src/app/auth.py"],
        realistic=True,
        expect={"spiral": True, **(_SMALL if bucket == "small" else _MEDIUM), "signals": ["sustained_bash"]},
    )
    t = productive(tl, 0.5, soft - 14, rng)
    tl.edit(t, "src/app/auth.py")
    t += 0.5
    test = "pytest tests/test_api.py::test_login_refreshes_token -q"
    k = 0
    while t < end + 1:
        k += 1
        passed = rng.random() < 0.25
        tl.bash(
            t,
            test,
            output=_flaky_login(tl.workdir, passed, rng.uniform(0.5, 3.5), 8001),
            exit_code=None if passed else 1,
        )
        t += rng.uniform(0.4, 0.8)
        side = k % 3
        if side == 0:
            tl.bash(t, "grep -n 'not ready' /tmp/app-test.log | tail -5", output="61:token service not ready")
        elif side == 1:
            tl.read(t, "src/app/auth.py")
        t += rng.uniform(0.3, 0.6)
    tl.write_case(out / tl.case_id, end)


_IMPORT_ERR = (
    "Traceback (most recent call last):\n"
    '  File "<string>", line 1, in <module>\n'
    '  File "{workdir}/src/app/__init__.py", line 3, in <module>\n'
    "    from app.plugins import registry\n"
    "ModuleNotFoundError: No module named 'app.plugins'\n"
)
_IMPORT_COMMANDS = [
    'python -c "import app"',
    "python -c 'from app import cli; print(cli.main)'",
    'PYTHONPATH=src python -c "import app; print(app.__file__)"',
    "python3 -c 'import app.core'",
    'python -c "import app.store as s; print(s.Store)"',
    "PYTHONPATH=src:. python -c 'import app'",
    "python -c \"import importlib; importlib.import_module('app.config')\"",
    "python -c 'from app.cli import main; main([\"--help\"])'",
    'cd src && python -c "import app"',
    "python -I -c 'import sys; sys.path.insert(0, \"src\"); import app'",
]
_CURL_401 = "curl: (22) The requested URL returned error: 401\n"
_CURL_COMMANDS = [
    'curl -fsS http://localhost:8000/api/v1/projects -H "Authorization: Bearer $TOKEN"',
    'curl -fsS http://localhost:8000/api/v1/projects?page=2 -H "Authorization: Bearer $TOKEN"',
    "curl -fsS -X POST http://localhost:8000/api/v1/projects -H 'Content-Type: application/json' "
    '-H "Authorization: Bearer $TOKEN" -d \'{"name": "demo"}\'',
    'curl -fsS http://127.0.0.1:8000/api/v1/me -H "Authorization: Bearer $TOKEN"',
    "curl -fsS -u admin:admin http://localhost:8000/api/v1/projects",
    'curl -fsS http://localhost:8000/api/v1/projects -H "Authorization: Token $TOKEN"',
    'curl -fsS http://localhost:8000/api/v1/projects -H "X-Api-Key: $TOKEN"',
    'curl -fsSL http://localhost:8000/api/v1/projects/ -H "Authorization: Bearer $(cat .token)"',
    'curl -fsS "http://localhost:8000/api/v1/projects?token=$TOKEN"',
    'curl -fsS --oauth2-bearer "$TOKEN" http://localhost:8000/api/v1/projects',
]


def _same_error_varied(fmt: str, seed: int, kind: str, out: Path) -> None:
    rng = random.Random(seed)
    what = (
        "imports the package ten different ways (`python -c ...`), each failing with the same "
        "ModuleNotFoundError for app.plugins"
        if kind == "import"
        else "calls the API with ten different curl commands (other endpoints, methods, auth "
        "headers), each failing with the same `curl: (22) ... error: 401`"
    )
    tl = Timeline(
        f"spiral-same-error-varied-commands-{fmt}",
        fmt,
        "small",
        f"Same error from varied commands: from minute 18 the agent {what}, reading files between "
        "tries and changing none. No command has a script target, so the five seed signals do "
        "not see it; the same_error rule does.",
        files_with({"src/app/api.py": b"def projects(): ...\n"}),
        outputs=["src/app/api.py"],
        realistic=True,
        expect={"spiral": True, **_SMALL, "signals": ["same_error"]},
    )
    t = productive(tl, 0.5, 17, rng)
    commands = _IMPORT_COMMANDS if kind == "import" else _CURL_COMMANDS
    error = _IMPORT_ERR.format(workdir=tl.workdir) if kind == "import" else _CURL_401
    code = 1 if kind == "import" else 22
    reads = ["src/app/__init__.py", "pyproject.toml", "src/app/config.py", "src/app/api.py", "README.md"]
    k = 0
    while t < 35:
        tl.bash(t, commands[k % len(commands)], output=error, exit_code=code)
        t += rng.uniform(0.5, 1.0)
        if k % 2 == 1:
            tl.read(t, reads[(k // 2) % len(reads)])
            t += rng.uniform(0.4, 0.8)
        elif k % 4 == 2:
            probe = (
                "pip show app"
                if kind == "import"
                else "curl -s -o /dev/null -w '%{http_code}\\n' localhost:8000/health"
            )
            tl.bash(
                t,
                probe,
                output="Name: app\nVersion: 0.4.0\nLocation: /usr/lib/python3/site-packages"
                if kind == "import"
                else "200\n",
            )
            t += rng.uniform(0.4, 0.8)
        k += 1
    tl.write_case(out / tl.case_id, 35)


def _subagent_loop(fmt: str, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    agent = "fix-store"
    tl = Timeline(
        f"spiral-subagent-same-failure-{fmt}",
        fmt,
        "small",
        "Subagents: the main thread works for ten minutes, then hands the failing store test "
        "to a subagent (Task), which edits src/app/store.py and reruns tests/test_store.py for the "
        "rest of the run, failing the same way each time. The subagent's calls are the run's "
        "work: it pages, and the evidence says the calls were made by subagents.",
        repo(),
        outputs=["src/app/store.py"],
        realistic=True,
        expect={"spiral": True, **_SMALL, "signals": ["sustained_bash"]},
    )
    t = productive(tl, 0.5, 10, rng)
    test = "pytest tests/test_store.py -x"
    line, k = 52, 0
    tl.read(t, "tests/test_store.py", agent=agent)
    t += 0.5
    while t < 35:
        k += 1
        tl.edit(t, "src/app/store.py", agent=agent)
        line += rng.choice([0, 1, 2])
        t += rng.uniform(0.3, 0.5)
        output = _store_failure(tl.workdir, line, rng.uniform(0.3, 1.9), 60 + k, rng.randrange(1 << 24))
        tl.bash(t, test, output=output, exit_code=1, agent=agent)
        t += rng.uniform(0.4, 0.7)
    tl.write_case(out / tl.case_id, 35)


_SCOPE = ["src/app/**", "tests/**"]
_OUTSIDE = [
    "docs/auth.md",
    "scripts/seed_users.py",
    "src/legacy/auth_compat.py",
    "README.md",
    "docs/api.md",
    "scripts/rotate_keys.sh",
    "src/legacy/session.py",
    "docs/deploy.md",
    "scripts/seed_users.py",
    "src/billing/tokens.py",
    "docs/auth.md",
    "Makefile",
]


def _drift(fmt: str, seed: int, bucket: str, out: Path) -> None:
    rng = random.Random(seed)
    soft = 30 if bucket == "small" else 70
    end = soft + 5 if bucket == "small" else soft + 14
    tl = Timeline(
        f"spiral-drift-out-of-scope-{fmt}",
        fmt,
        bucket,
        "Drift: the ticket's scope is src/app/** and tests/**, its outputs src/app/auth.py and "
        "tests/test_auth.py. After the first stretch the agent keeps editing docs/, scripts/, "
        "src/legacy/ and src/billing/ (tidying what it came across) while the outputs stay "
        "untouched: it pages, naming the files outside the scope.",
        files_with(
            {
                "src/app/auth.py": b"def login(): ...\n",
                "tests/test_auth.py": b"def test_login(): ...\n",
                "docs/auth.md": b"# Auth\n",
                "docs/api.md": b"# API\n",
                "docs/deploy.md": b"# Deploy\n",
                "scripts/seed_users.py": b"print('seed')\n",
                "scripts/rotate_keys.sh": b"#!/bin/sh\n",
                "src/legacy/auth_compat.py": b"def compat(): ...\n",
                "src/legacy/session.py": b"class Session: ...\n",
                "src/billing/tokens.py": b"def token(): ...\n",
                "Makefile": b"test:\n\tpytest\n",
            }
        ),
        outputs=["src/app/auth.py", "tests/test_auth.py"],
        scope=list(_SCOPE),
        realistic=True,
        expect={"spiral": True, **(_SMALL if bucket == "small" else _MEDIUM), "signals": ["drift"]},
    )
    t = 0.5
    stop = soft - 20
    k = 0
    while t < stop:  # in scope: the outputs move
        k += 1
        tl.edit(t, "src/app/auth.py" if k % 2 else "tests/test_auth.py")
        tl.bash(t + 0.4, "pytest tests/test_auth.py -q", output=_bar(f"{k} passed in 0.{k}1s"))
        tl.read(t + 0.8, rng.choice(["src/app/core.py", "src/app/config.py", "src/app/auth.py"]))
        t += rng.uniform(1.3, 1.9)
    k = 0
    while t < end:  # out of scope: docs, scripts, other packages; outputs untouched
        path = _OUTSIDE[k % len(_OUTSIDE)]
        tl.read(t, path)
        tl.edit(t + 0.4, path)
        if path.startswith("scripts/") and path.endswith(".py"):
            tl.bash(t + 0.8, f"python {path} --dry-run", output="would create 3 users")
        elif k % 3 == 0:
            tl.bash(t + 0.8, "git diff --stat", output=f" {path} | 4 ++--\n 1 file changed")
        t += rng.uniform(1.4, 2.2)
        k += 1
    tl.write_case(out / tl.case_id, end)


def _brief_excursion(fmt: str, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-drift-brief-excursion-{fmt}",
        fmt,
        "small",
        "Drift, healthy: scope src/app/** and tests/**, outputs src/app/auth.py and "
        "tests/test_auth.py. Around minute 27 the agent updates docs/auth.md and README.md and "
        "fixes scripts/seed_users.py for the new login flow, then goes back to the outputs, which "
        "keep changing into the soft band: no page.",
        files_with(
            {
                "src/app/auth.py": b"def login(): ...\n",
                "tests/test_auth.py": b"def test_login(): ...\n",
                "docs/auth.md": b"# Auth\n",
                "scripts/seed_users.py": b"print('seed')\n",
            }
        ),
        outputs=["src/app/auth.py", "tests/test_auth.py"],
        scope=list(_SCOPE),
        realistic=True,
        expect={"spiral": False},
    )
    t, k = 0.5, 0
    excursion = False
    while t < 34:
        k += 1
        if not excursion and t > 26:
            excursion = True
            for path in ("docs/auth.md", "README.md", "scripts/seed_users.py"):
                tl.read(t, path)
                tl.edit(t + 0.4, path)
                t += rng.uniform(0.8, 1.2)
            tl.bash(t, "python scripts/seed_users.py --dry-run", output="would create 3 users")
            t += 0.5
        tl.edit(t, "src/app/auth.py" if k % 2 else "tests/test_auth.py")
        tl.bash(t + 0.4, f"pytest tests/test_auth.py -q -k case_{k % 7}", output=_bar(f"{k} passed in 0.{k % 9}1s"))
        if k % 3 == 0:
            tl.write(t + 0.8, f"src/app/auth_{k:02d}.py", f"def step_{k}(): ...\n")
        t += rng.uniform(1.2, 1.8)
    tl.write_case(out / tl.case_id, 34)


_RUN_ID = 9876543210


def _gh_view(status: str, done_jobs: int, minutes: int) -> str:
    """`gh run view` as it prints without a terminal: the run's headline, then its jobs."""
    jobs = ["lint", "typecheck", "test (3.11)", "test (3.12)", "build"]
    ago = "less than a minute ago" if minutes < 1 else f"about {minutes} minute{'s' if minutes > 1 else ''} ago"
    mark = {"queued": "-", "in_progress": "*", "completed": "✓"}[status]
    lines = [f"{mark} fix-auth CI · {_RUN_ID}", f"Triggered via push {ago}", "", "JOBS"]
    for i, job in enumerate(jobs):
        jid = 27182818280 + i
        if status == "queued":
            lines.append(f"- {job} (ID {jid})")
        elif i < done_jobs:
            lines.append(f"✓ {job} in {20 + 17 * i}s (ID {jid})")
        else:
            lines.append(f"* {job} (ID {jid})")
    lines += [
        "",
        "For more information about a job, try: gh run view --job=<job-id>",
        f"View this run on GitHub: https://github.com/acme/app/actions/runs/{_RUN_ID}",
    ]
    return "\n".join(lines) + "\n"


def _ci_poll(fmt: str, seed: int, stale: bool, joined: bool, out: Path) -> None:
    rng = random.Random(seed)
    view = f"gh run view {_RUN_ID}"
    how = f"`sleep 30 && {view}`" if joined else f"`sleep 30` then `{view}`"
    if stale:
        case_id = f"spiral-ci-poll-stale-{fmt}"
        text = (
            f"Polling, stale: after pushing at minute 14 the agent polls CI with {how} for the rest "
            "of the run; the run sits in_progress with the same jobs running every time (only its "
            "age moves). The same answer again and again is a stale poll: it pages."
        )
        expect: dict[str, Any] = {"spiral": True, **_SMALL, "signals": ["polling"]}
    else:
        case_id = f"neg-ci-poll-progress-{fmt}"
        text = (
            f"Polling, healthy: after pushing at minute 24 the agent polls CI with {how}; the run "
            "moves queued -> in_progress with one more job done at each look -> completed, and the "
            "work moves on. The seed's polling count alone would page; a poll whose output moves "
            "is not stale: no page."
        )
        expect = {"spiral": False}
    tl = Timeline(case_id, fmt, "small", text, files_with({"src/app/auth.py": b"def login(): ...\n"}), realistic=True)
    tl.outputs = ["src/app/auth.py"]
    tl.expect = expect
    push_at = 14.0 if stale else 24.0
    t = productive(tl, 0.5, push_at - 1, rng)
    tl.edit(t, "src/app/auth.py")
    tl.bash(
        t + 0.3,
        "git push origin fix-auth",
        output="To github.com:acme/app.git\n   3f2a1b7..9c8d7e6  fix-auth -> fix-auth\n",
    )
    t += 0.6
    states: list[tuple[str, int]]
    if stale:
        states = [("queued", 0), ("in_progress", 2)] + [("in_progress", 2)] * 60
    else:
        states = [
            ("queued", 0),
            ("in_progress", 0),
            ("in_progress", 1),
            ("in_progress", 2),
            ("in_progress", 3),
            ("in_progress", 4),
            ("completed", 5),
        ]
    end = 35.0 if stale else 34.0
    for status, done in states:
        if t >= end - 0.3:
            break
        minutes = int(t - push_at)
        output = _gh_view(status, done, minutes)
        if joined:
            tl.bash(t, f"sleep 30 && {view}", output=output)
        else:
            tl.bash(t, "sleep 30", output="")
            tl.bash(t + 0.55, view, output=output)
        t += rng.uniform(0.7, 0.9)
    while t < end:  # the run is green: work moves on
        tl.edit(t, rng.choice(["src/app/core.py", "src/app/cli.py", "src/app/auth.py"]))
        tl.bash(t + 0.4, "pytest -q", output=_bar(f"42 passed in {rng.uniform(2, 4):.2f}s"))
        tl.write(t + 0.8, f"tests/test_auth_{int(t):02d}.py", "def test_x(): ...\n")
        t += rng.uniform(1.0, 1.5)
    tl.write_case(out / tl.case_id, end)


RULE_CASES: list[Callable[[Path], None]] = [
    partial(_same_failure_after_edits, "claude-stream-json", 101),
    partial(_same_failure_after_edits, "codex-json", 102),
    partial(_build_after_edits, "generic", 103, True),
    partial(_build_after_edits, "claude-transcript", 104, False),
    partial(_shrinking_failures, "codex-json", 105),
    partial(_shrinking_failures, "claude-stream-json", 106),
    partial(_unchanged_tree, "claude-transcript", 107, "small"),
    partial(_unchanged_tree, "generic", 108, "medium"),
    partial(_same_error_varied, "codex-json", 109, "import"),
    partial(_same_error_varied, "generic", 110, "curl"),
    partial(_same_error_varied, "claude-stream-json", 111, "import"),
    partial(_subagent_loop, "claude-stream-json", 112),
    partial(_subagent_loop, "claude-transcript", 113),
    partial(_drift, "codex-json", 114, "small"),
    partial(_drift, "generic", 115, "medium"),
    partial(_brief_excursion, "claude-transcript", 116),
    partial(_brief_excursion, "codex-json", 117),
    partial(_ci_poll, "claude-stream-json", 118, False, False),
    partial(_ci_poll, "codex-json", 119, False, True),
    partial(_ci_poll, "generic", 120, True, False),
    partial(_ci_poll, "claude-transcript", 121, True, True),
]


# ---- known misses: cases the detector does not yet judge as their principle says --------
#
# Kept out of corpus/ (the regression suite requires every case there to pass) and built by
# tests/corpus/test_corpus_rules.py into a temporary folder, where they are strict xfails: each one
# flips to a pass, and then belongs in CASES, when the detector is fixed.


def _store_failure_quiet(workdir: str, line: int, secs: float, run: int, addr: int) -> str:
    """`pytest -q`: the same failure as _store_failure, its last line unpadded (`1 failed, ... in 9.87s`)."""
    full = _store_failure(workdir, line, secs, run, addr)
    failures = full[full.index(_bar("FAILURES")) : full.index("!!!")]
    return ".......F......".ljust(73) + "[100%]\n" + failures + f"1 failed, 13 passed in {secs:.2f}s\n"


def _same_failure_slow_test(fmt: str, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-same-failure-slow-test-{fmt}",
        fmt,
        "small",
        "Outcomes, loop (known miss): as spiral-same-failure-after-edits, but the test is slow "
        "(7.5 to 14.5 s) and run with -q, so its unpadded last line is `1 failed, 13 passed in "
        "9.87s` one time and `... in 12.31s` the next. The same failure after each edit must page "
        "on sustained_bash.",
        files_with({"src/app/batching.py": b"def batches(xs, n):\n    return [xs]\n"}),
        outputs=["src/app/store.py"],
        realistic=True,
        expect={"spiral": True, **_SMALL, "signals": ["sustained_bash"]},
    )
    t = productive(tl, 0.5, 5, rng, step=0.8, new_files=False)
    line, k = 52, 0
    while t < 36:
        k += 1
        tl.edit(t, "src/app/store.py")
        line += rng.choice([0, 1, 2, 3])
        t += rng.uniform(0.3, 0.5)
        output = _store_failure_quiet(tl.workdir, line, rng.uniform(7.5, 14.5), 40 + k, rng.randrange(1 << 24))
        tl.bash(t, "pytest tests/test_store.py -q", output=output, exit_code=1)
        t += rng.uniform(0.4, 0.7)
    tl.write_case(out / tl.case_id, 36)


def _ci_stale_variant(fmt: str, seed: int, kind: str, out: Path) -> None:
    rng = random.Random(seed)
    if kind == "list":
        command, what = (
            "gh run list --branch fix-auth --limit 1",
            (
                "`sleep 30` then `gh run list --branch fix-auth --limit 1`, whose row stays in_progress; "
                "only its ELAPSED column (`2m31s`, `3m5s`, ...) and nothing else moves"
            ),
        )
    else:
        command, what = (
            f"sleep 30 && gh run view {_RUN_ID} --json status,conclusion",
            (
                f"`sleep 30 && gh run view {_RUN_ID} --json status,conclusion`, which answers "
                '`{"conclusion":"","status":"in_progress"}` every time'
            ),
        )
    tl = Timeline(
        f"spiral-ci-poll-stale-{kind}-{fmt}",
        fmt,
        "small",
        f"Polling, stale (known miss): after pushing at minute 13 the agent polls CI with {what}, "
        "to the end of the run. The same answer again and again must page on polling.",
        files_with({"src/app/auth.py": b"def login(): ...\n"}),
        outputs=["src/app/auth.py"],
        realistic=True,
        expect={"spiral": True, **_SMALL, "signals": ["polling"]},
    )
    t = productive(tl, 0.5, 12.5, rng)
    tl.edit(t, "src/app/auth.py")
    tl.bash(t + 0.3, "git push origin fix-auth", output="   3f2a1b7..9c8d7e6  fix-auth -> fix-auth\n")
    push_at = t + 0.3
    t += 0.8
    while t < 35:
        if kind == "list":
            tl.bash(t, "sleep 30", output="")
            elapsed = int((t + 0.5 - push_at) * 60)
            row = f"in_progress\t\tFix token refresh\tCI\tfix-auth\tpush\t{_RUN_ID}\t{elapsed // 60}m{elapsed % 60}s\t"
            tl.bash(t + 0.5, command, output=row + "2026-05-20T09:13:30Z\n")
        else:
            tl.bash(t, command, output='{"conclusion":"","status":"in_progress"}\n')
        t += rng.uniform(0.7, 0.9)
    tl.write_case(out / tl.case_id, 35)


# harder variants of the principles (slow tests whose durations change length, gh list and JSON output)
HARD_VARIANTS: list[Callable[[Path], None]] = [
    partial(_same_failure_slow_test, "generic", 131),
    partial(_same_failure_slow_test, "claude-stream-json", 132),
    partial(_ci_stale_variant, "codex-json", 133, "list"),
    partial(_ci_stale_variant, "claude-transcript", 134, "json"),
]


CASES: list[Callable[[Path], None]] = [
    spiral_001,
    spiral_002,
    spiral_003,
    healthy_001,
    neg_edit_test,
    neg_build_script,
    neg_debris_progress,
    neg_slow_productive,
    neg_git_status,
    neg_override,
    neg_chunked_reads,
    neg_stuck_only,
    neg_provider_outage,
    spiral_codex_versions,
    spiral_transcript_until,
    spiral_generic_pingpong,
    *RULE_CASES,
    *HARD_VARIANTS,
    *REAL_SHAPES,
]


def build(out: Path) -> list[str]:
    names = []
    for make in CASES:
        before = {p.name for p in out.iterdir()} if out.exists() else set()
        make(out)
        after = {p.name for p in out.iterdir()}
        names.extend(sorted(after - before))
    return names


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "corpus"
    out.mkdir(parents=True, exist_ok=True)
    for child in out.iterdir():
        if child.is_dir() and (child / "case.yaml").exists() and child.name in _scripted_ids():
            shutil.rmtree(child)
    for name in build(out):
        print(f"wrote {out / name}")
    return 0


def _scripted_ids() -> set[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return set(build(Path(tmp)))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
