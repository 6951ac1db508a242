"""`replay` and `eval` through the real CLI, in subprocesses: tables, exit codes, unreadable lines."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli, copy_case


def test_replay_table_and_failing_case_exit_1(tmp_path: Path) -> None:
    case = copy_case("healthy-001-steady-feature", tmp_path)
    p = cli("replay", str(case))
    assert p.returncode == 0 and "pass" in p.stdout
    text = (case / "case.yaml").read_text().replace("spiral: false", "spiral: true")
    (case / "case.yaml").write_text(text)
    p = cli("replay", str(case), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["pass"] is False


def test_torn_and_garbage_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    case = copy_case("spiral-003-bg-polling", tmp_path)
    with (case / "events.jsonl").open("ab") as fh:
        fh.write(b"not json at all\n")
        fh.write(b"\xff\xfe\x00 binary junk\n")
        fh.write(b"[1, 2, 3]\n")
        fh.write(b'{"ts": "2026-05-20T09:39:00Z", "data": {"type": "mystery"}}\n')
        fh.write(b'{"ts": "nonsense", "data": {}}\n')
        fh.write(b'{"ts": "2026-05-20T09:39:30Z", "data": {"type": "assistant", "mess')  # torn last line
    p = cli("replay", str(case), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["skipped_lines"] == 6
    assert out["spiral"] is True
    assert "Traceback" not in p.stderr


def test_missing_paths_are_clear_errors(tmp_path: Path) -> None:
    p = cli("replay", str(tmp_path / "nope"))
    assert p.returncode == 2 and "not a case folder" in p.stderr
    p = cli("eval", str(tmp_path / "nope"))
    assert p.returncode == 2 and "no such folder" in p.stderr
    p = cli("eval", str(tmp_path))
    assert p.returncode == 2 and "no case folders" in p.stderr
