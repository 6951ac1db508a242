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
from pathlib import Path

from orchestrator.corpus.behaviours import productive, repo
from orchestrator.corpus.timeline import Timeline

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
