"""replay / eval / corpus import through the real CLI, in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
REPLAY_KEYS = {"id", "spiral", "notified_at_min", "signals", "region", "suspicion", "evidence", "pass"}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def copy_case(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(CORPUS / name, dst)
    return dst


def test_replay_json_contract() -> None:
    p = run("replay", str(CORPUS / "spiral-001-fixture-shim"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert REPLAY_KEYS <= set(out)
    assert out["spiral"] is True and out["pass"] is True and out["region"] == "soft"
    assert 70 <= out["notified_at_min"] <= 85
    assert any("tmp_debug_mc" in e for e in out["evidence"])
    assert out["skipped_lines"] == 0


def test_replay_table_and_failing_case_exit_1(tmp_path: Path) -> None:
    case = copy_case("healthy-001-steady-feature", tmp_path)
    p = run("replay", str(case))
    assert p.returncode == 0 and "pass" in p.stdout
    text = (case / "case.yaml").read_text().replace("spiral: false", "spiral: true")
    (case / "case.yaml").write_text(text)
    p = run("replay", str(case), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["pass"] is False


def test_eval_json_contract() -> None:
    p = run("eval", str(CORPUS), "--json")
    assert p.returncode == 0, p.stdout[-2000:]
    out = json.loads(p.stdout)
    assert {"cases", "tp", "fp", "tn", "fn", "precision", "recall", "fpr", "passed", "failed"} <= set(out)
    assert out["failed"] == 0 and out["fp"] == 0 and out["fn"] == 0
    assert out["passed"] == len(out["cases"]) >= 12
    assert all(REPLAY_KEYS <= set(c) for c in out["cases"])


def test_torn_and_garbage_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    case = copy_case("spiral-003-bg-polling", tmp_path)
    with (case / "events.jsonl").open("ab") as fh:
        fh.write(b"not json at all\n")
        fh.write(b"\xff\xfe\x00 binary junk\n")
        fh.write(b"[1, 2, 3]\n")
        fh.write(b'{"ts": "2026-05-20T09:39:00Z", "data": {"type": "mystery"}}\n')
        fh.write(b'{"ts": "nonsense", "data": {}}\n')
        fh.write(b'{"ts": "2026-05-20T09:39:30Z", "data": {"type": "assistant", "mess')  # torn last line
    p = run("replay", str(case), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["skipped_lines"] == 6
    assert out["spiral"] is True
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "mutation, message",
    [
        (("bucket: small", "bucket: huge"), "bucket must be one of"),
        (("format: claude-stream-json", "format: jsonish"), "format must be one of"),
        (("id: spiral-003-bg-polling", "id: Spiral_003"), "id must match"),
        (("expect:", "surprise: 1:30\nexpect:"), "base-60"),
        (("expect:", "colour: blue\nexpect:"), "unknown key 'colour'"),
        (("  spiral: true", "  spiral: yes"), "reads as a boolean"),
        (("expect:", "bucket: big\nexpect:"), "duplicate key 'bucket'"),
        (("overrides: {}", "overrides: {signals: {polling: {polls: many}}}"), "overrides: signals.polling.polls"),
        (("overrides: {}", "overrides: {signals: {polling: {pols: 3}}}"), "unknown key"),
        (("expect:", "expect: [\n"), "not valid YAML"),
    ],
)
def test_malformed_case_yaml_is_one_line_exit_2(tmp_path: Path, mutation: tuple[str, str], message: str) -> None:
    case = copy_case("spiral-003-bg-polling", tmp_path)
    text = (case / "case.yaml").read_text()
    old, new = mutation
    assert old in text
    (case / "case.yaml").write_text(text.replace(old, new, 1))
    p = run("replay", str(case))
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert message in lines[0]
    assert f"{case / 'case.yaml'}:" in lines[0]
    line_no = int(lines[0].split("case.yaml:", 1)[1].split(":", 1)[0])
    assert line_no > 0


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("threshold: 2 ", "threshold: two ", "threshold must be a non-negative number"),
        ("window: 30", "window: 30\n    windo: 3", "unknown key 'signals.sustained_bash.windo'"),
        ("expected_min: 20,", "expected_min: 1:20,", "base-60"),
        ("weight: 2\n    window: 20", "weight: off\n    window: 20", "reads as a boolean"),
    ],
)
def test_malformed_buckets_yaml_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = (ROOT / "buckets.yaml").read_text()
    assert old in text, old
    bad = tmp_path / "buckets.yaml"
    bad.write_text(text.replace(old, new, 1))
    p = run("replay", str(CORPUS / "spiral-003-bg-polling"), env={"ORCHESTRATOR_BUCKETS": str(bad)})
    assert p.returncode == 2
    line = p.stderr.strip()
    assert "\n" not in line and message in line and f"{bad}:" in line, line


def test_missing_paths_are_clear_errors(tmp_path: Path) -> None:
    p = run("replay", str(tmp_path / "nope"))
    assert p.returncode == 2 and "not a case folder" in p.stderr
    p = run("eval", str(tmp_path / "nope"))
    assert p.returncode == 2 and "no such folder" in p.stderr
    p = run("eval", str(tmp_path))
    assert p.returncode == 2 and "no case folders" in p.stderr


def test_every_command_has_help() -> None:
    for args in (
        ["--help"],
        ["replay", "--help"],
        ["eval", "--help"],
        ["corpus", "--help"],
        ["corpus", "import", "--help"],
    ):
        p = run(*args)
        assert p.returncode == 0, args
        assert "Usage" in p.stdout


def test_import_turns_a_generic_log_into_a_replayable_case(tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    lines = [{"tool": "Write", "path": "tmp_a.py"}, {"tool": "Write", "path": "tmp_b.py"}]
    lines += [{"tool": "Bash", "command": "python tmp_a.py"}] * 40
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    out = tmp_path / "case-one"
    p = run(
        "corpus",
        "import",
        str(log),
        "--format",
        "generic",
        "--bucket",
        "small",
        "--out",
        str(out),
        "--spacing",
        "60",
        "--spiral",
    )
    assert p.returncode == 0, p.stderr
    assert "42 tool calls" in p.stdout and "1 skipped" in p.stdout
    r = run("replay", str(out), "--json")
    res = json.loads(r.stdout)
    assert res["spiral"] is True and res["pass"] is True, res
    assert "repetition" in res["signals"] and "sustained_bash" in res["signals"]
    again = run("corpus", "import", str(log), "--format", "generic", "--bucket", "small", "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = run("corpus", "import", str(log), "--format", "nope", "--bucket", "small", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "--format must be one of" in bad.stderr


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("started_at: '2026-05-20T09:00:00Z'", "started_at: 2026-02-30T09:00:00Z", "not a valid value"),
    ],
)
def test_impossible_dates_are_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    case = copy_case("spiral-003-bg-polling", tmp_path)
    text = (case / "case.yaml").read_text()
    assert old in text, text
    (case / "case.yaml").write_text(text.replace(old, new))
    p = run("replay", str(case))
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr


def test_non_finite_settings_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "buckets.yaml"
    bad.write_text((ROOT / "buckets.yaml").read_text().replace("threshold: 2 ", "threshold: .nan "))
    p = run("eval", str(CORPUS), env={"ORCHESTRATOR_BUCKETS": str(bad)})
    assert p.returncode == 2 and "threshold must be a non-negative number" in p.stderr
