"""tools/convert_trajectory.py: other agents' trajectories into the generic event log, run as the
realsessions/fetch.py runs it (a real subprocess), on small trajectories written here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

CONVERTER = ROOT / "tools" / "convert_trajectory.py"


def _run(fmt: str, source: Path, out: Path, *args: str) -> str:
    p = subprocess.run(
        [sys.executable, str(CONVERTER), fmt, str(source), str(out), *args], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def _convert(fmt: str, source: Path, out: Path, *args: str) -> list[dict[str, object]]:
    _run(fmt, source, out, *args)
    return [json.loads(line)["data"] for line in out.read_text().splitlines()]


def _assistant(command: str, created: int) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": f"THOUGHT\n```bash\n{command}\n```",
        "extra": {"response": {"created": created}},
    }


def test_mini_swe_agent_keeps_the_end_of_a_long_output(tmp_path: Path) -> None:
    long_obs = (
        "<returncode>1</returncode>\n<warning>\nThe output of your last command was too long.\n</warning>"
        "<output_head>\n" + "line\n" * 50 + "</output_head>\n<elided_chars>\n9000 characters elided\n</elided_chars>\n"
        "<output_tail>\nFAILED tests/test_x.py::t - AssertionError\n1 failed, 3 passed in 0.2s\n</output_tail>"
    )
    traj = {
        "messages": [
            {"role": "system", "content": "x"},
            _assistant("pytest -q", 1_700_000_000),
            {"role": "user", "content": long_obs},
            _assistant("sed -n '1,5p' a.py", 1_700_000_012),
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nprint(1)\n</output>"},
        ]
    }
    src = tmp_path / "x.traj.json"
    src.write_text(json.dumps(traj))
    calls = _convert("mini-swe-agent", src, tmp_path / "out.jsonl")
    first, second = calls
    assert first["exit_code"] == 1 and "too long" not in str(first["output"])  # the agent's own warning left out
    assert str(first["output"]).rstrip().endswith("1 failed, 3 passed in 0.2s")
    assert second == {"tool": "Bash", "command": "sed -n '1,5p' a.py", "exit_code": 0, "output": "print(1)\n"}
    # deterministic: the same bytes again
    again = tmp_path / "again.jsonl"
    _convert("mini-swe-agent", src, again)
    assert again.read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_a_very_long_output_keeps_its_start_and_its_end(tmp_path: Path) -> None:
    body = "head line\n" + "x" * 20000 + "\nTraceback (most recent call last):\nValueError: the end\n"
    traj = {
        "messages": [
            _assistant("python run.py", 1_700_000_000),
            {"role": "user", "content": f"<returncode>1</returncode>\n<output>\n{body}</output>"},
        ]
    }
    src = tmp_path / "t.traj.json"
    src.write_text(json.dumps(traj))
    (call,) = _convert("mini-swe-agent", src, tmp_path / "o.jsonl")
    out = str(call["output"])
    assert out.startswith("head line") and out.rstrip().endswith("ValueError: the end") and len(out) <= 4000


def test_openhands_marks_a_refused_str_replace_failed(tmp_path: Path) -> None:
    events = [
        {
            "id": 0,
            "source": "user",
            "action": "message",
            "args": {"content": "<uploaded_files>/workspace/r</uploaded_files>"},
            "timestamp": "2025-01-01T00:00:00",
        },
        {
            "id": 1,
            "source": "agent",
            "action": "edit",
            "args": {"path": "/workspace/r/a.py"},
            "timestamp": "2025-01-01T00:00:05",
        },
        {
            "id": 2,
            "source": "agent",
            "observation": "edit",
            "cause": 1,
            "content": "ERROR: No replacement was performed, old_str `x` did not appear verbatim.",
        },
        {
            "id": 3,
            "source": "agent",
            "action": "edit",
            "args": {"path": "/workspace/r/a.py"},
            "timestamp": "2025-01-01T00:00:09",
        },
        {
            "id": 4,
            "source": "agent",
            "observation": "edit",
            "cause": 3,
            "content": "The file /workspace/r/a.py has been edited.",
        },
    ]
    src = tmp_path / "events.json"
    src.write_text(json.dumps(events))
    refused, went = _convert("openhands-events", src, tmp_path / "o.jsonl")
    assert refused["path"] == "a.py" and refused.get("is_error") is True
    assert went["path"] == "a.py" and "is_error" not in went
    # the folder the paths were made relative to is said, for the label's `workdir:`
    assert "paths relative to /workspace/r" in _run("openhands-events", src, tmp_path / "o.jsonl")
