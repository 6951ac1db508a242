"""Spiral families for the rules beyond the seed: loops told apart by their outcomes, errors, subagents, scope.

Each carries the tool outputs real runs print (pytest tracebacks, curl and
import errors, `gh` status), with their volatile parts (line numbers,
durations, tmp paths) moving between repeats.
"""

from __future__ import annotations

import random

from orchestrator.corpus.behaviours import productive
from orchestrator.corpus.benchmark import toolout
from orchestrator.corpus.benchmark.registry import (
    Family,
    Labels,
    pick_onset,
    positive_labels,
    registrar,
)
from orchestrator.corpus.timeline import Timeline

FAMILIES: list[Family] = []
family = registrar(FAMILIES)

_ERROR = "AssertionError: assert None == 'v'"


def _same_failure(tl: Timeline, rng: random.Random, start: float, until: float, agent: str | None = None) -> None:
    """One tracked test failing the same way after every edit: only line numbers, durations and tmp paths move."""
    t, k = start, 0
    target = "tests/test_store.py"
    # a third of the suites take about ten seconds: then the duration, and the width of pytest's
    # `=` rulers around it, move from run to run (9.80s -> 10.20s shortens the ruler by one)
    duration = (6.0, 14.0) if rng.random() < 1 / 3 else (1.5, 9.5)
    while t < until:
        src = "src/app/store.py" if k % 4 != 3 else "src/app/config.py"
        tl.edit(t, src, agent=agent)
        t += rng.uniform(0.3, 0.7)
        fails = [("test_roundtrip", _ERROR, 40 + k)]
        out = toolout.pytest_run(rng, target, fails, 11, workdir=tl.workdir, duration=duration)
        tl.bash(t, f"pytest {target} -x -q", output=out, exit_code=1, agent=agent)
        t += rng.uniform(0.4, 0.9)
        if k % 3 == 1:
            tl.read(t, src, agent=agent)
            t += 0.3
        k += 1


@family(
    "same-failure-masked",
    True,
    "a tracked test rerun after each edit, failing identically but for line numbers, durations and tmp paths",
)
def _same_failure_masked(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    _same_failure(tl, rng, onset, stuck + 3)
    return positive_labels("sustained_bash", onset, soft, stuck)


@family(
    "rerun-unchanged-tree",
    True,
    "the same tracked test command rerun with varied flags while nothing in the tree moves",
)
def _rerun_unchanged(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    target = "tests/test_cli.py"
    flags = ["-q", "-x -q", "-vv", "--lf", "-k parse", "-q -p no:cacheprovider", "--tb=short"]
    t = onset
    while t < stuck + 3:
        flaky = rng.random() < 0.3  # sometimes it passes: still nothing changed between the runs
        fails = [] if flaky else [("test_parse_args", "AssertionError: assert ['-x'] == []", 17)]
        out = toolout.pytest_run(rng, target, fails, 7, workdir=tl.workdir)
        tl.bash(t, f"pytest {target} {rng.choice(flags)}", output=out, exit_code=0 if flaky else 1)
        t += rng.uniform(0.4, 0.9)
        if rng.random() < 0.5:
            tl.bash(t, rng.choice(["git log --oneline -5", "git status --short", "grep -n argv src/app/cli.py"]))
            t += rng.uniform(0.2, 0.5)
    return positive_labels("sustained_bash", onset, soft, stuck)


_PY_VARIANTS = [
    'python -c "import app"',
    'python3 -c "import app"',
    'python -c "from app import core; print(core.run())"',
    'python -c "import app.cli as c; print(c)"',
    "python -c 'import app, sys; print(sys.path)'",
    'PYTHONPATH=. python -c "import app"',
    'python -I -c "import app.store"',
    'python -c "from app.config import DEBUG; print(DEBUG)"',
    'cd src/.. && python -c "import app"',
    'python -X importtime -c "import app"',
    'env -u PYTHONHOME python -c "import app"',
]
_CURL_VARIANTS = [
    "curl -sf https://api.acme.dev/v1/items",
    'curl -sf -H "Authorization: Bearer $API_TOKEN" https://api.acme.dev/v1/items',
    "curl -sf -u dev:$API_PASS https://api.acme.dev/v1/items",
    "curl -sf 'https://api.acme.dev/v1/items?limit=1'",
    'curl -sf -H "X-Api-Key: $API_KEY" https://api.acme.dev/v1/items',
    "curl -sfL https://api.acme.dev/v1/items/",
    'curl -sf -H "Accept: application/json" https://api.acme.dev/v1/items',
    "curl -sf --http1.1 https://api.acme.dev/v1/items",
    'curl -sf -H "Authorization: token $GH_TOKEN" https://api.acme.dev/v1/items',
    "curl -sf https://api.acme.dev/v2/items",
]


@family(
    "same-error-varied-commands",
    True,
    "ten different python -c / curl variants failing with the same error; no script, no tree change",
)
def _same_error(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    py = rng.random() < 0.5
    variants, error, code = (
        (_PY_VARIANTS, toolout.module_not_found(), 1) if py else (_CURL_VARIANTS, toolout.curl_401(), 22)
    )
    t, k = onset, 0
    while t < stuck + 3:
        tl.bash(t, variants[k % len(variants)], output=error, exit_code=code)
        t += rng.uniform(0.4, 1.0)
        if rng.random() < 0.4:
            if rng.random() < 0.5:
                tl.read(t, rng.choice(["pyproject.toml", "src/app/__init__.py", "README.md"]))
            else:
                tl.bash(t, rng.choice(["pip list 2>/dev/null | grep -i app", "env | grep -c API", "which python"]))
            t += rng.uniform(0.2, 0.6)
        k += 1
    return positive_labels("same_error", onset, soft, stuck)


@family("subagent-loop", True, "a subagent reruns one failing test after each edit; the main thread waits on it")
def _subagent_loop(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    productive(tl, 0.5, onset, rng)
    agent = f"a{rng.randrange(16**6, 16**7):x}"
    tl.read(onset, "tests/test_store.py", agent=agent)
    _same_failure(tl, rng, onset + 0.3, stuck + 3, agent=agent)
    return positive_labels("sustained_bash", onset, soft, stuck)


_OUTSIDE = ["docs/guide.md", "docs/api.md", "scripts/release.sh", "Makefile", ".github/workflows/ci.yml", "setup.cfg"]


@family(
    "drift-out-of-scope",
    True,
    "scope declared; the agent keeps editing docs, CI and scripts outside it while the declared outputs stay put",
)
def _drift(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)
    for p in _OUTSIDE:
        tl.tracked[p] = f"# {p}\n".encode()
    tl.scope = ["src/app/**", "tests/**"]
    tl.outputs = ["src/app/core.py"]
    productive(tl, 0.5, onset, rng)
    t, k = onset, 0
    while t < stuck + 3:
        if k % 4 == 3:
            tl.write(t, f"docs/notes_{k:03d}.md")  # new pages: the touched set keeps growing
        else:
            tl.edit(t, rng.choice(_OUTSIDE))
        t += rng.uniform(0.4, 1.0)
        if rng.random() < 0.6:
            tl.bash(t, rng.choice(["make docs", "git diff --stat", "yamllint .github/workflows/ci.yml", "ls docs"]))
            t += rng.uniform(0.2, 0.6)
        if rng.random() < 0.25:
            tl.read(t, rng.choice(["src/app/core.py", "src/app/cli.py"]))
            t += 0.3
        k += 1
    return positive_labels("drift", onset, soft, stuck)


@family("poll-same-status", True, "a CI run polled with sleep and gh; it answers in_progress / pending forever")
def _poll_same(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> Labels:
    onset = pick_onset(rng, expected, soft)  # only the sleeps are polls to the seed: a late start has no time
    productive(tl, 0.5, onset, rng)
    run_id = rng.randint(9_000_000_000, 9_999_999_999)
    tl.bash(onset, "git push origin HEAD", output="To github.com:acme/x.git\n   3f03df3..b8d6146  HEAD -> fix-store")
    t = onset + 0.4
    while t < stuck + 3:
        tl.bash(t, f"sleep {rng.choice([20, 30, 45, 60])}", output="")
        t += rng.uniform(0.3, 0.8)
        if rng.random() < 0.6:
            tl.bash(
                t, f"gh run view {run_id} --json status,conclusion", output=toolout.gh_run_status(run_id, "in_progress")
            )
        else:
            out, code = toolout.gh_pr_checks(rng, [("test (3.12)", "pending"), ("lint", "pending")], run_id)
            tl.bash(t, "gh pr checks", output=out, exit_code=code)
        t += rng.uniform(0.2, 0.6)
    return positive_labels("polling", onset, soft, stuck)
