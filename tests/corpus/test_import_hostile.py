"""`corpus import` on logs as they arrive in the wild: damaged gzip, a byte-order mark, a line nested too
deep to write again, secrets in the commands; and the live capture on the same deep line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from orchestrator.record.clock import RunClock
from orchestrator.runs.capture import WriteTrouble, capture
from tests.helpers import cli

TOKEN = "sk-ant-api03-" + "Q7vX2mN9pL4kR8sT1wY6zB3cD5fG0hJ" * 2


def _transcript(cwd: str = "/work/app") -> list[dict[str, object]]:
    """A Claude transcript of three Bash calls, paired by their tool_use ids."""
    out: list[dict[str, object]] = []
    for i in range(3):
        ts = f"2026-01-01T00:0{i}:00.000Z"
        command = f"export ANTHROPIC_API_KEY={TOKEN}; pytest -q tests/test_{i}.py"
        use = {
            "type": "tool_use",
            "id": f"toolu_01AbCdEfGhIjKlMnOpQrSt{i}",
            "name": "Bash",
            "input": {"command": command},
        }
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "1 passed"}
        out.append(
            {"type": "assistant", "timestamp": ts, "cwd": cwd, "message": {"role": "assistant", "content": [use]}}
        )
        out.append({"type": "user", "timestamp": ts, "cwd": cwd, "message": {"role": "user", "content": [result]}})
    return out


def _import(log: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli(
        "corpus", "import", str(log), "--format", "claude-transcript", "--bucket", "small", "--out", str(out), *extra
    )


def test_secrets_are_redacted_in_the_case_and_calls_stay_paired(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    records = _transcript()
    connect = {"type": "tool_use", "id": "toolu_9", "name": "mcp__db__connect", "input": {"password": "Tr0ub4dor&3h"}}
    records.append({"type": "assistant", "timestamp": "2026-01-01T00:04:00.000Z", "message": {"content": [connect]}})
    log.write_text("".join(json.dumps(x) + "\n" for x in records))
    p = _import(log, tmp_path / "case")
    assert p.returncode == 0, p.stderr
    assert "4 tool calls" in p.stdout and "secrets redacted in 4 strings" in p.stdout
    written = (tmp_path / "case" / "events.jsonl").read_text()
    assert TOKEN[13:30] not in written and "toolu_01AbCdEfGhIjKlMnOpQrSt2" in written  # ids are left alone
    assert "Tr0ub4dor" not in written  # a secret only its key names
    r = json.loads(cli("replay", str(tmp_path / "case"), "--json").stdout)
    assert r["tool_calls"] == 4


def test_a_byte_order_mark_does_not_cost_the_first_line(tmp_path: Path) -> None:
    log = tmp_path / "bom.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(x) + "\n" for x in _transcript("/w/bom")).encode())
    p = _import(log, tmp_path / "case")
    assert p.returncode == 0 and "0 skipped" in p.stdout, p.stdout + p.stderr
    assert "workdir: /w/bom" in (tmp_path / "case" / "case.yaml").read_text()


def test_damaged_and_cut_gzip_logs(tmp_path: Path) -> None:
    data = gzip.compress("".join(json.dumps(x) + "\n" for x in _transcript() * 50).encode())
    damaged = tmp_path / "damaged.jsonl.gz"
    damaged.write_bytes(data[:40] + bytes(b ^ 0x5A for b in data[40:200]) + data[200:])
    p = _import(damaged, tmp_path / "d")
    assert p.returncode == 2 and p.stderr.startswith(f"error: {damaged}: cannot read:"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])  # the end of the stream is missing: what came before is kept
    p = _import(cut, tmp_path / "c")
    assert p.returncode == 0, p.stderr
    calls = int(p.stdout.split(" tool calls")[0].rsplit(" ", 1)[1])
    assert 0 < calls < 150 and "1 skipped" in p.stdout


def test_a_line_nested_deeper_than_orjson_writes_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = [json.dumps(x) for x in _transcript()]
    deep = '{"type": "assistant", "timestamp": "2026-01-01T00:05:00Z", "x": ' + "[" * 1000 + "]" * 1000 + "}"
    log = tmp_path / "deep.jsonl"
    log.write_text("\n".join([lines[0], deep, *lines[1:]]) + "\n")
    p = _import(log, tmp_path / "case")
    assert p.returncode == 0, p.stderr
    assert "3 tool calls" in p.stdout and "1 skipped" in p.stdout


def test_a_wrong_id_is_named(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in _transcript()))
    p = _import(log, tmp_path / "sp-1", "--id", "BAD_ID")
    assert p.returncode == 2 and "--id must match [a-z0-9][a-z0-9-]*, got 'BAD_ID'" in p.stderr, p.stderr


def test_the_capture_keeps_a_line_it_cannot_write_as_json_as_its_text(tmp_path: Path) -> None:
    deep = "[" * 300 + "]" * 300
    script = f"print('{{\"a\": 1}}'); print('{deep}'); print('{{\"after\": true}}')"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    events = tmp_path / "events.jsonl"
    capture(child, events, RunClock(started_at=0.0), WriteTrouble())
    child.wait(timeout=30)
    data = [json.loads(line)["data"] for line in events.read_text().splitlines()]
    assert data == [{"a": 1}, deep, {"after": True}]
