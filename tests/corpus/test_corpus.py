"""The corpus as a regression suite: every case replays to its expectation."""

from __future__ import annotations

import filecmp
import sys
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import replay_case
from orchestrator.record.case import find_cases
from tests.helpers import CORPUS, ROOT

CASES = find_cases([CORPUS])[0]


def test_corpus_has_enough_cases() -> None:
    assert len(CASES) >= 12
    ids = [c.name for c in CASES]
    assert sum(i.startswith("spiral-") for i in ids) >= 5
    assert sum(i.startswith(("neg-", "healthy-")) for i in ids) >= 7


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_replays_to_expectation(case: Path) -> None:
    result = replay_case(case, BucketsFile())
    assert result.passed, f"{case.name}: {result.failures} (signals {result.signals}, evidence {result.evidence})"
    assert result.skipped_lines == 0
    assert result.tool_calls > 0
    if result.spiral:
        assert result.evidence, "a page must carry evidence"
        assert result.evidence[-1].endswith("x expected wall-clock")
        if result.region == "healthy":  # a page before the soft band: the sustained-loop rule says so
            assert any("sustained-loop rule" in e for e in result.evidence), result.evidence
        else:
            assert result.region == "soft"


def test_builder_reproduces_committed_corpus(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_corpus
    finally:
        sys.path.pop(0)
    names = build_corpus.build(tmp_path)
    assert names
    for name in names:
        committed = ROOT / "corpus" / name
        for fname in ("case.yaml", "events.jsonl", "workspace.jsonl", "tracked.txt"):
            assert filecmp.cmp(tmp_path / name / fname, committed / fname, shallow=False), (
                f"{name}/{fname} differs from tools/build_corpus.py output; rebuild the corpus"
            )
