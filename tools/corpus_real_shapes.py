"""Corpus cases built on loop shapes seen in real sessions (issue 33), at a real agent's pace (a call
every 8-25 s), for tools/build_corpus.py. Each names the real sessions whose behaviour it re-enacts
(realsessions/labels.yaml, docs/detection.md).

Spirals here page before the soft band by the sustained-loop rule: `notify_after_min` is the
loop's onset (a page before the loop began would be a false alarm), `notify_before_min` its end.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from pathlib import Path

from orchestrator.corpus.behaviours import files_with, productive
from orchestrator.corpus.timeline import Timeline


def _pace(rng: random.Random) -> float:
    """Minutes to the next call of a working agent: 8 to 25 s."""
    return rng.uniform(0.13, 0.42)


# ---- spirals -----------------------------------------------------------------------------------

_LINT_FLAGS = [
    "golangci-lint run ./...",
    "golangci-lint run --enable staticcheck ./...",
    "golangci-lint run --fix",
    "golangci-lint cache clean && golangci-lint run",
    "golangci-lint run --disable-all --enable staticcheck ./pkg/store/...",
    "golangci-lint run -v ./pkg/...",
    "golangci-lint run --timeout 5m --enable staticcheck",
]
_TEST_SITES = ["pkg/store/store_test.go", "pkg/store/flush_test.go", "pkg/api/api_test.go", "pkg/api/auth_test.go"]


def lint_varied_flags(fmt: str, seed: int, out: Path) -> None:
    """golangci-lint rerun with varied flags on one staticcheck finding, the same test sites edited in
    rounds and put back with git checkout (entire-cc-90f6622c5b-1; issue 33's golangci-lint loop)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-lint-varied-flags-{fmt}",
        fmt,
        "small",
        "From minute 5 the agent chases one staticcheck finding: golangci-lint with a different flag "
        "set each time, the same four test sites edited in rounds and reverted with git checkout. "
        "No command repeats exactly and the finding's line number moves; the check (golangci-lint run) "
        "and its failure do not. stuck_check sees one check failing the same way.",
        files_with({p: b"package x\n" for p in _TEST_SITES}),
        outputs=["pkg/store/store.go"],
        realistic=True,
        expect={"spiral": True, "notify_after_min": 5, "notify_before_min": 16, "signals": ["stuck_check"]},
    )
    t = productive(tl, 0.3, 5, rng, step=0.3, new_files=False)
    k = 0
    while t < 16:
        site = _TEST_SITES[k % len(_TEST_SITES)]
        tl.edit(t, site)
        t += _pace(rng)
        line = 40 + rng.randrange(6)
        finding = (
            f"pkg/store/store_test.go:{line}:2: SA1019: store.OpenLegacy is deprecated: use store.Open instead. "
            "(staticcheck)\n"
            "1 issues:\n* staticcheck: 1\n"
        )
        tl.bash(t, _LINT_FLAGS[k % len(_LINT_FLAGS)], output=finding, exit_code=1)
        t += _pace(rng)
        if k % 4 == 3:
            tl.bash(t, "git checkout -- " + " ".join(_TEST_SITES), output="")
            for p in _TEST_SITES:
                tl.appear(t, p, "package x\n")
            t += _pace(rng)
        k += 1
    tl.write_case(out / tl.case_id, 16)


_HOOK_ERRORS = [
    "credo....................................................Failed\n"
    "[R] -> Modules should have a @moduledoc tag.\n  lib/otel/trace_helpers.ex:{line}:11 #(Otel.TraceHelpers)\n",
    "dialyzer.................................................Failed\n"
    "lib/otel/trace_helpers.ex:{line}:pattern_match\nThe pattern {{:ok, _trace_id}} can never match the type :error.\n",
]


def commit_hook_alternating(fmt: str, seed: int, out: Path) -> None:
    """`git add -A && git commit` failing on two pre-commit hook errors in turn, a one-line edit before
    each try (spotter-ae4a77f8; issue 33's commit loop)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-commit-hook-alternating-{fmt}",
        fmt,
        "small",
        "From minute 6 the agent tries to commit eight times; the pre-commit hook fails on credo and on "
        "dialyzer in turn, each time after a one-line edit to lib/otel/trace_helpers.ex. Each edit and "
        "each changed error text looks like progress; two failures in turn are the same failure.",
        files_with({"lib/otel/trace_helpers.ex": b"defmodule Otel.TraceHelpers do\nend\n"}),
        outputs=["lib/otel/trace_helpers.ex"],
        realistic=True,
        expect={"spiral": True, "notify_after_min": 6, "notify_before_min": 12, "signals": ["stuck_check"]},
    )
    t = productive(tl, 0.3, 6, rng, step=0.3)
    for k in range(8):
        tl.edit(t, "lib/otel/trace_helpers.ex")
        t += rng.uniform(0.1, 0.3)  # (a quick one-line edit)
        error = _HOOK_ERRORS[k % 2].format(line=12 + rng.randrange(30))
        tl.bash(t, f'git add -A && git commit -m "Add OTEL trace helpers (try {k + 1})"', output=error, exit_code=1)
        t += _pace(rng)
        if k % 3 == 2:
            tl.read(t, "lib/otel/trace_helpers.ex")
            t += _pace(rng)
    tl.write_case(out / tl.case_id, t + 0.5)


def scratch_sources(fmt: str, seed: int, out: Path) -> None:
    """Scratch `test_gpu_*.c` files written in the repo root and compiled with varied commands, the
    same device error each time (issue 33's scratch-file loop)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-scratch-sources-{fmt}",
        fmt,
        "small",
        "From minute 4 the agent writes test_gpu_1.c, test_gpu_2.c ... in the repository root (no "
        "debris name), compiles each with a different command and runs it: the same 'no kernel "
        "image' error every time. Files the run made and then compiled are debris whatever their "
        "names, and each new one does not count as progress.",
        files_with({"src/kernels/matmul.cu": b"__global__ void k() {}\n"}),
        outputs=["src/kernels/matmul.cu"],
        realistic=True,
        expect={"spiral": True, "notify_after_min": 4, "notify_before_min": 14, "signals": ["stuck_check"]},
    )
    t = productive(tl, 0.3, 4, rng, step=0.3, new_files=False)
    compilers = [
        "gcc {f} -o t{n} -lcudart && ./t{n}",
        "nvcc -O2 {f} -o t{n} && ./t{n}",
        "clang {f} -lcuda -o t{n} && ./t{n}",
    ]
    n = 0
    while t < 14:
        n += 1
        f = f"test_gpu_{n}.c"
        tl.write(t, f, f"/* probe {n} */\nint main(void) {{ return 0; }}\n")
        t += _pace(rng)
        error = f"CUDA error at test_gpu.c:{10 + n}: no kernel image is available for execution on the device\n"
        tl.bash(t, compilers[n % 3].format(f=f, n=n), output=error, exit_code=1)
        t += _pace(rng)
    tl.write_case(out / tl.case_id, 14)


def shell_edit_reproduce(fmt: str, seed: int, out: Path) -> None:
    """An agent that edits only through the shell (`sed -i`, heredocs) reruns a reproduce script
    between patch and revert cycles, the same assertion every time (the mini-swe-agent sphinx loops:
    miniswe-wudi-gpt5nano-sphinx-doc-sphinx-8035, -8269; issue 33's sphinx-build loop)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-shell-edit-reproduce-{fmt}",
        fmt,
        "small",
        "Shell edits only: from minute 3 the agent patches sphinx/writers/latex.py with sed -i and "
        "python heredocs, reruns reproduce_issue.py (then reproduce_issue_v2.py), gets the same "
        "AssertionError, and reverts with git checkout. The tree changes with every sed: a page must "
        "not claim it did not.",
        files_with({"sphinx/writers/latex.py": b"def visit_literal(self, node): ...\n"}),
        outputs=["sphinx/writers/latex.py"],
        realistic=True,
        expect={"spiral": True, "notify_after_min": 3, "notify_before_min": 12, "signals": ["stuck_check"]},
    )
    t = 0.3
    for p in ("sphinx/writers/latex.py", "README.md", "tests/test_build_latex.py"):
        tl.bash(t, f"cd /testbed && sed -n '1,80p' {p}", output="def visit_literal(self, node): ...\n")
        t += _pace(rng)
    script = "reproduce_issue.py"
    tl.bash(t, f"cat <<'EOF' > {script}\nfrom sphinx.testing import build\nassert build() == 'a b'\nEOF", output="")
    tl.appear(t, script, "assert build() == 'a b'\n")
    t += _pace(rng)
    k = 0
    while t < 12:
        k += 1
        if k == 6:
            script = "reproduce_issue_v2.py"
            tl.bash(t, f"cat <<'EOF' > {script}\nimport sys\nassert build() == 'a b', sys.argv\nEOF", output="")
            tl.appear(t, script, "assert build() == 'a b', 2\n")
            t += _pace(rng)
        tl.bash(t, "cd /testbed && sed -i 's/\\\\sphinxcode{/\\\\sphinxcode{%/' sphinx/writers/latex.py", output="")
        tl.appear(t, "sphinx/writers/latex.py", f"def visit_literal(self, node): ...  # v{k}\n")
        t += _pace(rng)
        assertion = (
            f'Traceback (most recent call last):\n  File "/testbed/{script}", line 3, in <module>\n'
            "AssertionError: expected 'a b' got 'a  b'\n"
        )
        tl.bash(t, f"cd /testbed && python {script}", output=assertion, exit_code=1)
        t += _pace(rng)
        if k % 2 == 0:
            tl.bash(t, "cd /testbed && git checkout -- sphinx/writers/latex.py", output="")
            tl.appear(t, "sphinx/writers/latex.py", "def visit_literal(self, node): ...\n")
            t += _pace(rng)
    tl.write_case(out / tl.case_id, 12)


def probe_counter(fmt: str, seed: int, out: Path) -> None:
    """A probe script edited and rerun, the same wrong value each time while an attempt counter in its
    output moves (issue 33's real Claude Code spiral, renamed probe_mc.py; openhands-ergt10-matplotlib-23299)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"spiral-probe-counter-{fmt}",
        fmt,
        "small",
        "From minute 4 the agent edits probe_mc.py (no debris name) and reruns it: 'attempt N: mc() "
        "returned 0.42, expected 0.5' every time, N counting up. A number that counts tries is not "
        "progress.",
        files_with({"src/app/mc.py": b"def mc(): return 0.42\n"}),
        outputs=["src/app/mc.py"],
        realistic=True,
        expect={"spiral": True, "notify_after_min": 4, "notify_before_min": 14, "signals": ["stuck_check"]},
    )
    t = productive(tl, 0.3, 4, rng, step=0.3, new_files=False)
    tl.write(t, "probe_mc.py", "from app.mc import mc\nprint(mc())\n")
    t += _pace(rng)
    n = 0
    while t < 14:
        n += 1
        tl.edit(t, "probe_mc.py")
        t += _pace(rng)
        tl.bash(t, "python probe_mc.py", output=f"attempt {n}: mc() returned 0.42, expected 0.5\n")
        t += _pace(rng)
    tl.write_case(out / tl.case_id, 14)


# ---- hard negatives ----------------------------------------------------------------------------


def ci_watch_reaches_total(fmt: str, seed: int, out: Path) -> None:
    """Polling a CI run whose job count climbs to 9/9 and then stays there while the run is wrapped up:
    the count reaching its total says the jobs are done (hidden hold-out v2's regression)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-ci-watch-reaches-total-{fmt}",
        fmt,
        "small",
        "Waiting on CI that finishes: from minute 3 the agent polls the run's jobs every 20 s; the count "
        "climbs 1/9 ... 9/9, then reads 9/9 six more times while the run's status catches up, and the "
        "agent moves on. A count that reached its total is a finished wait, not a stale poll.",
        files_with({"src/app/auth.py": b"def login(): ...\n"}),
        outputs=["src/app/auth.py"],
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.3, 3, rng, step=0.3)
    command = "sleep 20 && gh run view 4242 --json jobs -q '[.jobs[] | select(.status==\"completed\")] | length'"
    for done in [1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9]:
        tl.bash(t, command, output=f"{done}/9 jobs completed\n")
        t += rng.uniform(0.38, 0.45)
    productive(tl, t, t + 6, rng, step=0.3)
    tl.write_case(out / tl.case_id, t + 6)


def collect_subagents(fmt: str, seed: int, out: Path) -> None:
    """Sixteen parallel subagents launched, then each one's result read once (entire-f8-10e13fce67-0,
    and the 48-session set's minute-1.5 polling trip)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-collect-subagent-results-{fmt}",
        fmt,
        "small",
        "Collecting results: the agent starts sixteen review subagents, then reads each one's output "
        "once (TaskOutput, sixteen ids in 40 s) and writes up their findings. Collecting results is "
        "not polling.",
        files_with({}),
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.3, 1.0, rng, step=0.3)
    for i in range(16):
        tl.bash_output(
            t, f"a{i:02d}f{seed % 97:02d}", output="<status>completed</status>\nreview: 2 findings\n", tool="TaskOutput"
        )
        t += 0.04
    productive(tl, t + 0.2, t + 8, rng, step=0.3)
    tl.write_case(out / tl.case_id, t + 8)


def sibling_burst(fmt: str, seed: int, out: Path) -> None:
    """A parallel batch whose first call fails: Claude Code cancels the other seven ('Sibling tool
    call errored'); the agent reissues them one by one (shared-spotter-4d5611e5-subagent-agent-a2898e3)."""
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-sibling-cancelled-burst-{fmt}",
        fmt,
        "small",
        "One failed parallel batch: eight calls issued together, the first fails and Claude Code "
        "cancels the other seven. Calls that never ran are one event, not a burst of failures or polls.",
        files_with({}),
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.3, 3, rng, step=0.3)
    tl.bash(t, "cat src/app/missing.py", output="cat: src/app/missing.py: No such file or directory", exit_code=1)
    for i in range(7):
        tl.bash(
            t + 0.01 * (i + 1),
            f"sleep 5 && tail -n 20 /tmp/claude/tasks/b{i}.output",
            error=True,
            output="<tool_use_error>Sibling tool call errored</tool_use_error>",
        )
    productive(tl, t + 0.3, t + 8, rng, step=0.3)
    tl.write_case(out / tl.case_id, t + 8)


def shell_edit_progress(fmt: str, seed: int, out: Path) -> None:
    """Shell-only edits that make progress: each sed changes the failing tests, and they end green."""
    rng = random.Random(seed)
    tl = Timeline(
        f"neg-shell-edit-progress-{fmt}",
        fmt,
        "small",
        "Shell edits that work: the agent fixes a parser with sed -i and heredoc patches, rerunning "
        "the same test file each time; the failures shrink (5, 4, 3, 2, 1) and it passes.",
        files_with({"src/app/parser.py": b"def parse(s): ...\n"}),
        outputs=["src/app/parser.py"],
        realistic=True,
        expect={"spiral": False},
    )
    t = productive(tl, 0.3, 2, rng, step=0.3)
    for left in (5, 4, 3, 2, 1, 0):
        tl.bash(t, f"sed -i 's/TODO{left}/done/' src/app/parser.py", output="")
        tl.appear(t, "src/app/parser.py", f"def parse(s): ...  # {left}\n")
        t += _pace(rng)
        result = f"{left} failed, {12 - left} passed in 0.4s" if left else "12 passed in 0.4s"
        tl.bash(t, "pytest tests/test_parser.py -q", output=result + "\n", exit_code=1 if left else 0)
        t += _pace(rng)
    productive(tl, t, t + 4, rng, step=0.3)
    tl.write_case(out / tl.case_id, t + 4)


REAL_SHAPES: list[Callable[[Path], None]] = [
    partial(lint_varied_flags, "claude-stream-json", 301),
    partial(lint_varied_flags, "codex-json", 302),
    partial(commit_hook_alternating, "claude-transcript", 303),
    partial(commit_hook_alternating, "generic", 304),
    partial(scratch_sources, "codex-json", 305),
    partial(scratch_sources, "generic", 306),
    partial(shell_edit_reproduce, "generic", 307),
    partial(shell_edit_reproduce, "codex-json", 308),
    partial(probe_counter, "claude-stream-json", 309),
    partial(probe_counter, "generic", 310),
    partial(ci_watch_reaches_total, "claude-stream-json", 311),
    partial(ci_watch_reaches_total, "codex-json", 312),
    partial(collect_subagents, "claude-stream-json", 313),
    partial(collect_subagents, "claude-transcript", 314),
    partial(sibling_burst, "claude-stream-json", 315),
    partial(sibling_burst, "claude-transcript", 316),
    partial(shell_edit_progress, "generic", 317),
    partial(shell_edit_progress, "codex-json", 318),
]
