"""Realistic tool outputs for the benchmark's scenarios: what pytest, builds, linters, gh and curl print.

Each takes the volatile parts (durations, line numbers, tmp paths, ids) as
arguments or from the scenario's rng, so a loop can repeat one failure
"modulo" them and a healthy run can show its numbers moving.
"""

from __future__ import annotations

import random

_BAR = 80


def _rule(text: str, ch: str = "=") -> str:
    """pytest's centred section line."""
    pad = max(0, _BAR - len(text) - 2)
    return f"{ch * (pad // 2)} {text} {ch * (pad - pad // 2)}"


def seconds(rng: random.Random, lo: float = 1.5, hi: float = 9.5) -> str:
    return f"{rng.uniform(lo, hi):.2f}s"


def pytest_run(
    rng: random.Random,
    target: str,
    failures: list[tuple[str, str, int]],
    passed: int,
    *,
    workdir: str = "/home/dev/clone",
    duration: tuple[float, float] = (1.5, 9.5),
) -> str:
    """A pytest run: `failures` are (test name, error line, source line number); a summary line with a duration.

    pytest centres its summary in `=` rulers, so a duration that gains a digit
    (9.80s -> 10.20s) also shortens the ruler by one character.
    """
    n = len(failures) + passed
    out = [
        _rule("test session starts"),
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        f"rootdir: {workdir}",
        "configfile: pyproject.toml",
        f"collected {n} items",
        "",
        f"{target} {'F' * len(failures)}{'.' * passed}",
    ]
    if failures:
        out += ["", _rule("FAILURES")]
        tmp = f"/tmp/pytest-of-dev/pytest-{rng.randint(10, 999)}"
        for name, error, line in failures:
            out += [
                _rule(name, "_"),
                "",
                f"tmp_path = PosixPath('{tmp}/{name}0')",
                "",
                f"    def {name}(tmp_path):",
                "        store = Store(tmp_path)",
                '>       assert store.get("k") == "v"',
                f"E       {error}",
                "",
                f"src/app/store.py:{line}: AssertionError",
            ]
        out.append(_rule("short test summary info"))
        out += [f"FAILED {target}::{name} - {error}" for name, error, _ in failures]
    summary = ", ".join(x for x in (f"{len(failures)} failed" if failures else "", f"{passed} passed") if x)
    out.append(_rule(f"{summary} in {seconds(rng, *duration)}"))
    return "\n".join(out)


def traceback(script: str, line: int, error: str, *, workdir: str = "/home/dev/clone") -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            f'  File "{workdir}/{script}", line {line}, in <module>',
            "    main()",
            f'  File "{workdir}/{script}", line {line - 6}, in main',
            "    result = parse(sys.argv[1:])",
            error,
        ]
    )


def module_not_found(module: str = "app") -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "<string>", line 1, in <module>',
            f"ModuleNotFoundError: No module named '{module}'",
        ]
    )


def curl_401() -> str:
    return "curl: (22) The requested URL returned error: 401"


def build_log(rng: random.Random, changed: str, modules: int) -> str:
    """A successful build with timings."""
    lines = [
        "* Creating isolated environment: venv+pip...",
        "* Installing packages in isolated environment:",
        "  - hatchling",
        "* Getting build dependencies for wheel...",
        "* Building wheel...",
        f"  compiling {changed} ({rng.uniform(0.05, 0.9):.2f}s)",
        f"  {modules} modules, {rng.randint(40, 900)} KB",
        f"Successfully built x-0.1.0-py3-none-any.whl in {seconds(rng, 2, 14)}",
    ]
    return "\n".join(lines)


_RULES = [
    ("F401", "[*] `os` imported but unused"),
    ("E501", "Line too long (97 > 88)"),
    ("F841", "[*] Local variable `tmp` is assigned to but never used"),
    ("E711", "Comparison to `None` should be `cond is None`"),
    ("B006", "Do not use mutable data structures for argument defaults"),
    ("UP035", "[*] `typing.List` is deprecated, use `list` instead"),
]


def lint_report(rng: random.Random, files: list[str], count: int) -> tuple[str, int]:
    """`ruff check` output with `count` findings (the first few listed), or all clear; the exit code."""
    if count == 0:
        return "All checks passed!", 0
    shown = []
    for i in range(min(count, 6)):
        code, text = _RULES[(count + i) % len(_RULES)]
        shown.append(f"{files[(count + i) % len(files)]}:{rng.randint(3, 140)}:{rng.randint(1, 60)}: {code} {text}")
    fixable = max(0, count // 2)
    tail = [f"Found {count} error{'s' if count != 1 else ''}."]
    if fixable:
        tail.append(f"[*] {fixable} fixable with the `--fix` option.")
    return "\n".join(shown + tail), 1


def gh_run_status(run_id: int, status: str, conclusion: str = "") -> str:
    """`gh run view <id> --json status,conclusion` (non-tty)."""
    return f'{{"conclusion":"{conclusion}","status":"{status}"}}'


def gh_pr_checks(rng: random.Random, states: list[tuple[str, str]], run_id: int) -> tuple[str, int]:
    """`gh pr checks` (non-tty: tab-separated) for (check name, pass|fail|pending); exit 8 while pending."""
    lines = []
    for i, (name, state) in enumerate(states):
        elapsed = f"{rng.randint(1, 9)}m{rng.randint(0, 59)}s" if state != "pending" else "0"
        lines.append(f"{name}\t{state}\t{elapsed}\thttps://github.com/acme/x/actions/runs/{run_id}/job/{run_id + i}\t")
    pending = any(s == "pending" for _, s in states)
    failing = any(s == "fail" for _, s in states)
    return "\n".join(lines), 8 if pending else (1 if failing else 0)


def numbered_source(n: int, seed: int = 0) -> bytes:
    """A big module whose lines all differ (so chunks of it differ too)."""
    words = ["parse", "load", "store", "merge", "render", "check", "emit", "scan", "fold", "split"]
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        w = words[i % len(words)]
        lines.append(f"def {w}_{rng.choice(words)}_{i}(x): return {w}(x, {rng.randint(0, 99)!r})")
    return ("\n".join(lines) + "\n").encode()
