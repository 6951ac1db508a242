"""Secrets stay out of what our commands print, not only out of pages: a failed clone's reason, `logs`,
a config error, replay evidence, and the tail of a token a finding cut short."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import CORPUS, cli, copy_case, fake_run

TOKEN = "ghp_Q7rT2mX9vLk4Ws8Yb3Nc6Hd1Jf5Pg0Ze7uAi"  # a GitHub token's shape, made up
KEY = "sk-ant-api03-Zq8Rw2Lm5Tx9Vb4Nc7Hd1Kf6Pg3Sj0Ye"


def _leaks(text: str, secret: str) -> list[str]:
    """Any 8 characters of the secret's value (after its prefix) found in `text`."""
    value = secret.split("_", 1)[-1] if secret.startswith("ghp_") else secret.removeprefix("sk-ant-api03-")
    return [value[i : i + 8] for i in range(len(value) - 7) if value[i : i + 8] in text]


def test_a_clone_url_with_a_password_is_redacted_in_the_reason(tmp_path: Path, home: Path) -> None:
    t = tmp_path / "tok.md"
    url = f"https://user:{TOKEN}@127.0.0.1:1/x.git"
    case = CORPUS / "healthy-001-steady-feature"
    t.write_text(f"---\nid: tok\nrepo: {url}\nbucket: small\nagent: demo\ndemo_case: {case}\n---\nbody\n")
    p = cli("launch", str(t))
    assert p.returncode == 1 and "git clone https://user:[REDACTED]@127.0.0.1:1/x.git failed" in p.stderr
    shown = [p.stdout + p.stderr]
    for args in (("status", "--json"), ("status", "--wide"), ("history", "--json")):
        q = cli(*args)
        assert q.returncode == 0, q.stderr
        shown.append(q.stdout + q.stderr)
    assert "[REDACTED]" in shown[1]
    for text in shown:
        assert not _leaks(text, TOKEN), text


def test_logs_redact_what_the_agent_echoed(home: Path) -> None:
    events = [
        {"tool": "Bash", "command": f"export ANTHROPIC_API_KEY={KEY}", "output": ""},
        {"tool": "Bash", "command": "curl -s https://api.example.com/x", "output": f"Authorization: Bearer {TOKEN}"},
        {"tool": "Bash", "command": "pytest -q", "output": "3 passed"},
        # the key straddles where the readable line cuts a command (157 characters)
        {"tool": "Bash", "command": "echo " + "x" * 128 + f" {TOKEN} | wc", "output": ""},
    ]
    run = fake_run("echo-20260101-000000", fmt="generic", events=events)
    text = cli("logs", run.name)
    rows = cli("logs", run.name, "--json")
    assert text.returncode == 0 and rows.returncode == 0, text.stderr + rows.stderr
    assert len(text.stdout.splitlines()) == 4 and "pytest -q" in text.stdout
    parsed = [json.loads(line) for line in rows.stdout.splitlines()]
    assert parsed[0]["command"].startswith("export ANTHROPIC_API_KEY=") and "REDACTED" in parsed[0]["command"]
    for out in (text.stdout, rows.stdout):
        assert not _leaks(out, KEY) and not _leaks(out, TOKEN), out


def test_a_mistyped_argv_names_the_item_not_the_key(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"agents:\n  mine:\n    command: [my-agent, --api-key, {KEY}, --max-turns, 30, --]\n    format: generic\n"
    )
    p = cli("status")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert (
        "agents.mine.command must be a non-empty list of strings (an argv), got a list whose item 4 is 30" in p.stderr
    )
    assert not _leaks(p.stderr, KEY)


def test_replay_evidence_is_redacted_and_a_cut_token_tail_dropped(tmp_path: Path) -> None:
    case = copy_case("spiral-same-error-varied-commands-generic", tmp_path)
    events = case / "events.jsonl"
    text = events.read_text()
    assert '"output":"curl: (22)' in text
    events.write_text(
        text.replace('"output":"curl: (22)', f'"output":"Authorization: Bearer {TOKEN} rejected\\ncurl: (22)')
    )
    p = cli("replay", str(case), "--json")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["spiral"] is True and any("same error" in e for e in result["evidence"]), result
    table = cli("replay", str(case))
    for out in (p.stdout, table.stdout):
        assert not _leaks(out, TOKEN), out


def test_a_finding_quoted_and_cut_loses_the_partial_token() -> None:
    from orchestrator.notify.pages import redact_cut

    tail = TOKEN[-19:]
    line = f"12 of the last 20 calls failed with the same error ('...{tail} rejected curl: (22) 401')"
    assert redact_cut(line) == "12 of the last 20 calls failed with the same error ('... rejected curl: (22) 401')"
    assert redact_cut("edited (...abc/def/x.py) and [...tail_of/it]") == "edited (.../def/x.py) and [.../it]"
