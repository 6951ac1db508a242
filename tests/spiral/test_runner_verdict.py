"""spiral/runner_verdict.py: what a test run said about itself, where its exit status was another
command's. Only a runner's own summary or failure line counts; the log lines of a passing run that
say "error", "failed" or "not found" do not."""

from __future__ import annotations

import pytest

from spiral.runner_verdict import FAILED, PASSED, verdict


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("--- FAIL: TestShadowReset (0.41s)\nFAIL\nFAIL\tentire.io/cli/x\t0.9s\n", "--- FAIL: TestShadowReset"),
        ("ok  \tentire.io/cli/a\t0.2s\n--- FAIL: TestB (0.1s)\n", "--- FAIL: TestB"),
        ("building...\r\nFAIL\r\n", "FAIL"),
        ("====== 1 failed, 4 passed in 0.52s ======\n", "====== 1 failed, 4 passed in 0.52s ======"),
        ("..F..\n1 failed, 4 passed in 0.12s\n", "1 failed, 4 passed in 0.12s"),
        ("FAILED tests/test_x.py::test_a - AssertionError: 1 != 2\n", "FAILED tests/test_x.py::test_a"),
        ("Ran 3 tests in 0.01s\n\nFAILED (failures=1)\n", "FAILED (failures=1"),
        ("FAIL src/a.test.ts\nTests:       1 failed, 5 passed, 6 total\n", "FAIL src/a.test.ts"),
        ("  5 passing (30ms)\n  2 failing\n", "2 failing"),
        ("test result: FAILED. 1 passed; 2 failed; 0 ignored\n", "test result: FAILED"),
        ("Finished in 0.3 seconds\n5 examples, 1 failure\n", "5 examples, 1 failure"),
        (" 4 pass\n 1 fail\n", "1 fail"),
    ],
)
def test_a_runner_s_failure_line_is_the_verdict(output: str, line: str) -> None:
    assert verdict(output) == (FAILED, line)


@pytest.mark.parametrize(
    "output",
    [
        "ERROR:root:upstream connection refused, retrying\n...\nRan 8 tests in 0.2s\n\nOK\n",
        "FAIL: retrying connection\n===== 5 passed in 0.30s =====\n",
        "5 passed in 0.10s\n",
        "  5 passing (30ms)\n",
        "test result: ok. 3 passed; 0 failed; 0 ignored\n",
        "Finished in 0.3 seconds\n5 examples, 0 failures\n",
        "Finished in 0.1 seconds\n12 tests, 0 failures\n",
        " 5 pass\n 0 fail\n",
        "ok  \tentire.io/cli/a\t0.2s\nPASS\n",
        "Tests:       6 passed, 6 total\n",
    ],
)
def test_a_runner_s_pass_summary_is_a_pass(output: str) -> None:
    assert verdict(output) == (PASSED, None)


@pytest.mark.parametrize(
    "output",
    [
        "attempt 1 failed, retrying\n",
        "npm WARN 2 failed optional dependencies\n",
        "1 failed to import, skipping\n",
        "vite v5.0 building for production...\nsource map for x.js not found\n✓ built in 2.10s\n",
        "",
    ],
)
def test_what_is_no_runner_s_summary_says_neither(output: str) -> None:
    assert verdict(output) is None
