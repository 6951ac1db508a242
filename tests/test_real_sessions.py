"""The labelled real-session table (issue 11): labels.yaml is sound, cached files are the labelled
ones, docs/real-sessions.md is current, and the done-when holds.

The session files are other people's and never in the repository: the tests that need them skip
when the git-ignored cache (.cache/real-sessions, see realsessions/README.md) is empty.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import realsessions as rs
from tests.helpers import ROOT

SKIP = "no real sessions cached in .cache/real-sessions (see realsessions/README.md)"
DOC = ROOT / "docs" / "real-sessions.md"


def _entries() -> list[dict[str, Any]]:
    return rs.load_labels()


def _cached() -> list[dict[str, Any]]:
    """The non-shared entries whose file is in the cache; skips the test when there are none."""
    present = [e for e in _entries() if not e["file"].startswith(rs.SHARED_PREFIX) and rs.resolve(e).is_file()]
    if not present:
        pytest.skip(SKIP)
    return present


@functools.cache
def _report() -> dict[str, Any]:
    return rs.scan(BucketsFile().raw)


def test_labels_are_valid() -> None:
    entries = _entries()
    for e in entries:
        missing = [f for f in rs.FIELDS if f not in e]
        assert not missing, f"{e.get('id')}: missing {missing}"
        assert e["label"] in rs.LABELS, e["id"]
        assert e["format"] in rs.FORMATS, e["id"]
        assert isinstance(e["reason"], str) and len(e["reason"].split()) >= 2, e["id"]
        assert len(e["sha256"]) == 64 and int(e["sha256"], 16) >= 0, e["id"]
        assert isinstance(e["tool_calls"], int) and isinstance(e["minutes"], (int, float)), e["id"]
        assert {"repo", "path", "commit", "url"} <= set(e["source"]), e["id"]
        assert not Path(e["file"].removeprefix(rs.SHARED_PREFIX)).is_absolute() and ".." not in e["file"], e["id"]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "ids must be unique"
    files = [e["file"] for e in entries]
    assert len(files) == len(set(files)), "one entry per file"
    assert sum(not f.startswith(rs.SHARED_PREFIX) for f in files) >= 30


def test_the_session_files_are_kept_out_of_the_repository() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "/.cache/" in ignored


def test_cached_files_match_their_hashes() -> None:
    wrong = []
    for e in _cached():
        if rs.sha256(rs.resolve(e)) != e["sha256"]:
            wrong.append(e["id"])
        for sub in e.get("subagents", []):
            path = rs.CACHE / sub["file"]
            if path.is_file() and rs.sha256(path) != sub["sha256"]:
                wrong.append(f"{e['id']}: {sub['file']}")
    assert not wrong, f"cached files differ from the labelled ones: {wrong}"


def test_shared_files_match_their_hashes() -> None:
    shared = [e for e in _entries() if e["file"].startswith(rs.SHARED_PREFIX) and rs.resolve(e).is_file()]
    if not shared:
        pytest.skip(f"no ../shared/real-traces beside the project ({rs.SHARED})")
    assert [e["id"] for e in shared if rs.sha256(rs.resolve(e)) != e["sha256"]] == []


def test_the_committed_table_is_current() -> None:
    _cached()
    if _report()["missing"]:
        pytest.skip(f"some labelled sessions are not cached: {_report()['missing']}")
    assert rs.markdown(_report()) == DOC.read_text(), (
        "regenerate: ./dev.sh eval --real-sessions --markdown > docs/real-sessions.md"
    )


def test_the_replay_counts_what_the_labels_say() -> None:
    _cached()
    by_id = {e["id"]: e for e in _entries()}
    off = [
        (r["id"], r["tool_calls"], by_id[r["id"]]["tool_calls"])
        for r in _report()["rows"]
        if r["tool_calls"] != by_id[r["id"]]["tool_calls"]
    ]
    assert not off, f"(id, replayed calls, labelled calls) differ: {off}"


def test_done_when_no_healthy_session_pages_and_loops_do() -> None:
    """Issue 11: on the real-session table, 0 healthy sessions paged in either bucket; loops paged."""
    _cached()
    rows = _report()["rows"]
    healthy_paged = [
        (r["id"], b, r[b]["paged_at_min"], r[b]["signals"])
        for r in rows
        for b in rs.BUCKETS
        if r["label"] == "healthy" and r[b]["paged_at_min"] is not None
    ]
    assert not healthy_paged, f"healthy sessions paged: {healthy_paged}"
    loops = [r for r in rows if r["label"] == "loop"]
    assert loops, "no session labelled loop in the table: nothing shows that loops page"
    assert any(r[b]["paged_at_min"] is not None for r in loops for b in rs.BUCKETS), "no loop paged in either bucket"
