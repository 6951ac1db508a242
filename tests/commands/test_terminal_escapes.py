"""Text that came from an agent (its commands, a failed check's output, a file name) is printed as
visible escapes on every terminal listing, never as escape sequences the terminal would carry out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orchestrator.infra.printable import printable
from tests.helpers import cli, launch, state, ticket, wait

TITLE = "\x1b]0;PWNED\x07\x1b[2J"  # sets the window title, then clears the screen


def test_printable_escapes_controls_and_bidi_overrides_only() -> None:
    assert printable("plain é ✓\ttab\nline") == "plain é ✓\ttab\nline"
    assert printable(f"a{TITLE}b") == "a\\x1b]0;PWNED\\x07\\x1b[2Jb"
    assert printable("\x9b31m \u202eevil\u2066") == "\\x9b31m \\u202eevil\\u2066"


def test_logs_status_and_history_show_escapes_as_text(tmp_path: Path, repo: Path, home: Path) -> None:
    command = json.dumps({"tool": "Bash", "command": f"echo {TITLE}done"})
    check = [sys.executable, "-c", f"print({TITLE!r} + 'FAILED tests'); raise SystemExit(1)"]
    run_id = launch(ticket(tmp_path, repo, f"say {command}", verify=check))
    wait(lambda: state(home, run_id)["state"] == "failed", timeout=60, what="the failed verify")
    shown = []
    for args in (("logs", run_id), ("status",), ("status", "--wide"), ("history",)):
        p = cli(*args)
        assert p.returncode == 0, p.stderr
        shown.append(p.stdout)
    for s in shown:
        assert "\x1b" not in s and "\x07" not in s, repr(s[max(0, s.find("\x1b") - 200) :][:400])
    assert "\\x1b]0;PWNED\\x07" in shown[0]  # the command, readable
    assert "\\x1b" in shown[2]  # the reason names what the check printed


def test_replay_evidence_shows_escapes_as_text(tmp_path: Path) -> None:
    case = tmp_path / "esc"
    case.mkdir()
    lines = [{"tool": "Read", "path": f"src/{TITLE}evil.py", "output": "same"} for _ in range(20)]
    (case / "events.jsonl").write_text(
        "".join(json.dumps({"ts": f"2026-01-01T00:{i:02d}:00.000Z", "data": x}) + "\n" for i, x in enumerate(lines))
    )
    (case / "case.yaml").write_text(
        "id: esc\nformat: generic\nbucket: small\nstarted_at: '2026-01-01T00:00:00Z'\n"
        "ended_at: '2026-01-01T00:30:00Z'\nexpect: {spiral: false}\n"
    )
    p = cli("replay", str(case))
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout
