"""What a test run said about itself, read from its output alone (pure).

A check whose exit status is another command's (`go test ./... 2>&1 | tail -30` exits with
`tail`'s 0; so does `pytest; echo done`) can only be judged by what it printed. Only a runner's
own summary or failure line counts, never a log line that happens to say "error": a passing run's
logs are full of those. The forms read are the common runners':

- failed: pytest's `=== 1 failed, 4 passed in 0.5s ===` (or `-q`'s bare `1 failed, 4 passed`) and
  `FAILED t.py::case`, unittest's `FAILED (failures=1)`, jest's `Tests: 1 failed` and `FAIL
  a.test.ts`, mocha's `2 failing`, go's `--- FAIL: TestX` and `FAIL<tab>pkg`, cargo's `test result:
  FAILED`, rspec's and mix's `5 examples, 1 failure`, bun's `1 fail`;
- passed: the same runners' summaries with no failure (`5 passed`, `OK`, `ok  pkg`, `test
  result: ok.`, `0 failures`, `0 fail`).

A failure line wins over a pass line (`--- FAIL` in one package, `ok` in another is a failing run).
"""

from __future__ import annotations

import re

_FAILED = re.compile(
    r"(?m)^=+ [^\n]*?\b[1-9]\d* (?:failed|errors?)\b[^\n]*=+\r?$"  # pytest's summary rule
    r"|^[1-9]\d* failed(?:,| in )[^\n]*$"  # pytest -q
    r"|^FAILED \S+::\S+"  # pytest's short summary
    r"|^FAILED \((?:failures|errors)=\d+"  # unittest
    r"|^\s*Tests:\s+[^\n]*?\b[1-9]\d* failed\b"  # jest
    r"|^\s*FAIL\s+\S+\.(?:[cm]?[jt]sx?)\b"  # jest / vitest: a failing test file
    r"|^\s*[1-9]\d* failing\s*\r?$"  # mocha
    r"|^--- FAIL: \S+|^FAIL\t\S+|^FAIL\r?$"  # go test
    r"|^test result: FAILED\b"  # cargo
    r"|\b\d+ (?:examples?|tests?|doctests?)\b[^\n]*?, [1-9]\d* failures?\b"  # rspec, mix
    r"|^\s*[1-9]\d* fail\s*\r?$"  # bun
)
_PASSED = re.compile(
    r"(?m)^=+ [^\n]*?\b\d+ passed\b[^\n]*=+\r?$"
    r"|^\d+ passed(?:,| in )[^\n]*$"
    r"|^OK(?: \([^)\n]*\))?\r?$"  # unittest, phpunit
    r"|^\s*Tests:\s+[^\n]*?\b\d+ passed\b"
    r"|^\s*\d+ passing\b"
    r"|^ok\s+\S+|^PASS\r?$"
    r"|^test result: ok\b"
    r"|\b\d+ (?:examples?|tests?|doctests?)\b[^\n]*?, 0 failures\b"
    r"|^\s*0 fail\s*\r?$"
)

FAILED, PASSED = "failed", "passed"


def verdict(output: str) -> tuple[str, str | None] | None:
    """(FAILED, the line that says so), (PASSED, None), or None when the output says neither."""
    m = _FAILED.search(output)
    if m is not None:
        return FAILED, m.group(0).strip()
    if _PASSED.search(output):
        return PASSED, None
    return None
