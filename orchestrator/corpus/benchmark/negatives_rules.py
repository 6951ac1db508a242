"""Hard negatives for the rules beyond the seed: reruns that make progress, distinct errors, busy subagents, scope.

The seed signals page on several of these (a tracked script rerun ten times
is `sustained_bash` whatever it printed); the outcomes in the output are
what says the run is moving.
"""

from __future__ import annotations

import random

from orchestrator.corpus.behaviours import productive
from orchestrator.corpus.benchmark import toolout
from orchestrator.corpus.benchmark.hard_negatives import end_of
from orchestrator.corpus.benchmark.registry import Family, Labels, negative_labels, registrar
from orchestrator.corpus.timeline import Timeline

FAMILIES: list[Family] = []
family = registrar(FAMILIES)

_MODULES = [f"src/app/mod_{i:02d}.py" for i in range(16)]


def _modules(tl: Timeline) -> list[str]:
    for p in _MODULES:
        tl.tracked[p] = f"import os\nimport sys\n\n\ndef f{p[-5:-3]}(x=[]):\n    return x\n".encode()
    return list(_MODULES)


@family("lint-fix-one-by-one", False, "a tracked lint script rerun after each fix while its findings count falls")
def _lint(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    files = _modules(tl)
    tl.tracked["lint.sh"] = b"#!/bin/sh\nruff check src tests\n"
    t, rounds = 0.5, 0
    while t < end:
        count = rng.randint(18, 40)
        out, code = toolout.lint_report(rng, files, count)
        tl.bash(t, "./lint.sh", output=out, exit_code=code)
        t += 0.5
        while count > 0 and t < end:
            tl.edit(t, files[(count + rounds) % len(files)])  # the file of the first finding listed
            t += rng.uniform(0.4, 1.0)
            count = max(0, count - rng.randint(1, 3))
            out, code = toolout.lint_report(rng, files, count)
            tl.bash(t, "./lint.sh", output=out, exit_code=code)
            t += rng.uniform(0.4, 0.9)
        rounds += 1
        t = productive(tl, t + 0.5, t + rng.uniform(4, 8), rng, prefix=f"lint{rounds}")
    return negative_labels(), end


@family(
    "test-failures-shrinking",
    False,
    "a new test file's failures fixed one after another: each rerun after an edit fails fewer (or differently)",
)
def _shrinking(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, cycle = 0.5, 0
    while t < end:
        target = f"tests/test_feature_{cycle:02d}.py"
        tl.write(t, target)
        t += 0.4
        names = [f"test_case_{i}" for i in range(rng.randint(5, 9))]
        failing = list(names)
        src = [f"src/app/feature_{cycle:02d}.py", "src/app/store.py", "src/app/config.py"]
        k = 0
        while t < end:
            fails = [(n, f"AssertionError: assert {i} == {i + 1}", 20 + 3 * i + k) for i, n in enumerate(failing)]
            out = toolout.pytest_run(rng, target, fails, len(names) - len(failing) + 6, workdir=tl.workdir)
            tl.bash(t, f"pytest {target} -q", output=out, exit_code=1 if failing else 0)
            t += rng.uniform(0.4, 0.8)
            if not failing:
                break
            tl.write(t, src[0]) if k == 0 else tl.edit(t, src[k % len(src)])
            t += rng.uniform(0.5, 1.2)
            if rng.random() < 0.75:
                failing.pop(rng.randrange(len(failing)))
            k += 1
        cycle += 1
        t = productive(tl, t + 0.5, t + rng.uniform(2, 5), rng, prefix=f"shrink{cycle}")
    return negative_labels(), end


@family("build-log-timings", False, "a tracked build after each edit of a different module, its log full of timings")
def _build_timings(
    tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float
) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    files = _modules(tl)
    t, k = 0.5, 0
    while t < end:
        changed = files[k % len(files)]
        tl.edit(t, changed)
        t += rng.uniform(0.4, 0.9)
        tl.bash(t, "./build.sh", output=toolout.build_log(rng, changed, len(files)))
        t += rng.uniform(0.5, 1.2)
        if k % 5 == 4:
            tl.bash(t, "ls -la dist/", output="x-0.1.0-py3-none-any.whl")
            t += 0.3
        k += 1
    return negative_labels(), end


@family("taskoutput-collect-subagents", False, "subagents started together, then TaskOutput on each finished one, once")
def _collect(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, r = 0.5, 0
    while t < end:
        t = productive(tl, t, t + rng.uniform(4, 9), rng, prefix=f"collect{r}")
        agents = [f"a{rng.randrange(16**6, 16**7):x}" for _ in range(rng.randint(5, 8))]
        for i, a in enumerate(agents):  # each explores its own part, in parallel
            tl.read(t + 0.1 * i, f"src/app/{['core', 'cli', 'store', 'config'][i % 4]}.py", agent=a)
            tl.bash(
                t + 0.1 * i + 0.4,
                f"grep -rn 'def ' src/app/part_{i}",
                output=f"src/app/part_{i}/x.py:1:def x()",
                agent=a,
            )
        t += 1.5
        for a in agents:
            done = f"<status>completed</status>\n<summary>{a}: 3 call sites of Store.get found</summary>"
            tl.bash_output(t, a, output=done, tool="TaskOutput")
            t += rng.uniform(0.1, 0.3)
        r += 1
    return negative_labels(), end


_ERRORS = [
    ("python -c 'import app'", "ModuleNotFoundError: No module named 'app'", 1),
    ("pip install -e .", "ERROR: file:///home/dev/clone does not appear to be a Python project", 1),
    ("python -m app.cli --help", "ImportError: cannot import name 'Store' from 'app.store'", 1),
    ("curl -sf https://api.acme.dev/v1/items", "curl: (22) The requested URL returned error: 401", 22),
    (
        "curl -sf -H 'Authorization: Bearer $T' https://api.acme.dev/v1/items",
        "curl: (22) The requested URL returned error: 404",
        22,
    ),
    ("python -m app.cli sync", "KeyError: 'API_URL'", 1),
    (
        "python -m app.cli sync --url https://api.acme.dev",
        "TypeError: sync() got an unexpected keyword argument 'url'",
        1,
    ),
    ("make test", "make: *** No rule to make target 'test'.  Stop.", 2),
]


@family("varied-errors-while-fixing", False, "varied commands failing with different errors, each fixed by an edit")
def _varied(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, k = 0.5, 0
    while t < end:
        cmd, error, code = _ERRORS[k % len(_ERRORS)]
        for _ in range(rng.randint(1, 3)):  # the same error two or three times before the fix
            tl.bash(t, cmd if rng.random() < 0.5 else cmd + " 2>&1 | tail -3", output=error, exit_code=code)
            t += rng.uniform(0.3, 0.7)
        tl.edit(t, rng.choice(["src/app/cli.py", "src/app/store.py", "pyproject.toml", "src/app/config.py"]))
        t += 0.4
        tl.bash(t, cmd, output="ok")
        t = productive(tl, t + 0.4, t + rng.uniform(2, 5), rng, prefix=f"fix{k}")
        k += 1
    return negative_labels(), end


@family("scope-brief-excursion", False, "scope declared; a few edits outside it now and then, outputs touched often")
def _excursion(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    outside = ["docs/guide.md", "README.md", ".github/workflows/ci.yml", "Makefile"]
    for p in outside:
        tl.tracked.setdefault(p, f"# {p}\n".encode())
    tl.scope = ["src/app/**", "tests/**"]
    tl.outputs = ["src/app/core.py", "src/app/store.py"]
    t, n = 0.5, 0
    while t < end:
        t = productive(tl, t, t + rng.uniform(4, 9), rng, prefix=f"scope{n}")
        tl.edit(t, rng.choice(tl.outputs))
        t += 0.5
        for _ in range(rng.randint(2, 7)):
            tl.edit(t, rng.choice(outside))
            t += rng.uniform(0.4, 1.0)
        tl.edit(t, rng.choice(tl.outputs))
        t += 0.5
        n += 1
    return negative_labels(), end


@family("healthy-subagents", False, "subagents doing distinct productive work, in parallel, each on its own files")
def _healthy_sub(tl: Timeline, rng: random.Random, expected: float, soft: float, stuck: float) -> tuple[Labels, float]:
    end = end_of(rng, soft, stuck)
    t, r = 0.5, 0
    while t < end:
        t = productive(tl, t, t + rng.uniform(3, 6), rng, prefix=f"main{r}")
        agents = [f"a{rng.randrange(16**6, 16**7):x}" for _ in range(rng.randint(2, 3))]
        span = rng.uniform(6, 12)
        for i, a in enumerate(agents):
            s, k = t + 0.2 * i, 0
            while s < t + span:
                mod = f"src/app/{a}_{k:02d}.py"
                step = k % 4
                if step == 0:
                    tl.read(s, rng.choice(["src/app/core.py", "src/app/store.py", "README.md"]), agent=a)
                elif step == 1:
                    tl.write(s, mod, agent=a)
                elif step == 2:
                    test = f"tests/test_{a}_{k:02d}.py"
                    tl.write(s, test, agent=a)
                else:
                    test = f"tests/test_{a}_{k - 1:02d}.py"
                    out = toolout.pytest_run(rng, test, [], rng.randint(2, 6), workdir=tl.workdir)
                    tl.bash(s, f"pytest {test} -q", output=out, agent=a)
                s += rng.uniform(0.8, 1.6)
                k += 1
        t += span + 1
        r += 1
    return negative_labels(), end
