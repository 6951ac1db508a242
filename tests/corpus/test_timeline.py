"""Scripted timelines: the result facts and subagents they render, read back through the adapters."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orchestrator.corpus.behaviours import repo
from orchestrator.corpus.timeline import Timeline
from orchestrator.record.layout import CaseFiles
from spiral.adapters import FORMATS, make_adapter
from spiral.model import ToolCall


def _lines(folder: Path) -> list[dict]:
    return [orjson.loads(x) for x in CaseFiles(folder).events.read_bytes().splitlines()]


def _calls(tl: Timeline, folder: Path) -> list[ToolCall]:
    adapter = make_adapter(tl.fmt, tl.workdir)
    calls = [c for e in _lines(folder) for c in adapter.feed(0.0, e["data"]) if c.tool != "Note"]
    assert adapter.skipped == 0
    return calls


def _timeline(fmt: str, **kw: object) -> Timeline:
    tl = Timeline(
        "tl-case", fmt, "small", "timeline test", {**repo(), "src/app/big.py": b"alpha\nbeta\ngamma\ndelta\n"}, **kw
    )  # type: ignore[arg-type]
    tl.bash(1, "pytest tests/test_core.py -q", error=True, output="1 failed, 3 passed in 0.42s")
    tl.bash(2, "pytest tests/test_core.py -q", output="4 passed in 0.40s")
    tl.bash(3, "make", exit_code=2, output="make: *** [all] Error 2")
    tl.read(4, "src/app/big.py", offset=2, limit=2)
    tl.edit(5, "src/app/core.py")
    tl.bash_output(6, "b9", output="<status>running</status>")
    return tl


@pytest.mark.parametrize("fmt", FORMATS)
def test_realistic_result_facts_in_every_format(fmt: str, tmp_path: Path) -> None:
    tl = _timeline(fmt, realistic=True)
    tl.write_case(tmp_path, 10)
    calls = _calls(tl, tmp_path)
    shell = fmt == "codex-json"  # Codex reads files and task outputs with shell commands
    assert [c.tool for c in calls] == ["Bash"] * 3 + [
        "Bash" if shell else "Read",
        "Edit",
        "Bash" if shell else "BashOutput",
    ]
    failed, passed, make, read = calls[:4]
    assert failed.is_error and not passed.is_error and make.is_error
    assert "1 failed, 3 passed" in (failed.output or "")
    if fmt != "claude-transcript" and fmt != "claude-stream-json":
        assert (failed.exit_code, passed.exit_code, make.exit_code) == (1, 0, 2)
    else:
        assert (failed.exit_code, make.exit_code) == (1, 2)  # Claude prints no exit code on success
    if fmt.startswith("claude"):
        assert read.output == "2 beta 3 gamma"  # numbered from the offset (whitespace folded by the excerpt)
    else:
        assert read.output == "beta gamma"


@pytest.mark.parametrize("fmt", FORMATS)
def test_default_rendering_has_no_exit_codes_for_claude_and_generic(fmt: str, tmp_path: Path) -> None:
    tl = Timeline("tl-case", fmt, "small", "legacy", repo())
    tl.bash(1, "pytest -q", error=True, output="1 failed")
    tl.read(2, "src/app/core.py")
    tl.write_case(tmp_path, 5)
    bash, read = _calls(tl, tmp_path)
    assert bash.is_error and bash.output == (None if fmt == "generic" else "1 failed")
    assert bash.exit_code == (1 if fmt == "codex-json" else None)
    assert read.output in (None, "(file contents)")


def test_claude_inputs_task_output_and_read_offsets(tmp_path: Path) -> None:
    tl = Timeline("tl-case", "claude-stream-json", "small", "inputs", repo())
    tl.read(1, "src/app/core.py", offset=10, limit=5)
    tl.bash_output(2, "bd0afab", tool="TaskOutput")
    tl.bash_output(3, "b2")
    tl.write_case(tmp_path, 5)
    inputs = [
        b["input"]
        for e in _lines(tmp_path)
        if e["data"].get("type") == "assistant"
        for b in e["data"]["message"]["content"]
        if b["type"] == "tool_use"
    ]
    assert inputs[0] == {"file_path": f"{tl.workdir}/src/app/core.py", "offset": 10, "limit": 5}
    assert inputs[1] == {"task_id": "bd0afab", "block": True, "timeout": 30000}
    assert inputs[2] == {"bash_id": "b2"}


def test_subagent_calls_in_stream_json_and_transcript(tmp_path: Path) -> None:
    for fmt in ("claude-stream-json", "claude-transcript"):
        tl = Timeline("tl-sub", fmt, "small", "subagents", repo(), realistic=True)
        tl.bash(1, "ls")
        tl.read(2, "src/app/core.py", agent="a1")
        tl.bash(3, "pytest -q", agent="a1")
        tl.bash(4, "git status")
        folder = tmp_path / fmt
        tl.write_case(folder, 6)
        lines = [e["data"] for e in _lines(folder)]
        uses = [
            (d, b)
            for d in lines
            if d.get("type") == "assistant"
            for b in d["message"]["content"]
            if b["type"] == "tool_use"
        ]
        names = [b["name"] for _, b in uses]
        assert names == ["Bash", "Task", "Read", "Bash", "Bash"]
        task_id = uses[1][1]["id"]
        results = [
            b["tool_use_id"]
            for d in lines
            if d.get("type") == "user" and isinstance(d["message"]["content"], list)
            for b in d["message"]["content"]
        ]
        assert task_id in results  # the Task call is answered
        assert results.index(task_id) > results.index(uses[3][1]["id"])  # after the subagent's last call
        if fmt == "claude-stream-json":
            assert [d["parent_tool_use_id"] for d, _ in uses] == [None, None, task_id, task_id, None]
        else:
            assert [(d["isSidechain"], d.get("agentId")) for d, _ in uses] == [
                (False, None),
                (False, None),
                (True, "a1"),
                (True, "a1"),
                (False, None),
            ]
        assert [c.tool for c in _calls(tl, folder)] == ["Bash", "Agent", "Read", "Bash", "Bash"]


@pytest.mark.parametrize("fmt", ["codex-json", "generic"])
def test_subagent_calls_render_as_ordinary_calls_without_subagents(fmt: str, tmp_path: Path) -> None:
    tl = Timeline("tl-sub", fmt, "small", "subagents", repo(), realistic=True)
    tl.bash(1, "ls", agent="a1")
    tl.read(2, "src/app/core.py", agent="a1")
    tl.write_case(tmp_path, 4)
    assert [c.tool for c in _calls(tl, tmp_path)] == (["Bash", "Bash"] if fmt == "codex-json" else ["Bash", "Read"])


def test_scope_written_only_when_declared(tmp_path: Path) -> None:
    tl = Timeline("tl-scope", "generic", "small", "scope", repo())
    tl.bash(1, "ls")
    tl.write_case(tmp_path / "a", 3)
    assert "scope:" not in CaseFiles(tmp_path / "a").case_yaml.read_text()
    tl.scope = ["src/**", "tests/test_*.py"]
    tl.write_case(tmp_path / "b", 3)
    text = CaseFiles(tmp_path / "b").case_yaml.read_text()
    assert "scope:" in text and "src/**" in text and "tests/test_*.py" in text
