"""`corpus import` of a Claude transcript merges its session's `<stem>/subagents/agent-*.jsonl` files."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import REAL_TRACES, cli

CWD = "/home/dev/work/clone"
SESSION = "0b7c1d2e-1111-4222-8333-944455556666"


def _ts(second: int) -> str:
    return f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}.000Z"


def _call(second: int, uid: str, tool: str, args: dict[str, Any], agent: str | None = None) -> list[dict[str, Any]]:
    """A tool_use line and its tool_result line (one second later) of a Claude Code transcript."""
    side = {"isSidechain": agent is not None, **({"agentId": agent} if agent else {})}
    common = {"cwd": CWD, "sessionId": SESSION, "type": "assistant", **side}
    use = {
        **common,
        "uuid": f"a-{uid}",
        "timestamp": _ts(second),
        "message": {
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "id": f"msg_{uid}",
            "content": [{"type": "tool_use", "id": f"toolu_{uid}", "name": tool, "input": args}],
        },
    }
    result = {
        **common,
        "type": "user",
        "uuid": f"u-{uid}",
        "timestamp": _ts(second + 1),
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{uid}", "content": "ok"}],
        },
    }
    return [use, result]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _session(tmp_path: Path) -> Path:
    main = tmp_path / "projects" / f"{SESSION}.jsonl"
    lines = [
        {
            "type": "user",
            "cwd": CWD,
            "sessionId": SESSION,
            "timestamp": _ts(0),
            "message": {"role": "user", "content": "go"},
        }
    ]
    for i, second in enumerate((10, 40, 70)):
        lines += _call(second, f"m{i}", "Bash", {"command": f"python -m pytest tests/test_{i}.py"})
    _write(main, lines)
    sub = main.parent / SESSION / "subagents"
    _write(
        sub / "agent-aaa111.jsonl",
        [x for s in (20, 50) for x in _call(s, f"a{s}", "Read", {"file_path": f"{CWD}/src/x{s}.py"}, "aaa111")],
    )
    _write(sub / "agent-bbb222.jsonl", _call(30, "b30", "Grep", {"pattern": "def main"}, "bbb222"))
    (sub / "notes.txt").write_text("not a transcript\n")  # only agent-*.jsonl files are subagents
    return main


def _import(log: Path, out: Path, fmt: str = "claude-transcript") -> Any:
    return cli("corpus", "import", str(log), "--format", fmt, "--bucket", "small", "--out", str(out))


def test_import_merges_the_subagent_transcripts_in_time_order(tmp_path: Path) -> None:
    main = _session(tmp_path)
    out = tmp_path / "case-merged"
    p = _import(main, out)
    assert p.returncode == 0, p.stderr
    assert "merged 2 subagent file(s), 6 lines" in p.stderr, p.stderr
    assert str(main.parent / SESSION / "subagents") in p.stderr
    assert "13 lines" in p.stdout and "6 tool calls" in p.stdout, p.stdout
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    assert len(events) == 13
    stamps = [e["ts"] for e in events]
    assert stamps == sorted(stamps)
    uses = [e["data"] for e in events if e["data"]["type"] == "assistant"]
    assert [u.get("agentId") for u in uses] == [None, "aaa111", "bbb222", None, "aaa111", None]
    assert all(u["isSidechain"] == ("agentId" in u) for u in uses)
    case = yaml.safe_load((out / "case.yaml").read_text())
    assert "merged 6 lines of 2 subagent transcript(s)" in case["description"]
    assert case["workdir"] == CWD and "scope" not in case
    r = cli("replay", str(out), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tool_calls"] == 6


def test_a_transcript_without_a_subagents_folder_imports_as_before(tmp_path: Path) -> None:
    main = _session(tmp_path)
    shutil.rmtree(main.parent / SESSION)
    out = tmp_path / "case-alone"
    p = _import(main, out)
    assert p.returncode == 0, p.stderr
    assert "subagent" not in p.stderr and "subagent" not in (out / "case.yaml").read_text()
    assert "7 lines" in p.stdout and "3 tool calls" in p.stdout, p.stdout


def test_a_gzipped_transcript_finds_its_subagents_beside_it(tmp_path: Path) -> None:
    main = _session(tmp_path)
    gz = main.with_name(main.name + ".gz")
    gz.write_bytes(gzip.compress(main.read_bytes()))
    main.unlink()
    p = _import(gz, tmp_path / "case-gz")
    assert p.returncode == 0, p.stderr
    assert "merged 2 subagent file(s), 6 lines" in p.stderr, p.stderr


def test_other_formats_do_not_look_for_subagents(tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    _write(log, [{"tool": "Bash", "command": "ls"}])
    _write(tmp_path / "agent" / "subagents" / "agent-x.jsonl", [{"tool": "Bash", "command": "pwd"}])
    p = _import(log, tmp_path / "case-generic", fmt="generic")
    assert p.returncode == 0, p.stderr
    assert "subagent" not in p.stderr and "1 tool calls" in p.stdout, p.stdout


def test_the_real_subagent_transcript_merges(tmp_path: Path) -> None:
    """The recorded subagent of session 4d5611e5 (shared/real-traces) beside a small main transcript."""
    real = REAL_TRACES / "claude-transcript" / "spotter_4d5611e5_subagent_agent-a2898e3.jsonl"
    if not real.is_file():  # ../shared is beside the project on CI and in a developer's checkout, not everywhere
        pytest.skip(f"no {real} (../shared/real-traces beside the project)")
    first = json.loads(real.read_text().splitlines()[0])
    sid, cwd = first["sessionId"], first["cwd"]
    main = tmp_path / f"{sid}.jsonl"
    opening = {"type": "user", "cwd": cwd, "sessionId": sid, "timestamp": "2026-02-12T16:00:00.000Z"}
    _write(main, [{**opening, "message": {"role": "user", "content": "explore"}}])
    sub = tmp_path / sid / "subagents" / "agent-a2898e3.jsonl"
    sub.parent.mkdir(parents=True)
    shutil.copyfile(real, sub)
    n = len([x for x in real.read_text().splitlines() if x.strip()])
    out = tmp_path / "case-real"
    p = _import(main, out)
    assert p.returncode == 0, p.stderr
    assert f"merged 1 subagent file(s), {n} lines" in p.stderr, p.stderr
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    assert len(events) == n + 1 and events[0]["data"].get("isSidechain") is not True
    assert sum(1 for e in events if e["data"].get("agentId") == "a2898e3") == n
    r = json.loads(cli("replay", str(out), "--json").stdout)
    assert r["tool_calls"] > 0


def test_a_session_with_more_subagent_files_than_open_files_allowed(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    from tests.helpers import ROOT

    main = _session(tmp_path)
    sub = main.parent / SESSION / "subagents"
    for i in range(300):
        _write(sub / f"agent-x{i:04d}.jsonl", _call(100 + i, f"x{i}", "Read", {"file_path": f"{CWD}/f{i}.py"}, "x"))

    def few_files() -> None:  # 300 subagent files and 128 descriptors: they are never all open at once
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    argv = ["corpus", "import", str(main), "--format", "claude-transcript", "--bucket", "small"]
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv, "--out", str(tmp_path / "case")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=few_files,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "306 tool calls" in p.stdout, p.stdout
