"""An exit 0 is a success only with a change the ticket asked for and no give-up (runs/endings.py):
the phrasings of orchestrator/data/give_up.yaml, the change rule, and the clone compared for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.infra import git
from orchestrator.runs import endings
from orchestrator.runs.endings import GAVE_UP, NO_CHANGE, asked_for, judge, load_give_ups

PHRASES = load_give_ups()


def test_every_phrasing_matches_its_example_and_none_matches_finished_work() -> None:
    assert len(PHRASES.patterns) >= 5
    for pattern, example in zip(PHRASES.patterns, PHRASES.examples, strict=True):
        assert example and pattern.search(example.replace("\u2019", "'")), (pattern.pattern, example)
    assert PHRASES.finished, "the data file lists final messages of finished work"
    for message in PHRASES.finished:
        assert PHRASES.said(message) is None, message


@pytest.mark.parametrize(
    "message",
    [
        "I still cannot find why mc() is wrong; stopping here.",
        "I couldn\u2019t fix the flaky fixture. The remaining failure is in conftest.py.",
        "After trying three approaches I haven't been able to make the build pass.",
        "Summary: the bug remains unresolved.",
        "I'm blocked by the missing credentials for the staging API.",
        "I give up on the vendored parser for now.",
    ],
)
def test_give_ups_of_both_clis_are_recognised(message: str) -> None:
    assert PHRASES.said(message) is not None


def test_the_quote_is_the_sentence_that_gives_up_redacted_and_short() -> None:
    message = (
        "I tried the token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 against the API. "
        "I was unable to fix the 401 with token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789. Bye."
    )
    quote = PHRASES.said(message)
    assert quote is not None and quote.startswith("I was unable to fix the 401")
    assert "abcdefghijklmnop" not in quote
    assert PHRASES.said("I could not fix it. " + "x" * 500) is not None
    assert len(PHRASES.said("I could not fix it " + "x" * 500) or "") <= 200


def test_a_bad_pattern_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "give_up.yaml"
    bad.write_text("phrases:\n  - pattern: '(unclosed'\n    example: x\n")
    with pytest.raises(ValueError, match=r"phrases\[0\]"):
        load_give_ups(bad)


def test_what_counts_as_a_change_the_ticket_asked_for() -> None:
    assert asked_for(["notes.txt"], [], [])  # neither declared: any file
    assert not asked_for([], [], [])
    assert asked_for(["calc.py", "probe.py"], ["calc.py"], [])
    assert not asked_for(["probe_mc.py", "tmp_debug.py"], ["calc.py"], [])
    assert asked_for(["src/app/roles.py"], [], ["src/**"])
    assert not asked_for(["docs/notes.md"], ["calc.py"], ["src/**"])
    assert asked_for(["docs/guide.md"], [], ["docs/"])


def test_judge_orders_give_up_before_no_change_and_keeps_an_unknown_clone_as_it_was() -> None:
    how, why = judge("agent exited 0", "I could not fix it.", [], ["calc.py"], [], PHRASES)
    assert how == GAVE_UP and '"I could not fix it."' in why
    how, why = judge("agent exited 0", "Done.", ["probe.py"], ["calc.py"], [], PHRASES)
    assert how == NO_CHANGE and "declared outputs or scope unchanged" in why
    assert judge("agent exited 0", "Done.", ["calc.py"], ["calc.py"], [], PHRASES) == ("succeeded", "agent exited 0")
    assert judge("agent exited 0", None, None, ["calc.py"], [], PHRASES) == ("succeeded", "agent exited 0")
    assert judge("agent exited 0", None, [], [], [], PHRASES)[0] == NO_CHANGE
    assert endings.give_ups().patterns  # the shipped file loads


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_changed_since_sees_edits_commits_and_new_files_not_ignored_ones(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "calc.py").write_text("x = 1\n")
    (repo / "old.py").write_text("y = 1\n")
    (repo / ".gitignore").write_text("build/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    start = git.head(repo)
    assert start is not None and git.changed_since(repo, start) == []

    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored")
    assert git.changed_since(repo, start) == []  # an ignored file is no change
    (repo / "calc.py").write_text("x = 2\n")
    (repo / "new.py").write_text("z = 1\n")
    assert git.changed_since(repo, start) == ["calc.py", "new.py"]
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "work")  # committed by the agent: still changed since the start
    (repo / "old.py").unlink()
    assert git.changed_since(repo, start) == ["calc.py", "new.py", "old.py"]
    assert git.changed_since(repo, "0" * 40) is None  # a start git does not know: cannot tell
    assert git.head(tmp_path) is None  # not a repository
