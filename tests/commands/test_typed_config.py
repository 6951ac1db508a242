"""config.yaml, ticket front matter and case.yaml through the typed reader: one line, the right line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator import config
from orchestrator.infra.errors import UserError
from orchestrator.record.case import Expect, load_case
from orchestrator.runs import tickets
from tests.helpers import CORPUS


def refused(path: Path, text: str) -> str:
    """The one-line error for config.yaml `text`, without the folder."""
    path.write_text(text)
    with pytest.raises(UserError) as exc:
        config.load(path)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:")
    return message.removeprefix(f"{path.parent}/")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "heartbeat_seconds: 60\ncolour: red\n",
            "config.yaml:2: unknown key 'colour' (known: agents, autostart_watcher, daily_max_usd, default_agent, "
            "deliver, executor, gc_keep_days, gc_keep_days_flagged, guidance_answer_minutes, guidance_deliver_minutes, "
            "heartbeat_seconds, max_parallel, max_parallel_per_repo, notify, notify_on, otlp, pr_command, prices, repos, "
            "serve, stagger_seconds, tickets_dir, watcher_idle_seconds, watcher_tick_seconds)",
        ),
        (
            "agents:\n  x:\n    command: [a]\n    colour: red\n",
            "config.yaml:4: unknown key 'agents.x.colour' (known: command, copy, deliver, env, escalation, format, guidance, "
            "max_tokens, max_usd, model, pr_command, prompt, setup, setup_timeout_seconds, version_command)",
        ),
        (
            "repos:\n  /srv/app:\n    setup: ''\n",
            "config.yaml:3: setup must be a non-empty command with no NUL bytes (leave the key out for none)",
        ),
        (
            "repos:\n  /srv/app:\n    copy:\n    - {from: a.env, to: ../x}\n",
            "config.yaml:4: copy[0]: the destination '../x' must be a relative path inside the clone",
        ),
        (
            "repos:\n  /srv/app:\n    copy:\n    - {from: a.env, to: .git/hooks/pre-commit}\n",
            "config.yaml:4: copy[0]: the destination '.git/hooks/pre-commit' is inside .git",
        ),
        (
            "agents:\n  x:\n    command: [a]\n    copy: .env\n",
            "config.yaml:4: copy must be a list of paths, or of {from: PATH, to: PATH IN THE CLONE}",
        ),
        (
            "repos:\n  /srv/app:\n    deliver: pr\n",
            "config.yaml:3: repos./srv/app.deliver must be one of branch, none, got 'pr'",
        ),
        ("heartbeat_seconds: true\n", "config.yaml:1: heartbeat_seconds must be a positive number, got true"),
        ("heartbeat_seconds: '60'\n", "config.yaml:1: heartbeat_seconds must be a positive number, got '60'"),
        ("heartbeat_seconds: -5\n", "config.yaml:1: heartbeat_seconds must be a positive number, got -5"),
        ("heartbeat_seconds: 0\n", "config.yaml:1: heartbeat_seconds must be a positive number, got 0"),
        ("heartbeat_seconds: .nan\n", "config.yaml:1: heartbeat_seconds must be a positive number, got nan"),
        ("heartbeat_seconds: .inf\n", "config.yaml:1: heartbeat_seconds must be a positive number, got inf"),
        (
            "agents:\n  x:\n    command: my-agent --json\n",
            "config.yaml:3: agents.x.command must be a non-empty list of strings (an argv), got 'my-agent --json'",
        ),
        (
            "agents:\n  ok:\n    command: [a]\n  x:\n    command:\n    - a\n    - ''\n",
            "config.yaml:7: agents.x.command must be a non-empty list of strings (an argv), got a list whose item 1 is ''",
        ),
        ("agents:\n  x:\n    format: generic\n", "config.yaml:3: missing key 'agents.x.command'"),
        ("agents:\n  x:\n", "config.yaml:2: agents.x must be a mapping, got nothing"),
        ("agents:\n  7: {command: [a]}\n", "config.yaml:2: agents: the key 7 must be text (quote it)"),
        (
            "agents:\n  x: {command: [a], prompt: pipe}\n",
            "config.yaml:2: agents.x.prompt must be 'argument' or 'stdin', got 'pipe'",
        ),
        (
            "default_agent: nobody\n",
            "config.yaml:1: default_agent 'nobody' is not a known agent (known: claude, claude-allowlist, codex, demo)",
        ),
        (
            "prices:\n  m:\n    input: 1\n    output: -1\n",
            "config.yaml:4: prices.m.output must be a non-negative number, got -1",
        ),
        ("prices:\n  m: {input: 1}\n", "config.yaml:2: missing key 'prices.m.output'"),
        ("- just a list\n", "config.yaml:1: config.yaml must be a mapping, got ['just a list']"),
    ],
)
def test_bad_config_is_one_line_at_the_right_line(tmp_path: Path, text: str, message: str) -> None:
    assert refused(tmp_path / "config.yaml", text) == message


def test_a_whole_number_is_a_number_but_a_fraction_is_not_a_count(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("heartbeat_seconds: 90\nprices:\n  m: {input: 1, output: 2.5}\n")
    cfg = config.load(path)
    assert cfg.heartbeat_s == 90.0 and type(cfg.heartbeat_s) is float
    assert cfg.prices["m"] == (1.0, 2.5, 1.0, 1.0)  # cache prices not given: the input price, never free


def test_valid_config_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "tickets_dir: ~/tickets\n"
        "default_agent: mine\n"
        "heartbeat_seconds: 600\n"
        "agents:\n"
        "  mine:\n"
        "    command: [my-agent, --json]\n"
        "    prompt: stdin\n"
        "    format: codex-json\n"
        "    version_command: [my-agent, --version]\n"
        "    model: gpt-5\n"
        "notify:\n"
        "  urls: [ntfy://topic]\n"
        "prices:\n"
        "  gpt-5: {input: 1.25, output: 10, cache_read: 0.125}\n"
    )
    cfg = config.load(path)
    assert cfg.tickets_dir == Path("~/tickets").expanduser()
    assert cfg.default_agent == "mine" and cfg.heartbeat_s == 600.0
    assert cfg.profiles["mine"] == config.Profile(
        "mine", ("my-agent", "--json"), "codex-json", "stdin", ("my-agent", "--version"), "gpt-5"
    )
    assert cfg.profiles["claude"] == config.BUILTIN["claude"]
    assert cfg.notify == {"urls": ["ntfy://topic"]}
    assert cfg.prices["gpt-5"] == (1.25, 10.0, 0.125, 1.25)
    assert cfg.lines[("agents", "mine", "command")] == 6


def test_empty_or_absent_config_is_the_defaults(tmp_path: Path) -> None:
    assert config.load(tmp_path / "none.yaml").profiles == config.BUILTIN
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    assert config.load(tmp_path / "empty.yaml").heartbeat_s == config.DEFAULT_HEARTBEAT_S


def write_ticket(tmp_path: Path, front: str, body: str = "do it") -> Path:
    path = tmp_path / "t.md"
    path.write_text(f"---\n{front}---\n{body}\n")
    return path


@pytest.mark.parametrize(
    "front, message",
    [
        ("id: t1\nrepo: r\nbucket: small\ncolour: red\n", ":5: unknown key 'colour'"),
        ("id: t1\nrepo: r\n", ":2: missing key 'bucket'"),
        ("id: T_1\nrepo: r\nbucket: small\n", ":2: id must match [a-z0-9][a-z0-9-]{0,63}, got 'T_1'"),
        ("id: t1\nrepo: '  '\nbucket: small\n", ":3: repo must be something `git clone` accepts, got '  '"),
        ("id: t1\nrepo: r\nbucket: huge\n", ":4: bucket must be one of small, medium, big, got 'huge'"),
        ("id: t1\nrepo: r\nbucket: small\noutputs: out.txt\n", ":5: outputs must be a list of paths, got 'out.txt'"),
        ("id: t1\nrepo: r\nbucket: small\nspeed: true\n", ":5: speed must be a number in (0, 1000], got true"),
        ("id: t1\nrepo: r\nbucket: small\nspeed: 5000\n", ":5: speed must be a number in (0, 1000], got 5000"),
        ("id: t1\nrepo: r\nbucket: small\nagent: nobody\n", ":5: unknown agent 'nobody'"),
        ("- a list\n", ":2: front matter must be a mapping, got ['a list']"),
        # YAML 1.1 reads 2e6 as text and 2000000.0 as a float: the error says how to write the count
        (
            "id: t1\nrepo: r\nbucket: small\nmax_tokens: 2e6\n",
            ":5: max_tokens must be a positive whole number of tokens, got '2e6' (write it as 2000000)",
        ),
        (
            "id: t1\nrepo: r\nbucket: small\nmax_tokens: 2000000.0\n",
            ":5: max_tokens must be a positive whole number of tokens, got 2000000.0 (write it as 2000000)",
        ),
        (
            "id: t1\nrepo: r\nbucket: small\nmax_tokens: 2.5\n",
            ":5: max_tokens must be a positive whole number of tokens, got 2.5",
        ),
    ],
)
def test_bad_front_matter_counts_lines_from_the_file_start(tmp_path: Path, front: str, message: str) -> None:
    path = write_ticket(tmp_path, front)
    with pytest.raises(UserError) as exc:
        tickets.load(path, config.UserConfig(path=tmp_path / "config.yaml"))
    assert str(exc.value).startswith(f"{path}{message}"), str(exc.value)


def test_valid_ticket_round_trip(tmp_path: Path) -> None:
    path = write_ticket(
        tmp_path,
        "id: t1\nrepo: ' https://example.com/r.git '\nbucket: medium\nbase: dev\noutputs: [a.txt]\n"
        "agent: codex\noverrides: {signals: {}}\n",
        "the task",
    )
    t = tickets.load(path, config.UserConfig(path=tmp_path / "config.yaml"))
    assert (t.id, t.repo, t.bucket, t.base, t.agent, t.body) == (
        "t1",
        "https://example.com/r.git",
        "medium",
        "dev",
        "codex",
        "the task",
    )
    assert t.outputs == ["a.txt"] and t.overrides == {"signals": {}} and t.speed == 1.0
    assert t.lines[("bucket",)] == 4


def copy_case(tmp_path: Path, old: str = "", new: str = "") -> Path:
    case = tmp_path / "case"
    shutil.copytree(CORPUS / "spiral-003-bg-polling", case)
    text = (case / "case.yaml").read_text()
    assert old in text
    (case / "case.yaml").write_text(text.replace(old, new, 1))
    return case


def case_line(case: Path, needle: str) -> int:
    return next(i for i, ln in enumerate((case / "case.yaml").read_text().splitlines(), 1) if needle in ln)


@pytest.mark.parametrize(
    "old, new, needle, message",
    [
        ("  spiral: true", "  spiral: 1", "spiral:", "expect.spiral must be true or false, got 1"),
        ("expect:\n", "expect:\n  notify_after: 3\n", "notify_after:", "unknown key 'expect.notify_after'"),
        ("notify_after_min: 30", "notify_after_min: -30", "notify_after_min", "expect.notify_after_min must be a"),
        ("notify_after_min: 30", "notify_after_min: .inf", "notify_after_min", "must be a number of minutes"),
        ("notify_after_min: 30", "notify_after_min: true", "notify_after_min", "must be a number of minutes, got true"),
        ("workdir: /", "workdir: ", "workdir:", "workdir must be an absolute path, got 'home/"),
        ("ended_at: '2026", "ended_at: '2025", "ended_at:", "ended_at is before started_at"),
        ("started_at: '2026", "started_at: 'soon 2026", "started_at:", "started_at must be an ISO-8601 time"),
    ],
)
def test_bad_case_yaml_names_the_key_and_its_line(
    tmp_path: Path, old: str, new: str, needle: str, message: str
) -> None:
    case = copy_case(tmp_path, old, new)
    with pytest.raises(UserError) as exc:
        load_case(case)
    text = str(exc.value)
    assert text.startswith(f"{case / 'case.yaml'}:{case_line(case, needle)}: "), text
    assert message in text


def test_case_signal_names_are_checked_item_by_item(tmp_path: Path) -> None:
    case = copy_case(tmp_path, "  signals:\n  - ", "  signals:\n  - pollen\n  - ")
    with pytest.raises(UserError) as exc:
        load_case(case)
    assert f"case.yaml:{case_line(case, 'pollen')}: expect.signals[0] must be one of debris," in str(exc.value)


def test_valid_case_round_trip() -> None:
    case = load_case(CORPUS / "spiral-003-bg-polling")
    assert case.id == "spiral-003-bg-polling" and case.bucket in ("small", "medium", "big")
    assert case.ended_at > case.started_at
    assert isinstance(case.expect, Expect) and case.expect.spiral is True
    assert all(isinstance(s, str) for s in case.expect.signals) and isinstance(case.outputs, tuple)
    assert case.lines[("expect", "spiral")] > 0
