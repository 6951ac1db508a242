"""Malformed case.yaml and buckets.yaml: refused with exit 2 and one line naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import CORPUS, ROOT, cli, copy_case


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
        # issue 38: impossible times and zero intervals are refused, naming the value
        (
            ("started_at: '2026-05-20T09:00:00Z'", "started_at: '0001-01-01T00:00:00Z'"),
            "started_at must be a time between",
        ),
        (("ended_at: '2026-05-20T09:40:00Z'", "ended_at: '9999-12-31T23:59:59Z'"), "ended_at must be a time between"),
        (("overrides: {}", "overrides: {tick_seconds: 0}"), "tick_seconds must be above 0"),
        (("overrides: {}", "overrides: {snapshot_every_seconds: 0}"), "snapshot_every_seconds must be above 0"),
    ],
)
def test_malformed_case_yaml_is_one_line_exit_2(tmp_path: Path, mutation: tuple[str, str], message: str) -> None:
    case = copy_case("spiral-003-bg-polling", tmp_path)
    text = (case / "case.yaml").read_text()
    old, new = mutation
    assert old in text
    (case / "case.yaml").write_text(text.replace(old, new, 1))
    p = cli("replay", str(case))
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
        ("snapshot_every_seconds: 30", "snapshot_every_seconds: 0", "snapshot_every_seconds must be above 0"),
        ("tick_seconds: 30", "tick_seconds: 0", "tick_seconds must be above 0"),
    ],
)
def test_malformed_buckets_yaml_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = (ROOT / "buckets.yaml").read_text()
    assert old in text, old
    bad = tmp_path / "buckets.yaml"
    bad.write_text(text.replace(old, new, 1))
    p = cli("replay", str(CORPUS / "spiral-003-bg-polling"), env={"ORCHESTRATOR_BUCKETS": str(bad)})
    assert p.returncode == 2
    line = p.stderr.strip()
    assert "\n" not in line and message in line and f"{bad}:" in line, line


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
    p = cli("replay", str(case))
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr


def test_non_finite_settings_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "buckets.yaml"
    bad.write_text((ROOT / "buckets.yaml").read_text().replace("threshold: 2 ", "threshold: .nan "))
    p = cli("eval", str(CORPUS), env={"ORCHESTRATOR_BUCKETS": str(bad)})
    assert p.returncode == 2 and "threshold must be a non-negative number" in p.stderr


def test_eval_reports_a_folder_it_cannot_list_as_broken(tmp_path: Path) -> None:
    import json
    import os
    import shutil
    import subprocess
    import sys

    top = tmp_path / "cases"
    copy_case("spiral-003-bg-polling", top)
    locked = top / "b-locked"
    locked.mkdir()
    copy_case("healthy-001-steady-feature", locked)
    locked.chmod(0)
    # root reads any folder: the child gives up the capabilities that let it (as an ordinary user is)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to take root's read-anything capability away")
    try:
        p = subprocess.run(
            [*prefix, sys.executable, "-m", "orchestrator", "eval", str(top), "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        locked.chmod(0o755)
    assert p.returncode == 1, p.stderr  # a case that could not be read is a failed check, not a pass
    out = json.loads(p.stdout)
    assert out["passed"] == 1 and out["failed"] == 1
    assert out["broken"] == [{"case": str(locked), "error": "cannot list the folder: Permission denied"}]


def test_launch_refuses_a_settings_file_whose_run_record_could_not_load(tmp_path: Path) -> None:
    """Issue 38: `snapshot_every_seconds: 0` used to pass the settings check and leave a run whose
    state.json the record refused (status `error` for ever, kill exit 2). Refused at load now."""
    import subprocess

    bad = tmp_path / "buckets.yaml"
    bad.write_text(
        (ROOT / "buckets.yaml").read_text().replace("snapshot_every_seconds: 30", "snapshot_every_seconds: 0", 1)
    )
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    ticket = tmp_path / "t.md"
    ticket.write_text(f"---\nrepo: {repo}\nagent: demo\n---\nhi\n")
    home = tmp_path / "home"
    p = cli("launch", str(ticket), env={"ORCHESTRATOR_BUCKETS": str(bad), "ORCHESTRATOR_HOME": str(home)})
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert p.stderr.count("\n") == 1 and "snapshot_every_seconds must be above 0" in p.stderr, p.stderr
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())
