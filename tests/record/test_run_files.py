"""Reading a run folder's workspace.jsonl a batch at a time (record/run_files.snapshots_upto)."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.record.run_files import snapshots_upto


def _snap(n: int) -> bytes:
    return (
        json.dumps({"ts": f"2026-05-20T09:00:{n:02d}Z", "porcelain": f"?? f{n}.py\n", "hashes": {}}) + "\n"
    ).encode()


def _take_all(path: Path, until: int, limit: int) -> tuple[list[str], int, int, int]:
    """Every snapshot up to `until`, as the evaluator takes them: (paths, garbage lines, end, calls)."""
    offset, seen, garbage, calls, more = 0, [], 0, 0, True
    while more:
        batch, offset, more = snapshots_upto(path, offset, until, limit)
        calls += 1
        for snap, _ in batch:
            if snap is None:
                garbage += 1
            else:
                seen += list(snap.status)
    return seen, garbage, offset, calls


def test_batches_take_every_snapshot_once_and_count_garbage(tmp_path: Path) -> None:
    ws = tmp_path / "workspace.jsonl"
    ws.write_bytes(_snap(1) + b"\n" + b"{torn garbage\n" + _snap(2) + b"\n\n" + _snap(3) + _snap(4))
    whole = ws.stat().st_size
    for limit in (1, 2, 3, 512):
        seen, garbage, end, calls = _take_all(ws, whole, limit)
        assert seen == ["f1.py", "f2.py", "f3.py", "f4.py"], limit
        assert garbage == 1 and end == whole
    assert _take_all(ws, whole, 512)[3] == 1  # a pass's few lines: one call


def test_a_torn_last_line_and_lines_past_until_wait(tmp_path: Path) -> None:
    ws = tmp_path / "workspace.jsonl"
    ws.write_bytes(_snap(1) + _snap(2))
    until = len(_snap(1))  # the file ended here when the events were read
    assert _take_all(ws, ws.stat().st_size + 100, 8)[0] == ["f1.py", "f2.py"]
    seen, _, end, _ = _take_all(ws, until, 8)
    assert seen == ["f1.py"] and end == until
    ws.write_bytes(_snap(1) + _snap(2)[:-5])  # the second line's end is not written yet
    seen, _, end, _ = _take_all(ws, 10**6, 8)
    assert seen == ["f1.py"] and end == until
    batch, end, more = snapshots_upto(tmp_path / "absent.jsonl", 0, 10**6, 8)
    assert (batch, end, more) == ([], 0, False)
