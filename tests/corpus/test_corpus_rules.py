"""The issue-11 corpus cases, one per rule principle in several log formats: the evidence each page names.

tests/corpus/test_corpus.py replays every case to its expectation; this checks what
the issue asks beyond the verdict: a loop page says the test failed
identically N times, M of them after edits; a subagent's calls are
attributed to it; drift names the files outside the scope; a rerun on an
unchanged tree and the same error from varied commands say so; and the
healthy counter-cases that the five seed signals alone would page stay quiet
with the rules.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import ReplayResult, replay_case
from orchestrator.record.case import load_case
from spiral.settings import Settings
from tests.helpers import CORPUS, SEED_RAW

FORMATS = ("claude-stream-json", "claude-transcript", "codex-json", "generic")
PRINCIPLES = {  # case-id prefix -> the formats it is built in
    "spiral-same-failure-after-edits-": ("claude-stream-json", "codex-json"),
    "neg-build-after-edits-": ("generic", "claude-transcript"),
    "neg-shrinking-failures-": ("codex-json", "claude-stream-json"),
    "spiral-rerun-unchanged-tree-": ("claude-transcript", "generic"),
    "spiral-same-error-varied-commands-": ("codex-json", "generic", "claude-stream-json"),
    "spiral-subagent-same-failure-": ("claude-stream-json", "claude-transcript"),
    "spiral-drift-out-of-scope-": ("codex-json", "generic"),
    "neg-drift-brief-excursion-": ("claude-transcript", "codex-json"),
    "neg-ci-poll-progress-": ("claude-stream-json", "codex-json"),
    "spiral-ci-poll-stale-": ("generic", "claude-transcript"),
}
CASE_IDS = [prefix + fmt for prefix, fmts in PRINCIPLES.items() for fmt in fmts]


@cache
def _buckets(seed_only: bool) -> BucketsFile:
    buckets = BucketsFile()
    if seed_only:  # the five signals alone: buckets.yaml without its `rules:` section
        buckets.raw = SEED_RAW
        buckets.settings = Settings.from_mapping(SEED_RAW)
    return buckets


@cache
def _replay(case_id: str, seed_only: bool = False) -> ReplayResult:
    return replay_case(CORPUS / case_id, _buckets(seed_only))


def _ids(prefix: str) -> list[str]:
    return [c for c in CASE_IDS if c.startswith(prefix)]


def _evidence(result: ReplayResult, needle: str) -> str:
    hits = [e for e in result.evidence if needle in e]
    assert hits, f"{result.case.id}: no evidence line with {needle!r}: {result.evidence}"
    return hits[0]


def test_every_principle_in_at_least_two_formats_and_every_format_used() -> None:
    used: set[str] = set()
    for prefix, fmts in PRINCIPLES.items():
        assert len(fmts) >= 2, prefix
        for fmt in fmts:
            case = load_case(CORPUS / (prefix + fmt))
            assert case.format == fmt
            used.add(fmt)
    assert used == set(FORMATS)
    assert set(PRINCIPLES["spiral-subagent-same-failure-"]) <= {"claude-stream-json", "claude-transcript"}


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_case_pages_as_its_principle_says(case_id: str) -> None:
    result = _replay(case_id)
    assert result.passed, f"{case_id}: {result.failures} (signals {result.signals}, evidence {result.evidence})"
    assert result.spiral is case_id.startswith("spiral-")
    if result.spiral:
        bucket = load_case(CORPUS / case_id).bucket
        soft, stuck = {"small": (30, 35), "medium": (70, 85)}[bucket]
        assert result.notified_at_min is not None and soft <= result.notified_at_min < stuck


@pytest.mark.parametrize("case_id", _ids("spiral-same-failure-after-edits-") + _ids("spiral-subagent-same-failure-"))
def test_loop_page_says_it_failed_identically_after_edits(case_id: str) -> None:
    result = _replay(case_id)
    assert "sustained_bash" in result.signals
    ev = _evidence(result, "tool calls ran tests/test_store.py")
    m = re.search(r"it failed identically (\d+) times, (\d+) of them after edits to ([^;]+)", ev)
    assert m, ev
    times, after, files = int(m.group(1)), int(m.group(2)), m.group(3)
    assert times >= 10 and after >= times - 1, ev
    assert "src/app/store.py" in files, ev


@pytest.mark.parametrize("case_id", _ids("spiral-subagent-same-failure-"))
def test_subagent_loop_is_attributed_to_subagents(case_id: str) -> None:
    ev = _evidence(_replay(case_id), "tool calls ran tests/test_store.py")
    ran = int(ev.split(" of the last ", 1)[0])
    assert f"; {ran} of these calls made by subagents" in ev, ev


@pytest.mark.parametrize("case_id", _ids("spiral-rerun-unchanged-tree-"))
def test_unchanged_tree_page_says_so(case_id: str) -> None:
    result = _replay(case_id)
    assert "sustained_bash" in result.signals
    ev = _evidence(result, "tool calls ran tests/test_api.py")
    m = re.search(r"(\d+) reruns on an unchanged tree", ev)
    assert m and int(m.group(1)) >= 9, ev
    assert "after edits" not in ev


@pytest.mark.parametrize("case_id", _ids("spiral-same-error-varied-commands-"))
def test_same_error_from_varied_commands(case_id: str) -> None:
    result = _replay(case_id)
    assert "same_error" in result.signals
    ev = _evidence(result, "failed with the same error")
    m = re.search(r"from (\d+) different commands; nothing but debris changed in between", ev)
    assert m and int(m.group(1)) >= 8, ev
    assert "ModuleNotFoundError: No module named 'app.plugins'" in ev or "returned error: 401" in ev
    assert not _replay(case_id, seed_only=True).spiral  # no script target: the five signals do not see it


@pytest.mark.parametrize("case_id", _ids("spiral-drift-out-of-scope-"))
def test_drift_names_the_files_outside_the_scope(case_id: str) -> None:
    result = _replay(case_id)
    assert "drift" in result.signals
    ev = _evidence(result, "fell outside the ticket's scope")
    m = re.search(r"the last (\d+) edits fell outside the ticket's scope \(([^)]+)\); no file in scope", ev)
    assert m and int(m.group(1)) >= 6, ev
    named = m.group(2).split(", ")
    assert len(named) == 4 and all(not p.startswith(("src/app/", "tests/")) for p in named), named
    assert any(p.startswith(("docs/", "scripts/", "src/legacy/", "src/billing/")) for p in named)
    assert not _replay(case_id, seed_only=True).spiral  # only the drift rule sees it


@pytest.mark.parametrize("case_id", _ids("spiral-ci-poll-stale-"))
def test_stale_ci_poll_pages_on_polling(case_id: str) -> None:
    result = _replay(case_id)
    ev = _evidence(result, "shell calls polled a background task")
    assert int(ev.split(" of the last ", 1)[0]) >= 6 and "sleep x" in ev, ev


@pytest.mark.parametrize(
    "case_id", _ids("neg-build-after-edits-") + _ids("neg-shrinking-failures-") + _ids("neg-ci-poll-progress-")
)
def test_healthy_reruns_page_with_the_seed_signals_alone(case_id: str) -> None:
    """The counter-cases are the seed's false pages: the rules, not the case, make them quiet."""
    seed = _replay(case_id, seed_only=True)
    assert seed.spiral, f"{case_id}: the seed signals alone no longer page it ({seed.signals})"
    expected = "polling" if "ci-poll" in case_id else "sustained_bash"
    assert expected in seed.signals
    rules = _replay(case_id)
    assert not rules.spiral and expected not in rules.signals, (rules.signals, rules.evidence)


def test_descriptions_say_the_seed_would_page() -> None:
    for case_id in _ids("neg-build-after-edits-") + _ids("neg-shrinking-failures-") + _ids("neg-ci-poll-progress-"):
        text = " ".join(load_case(CORPUS / case_id).description.split())
        assert "seed" in text, case_id


def test_new_cases_are_listed_here() -> None:
    """Every scripted case named for a principle above is checked by this file."""
    prefixes = tuple(PRINCIPLES)
    found = sorted(p.name for p in Path(CORPUS).iterdir() if p.name.startswith(prefixes) and p.name not in HARD)
    assert found == sorted(CASE_IDS)


# ---- harder variants (tools/build_corpus.py HARD_VARIANTS) ------------------------------------------

HARD = {
    # outputs are kept as their two ends: a duration that changes its number of digits (9.87s, 12.31s)
    # shifts where the tail starts, so the tail is compared from its end
    "spiral-same-failure-slow-test-generic": "tool calls ran tests/test_store.py; it failed identically",
    "spiral-same-failure-slow-test-claude-stream-json": "tool calls ran tests/test_store.py; it failed identically",
    # gh's ELAPSED `2m31s` is a duration too
    "spiral-ci-poll-stale-list-codex-json": "shell calls polled a background task",
    # `"conclusion": ""` in gh's JSON is not a finished run
    "spiral-ci-poll-stale-json-claude-transcript": "shell calls polled a background task",
}


@pytest.mark.parametrize("case_id", sorted(HARD))
def test_hard_variant(case_id: str) -> None:
    """Each harder variant, judged as its principle says: a page in the soft band on the expected signal."""
    result = _replay(case_id)
    assert result.passed, (result.failures, result.signals, result.evidence)
    _evidence(result, HARD[case_id])
