"""Spend read from the agents' own files (orchestrator/ledger/agent_records.py).

The live tests drive the real, pinned Claude Code and Codex CLIs (agents/node_modules)
against tests/scripted_model.py: while a command runs, and after the run with the
CLI's final totals cut off the log (a run killed or stalled before them), the spend
read through the transcript / rollout must equal what the CLI itself reports at the end,
within 1 %. They skip when the CLIs are not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ledger import prices
from orchestrator.ledger.agent_records import (
    RunSpend,
    claude_project_name,
    claude_subagents,
    claude_transcript,
    codex_rollouts,
)
from spiral.spend import ClaudeSession, Spend
from tests.helpers import ROOT, git
from tests.scripted_model import CallTool, Reply, Run, ScriptedModel, Step, Usage

BIN = ROOT / "agents" / "node_modules" / ".bin"
PINNED = {"claude": "2.1.197", "codex": "0.171.0"}

# ---- finding the files --------------------------------------------------------------------------


def test_claude_project_folder_is_named_as_the_cli_names_it() -> None:
    # seen in the real CLI's init line: memory_paths.auto = <config>/projects/<this>/memory/
    assert (
        claude_project_name("/tmp/realcli-claude-healthy-goolsw98/repo") == "-tmp-realcli-claude-healthy-goolsw98-repo"
    )
    assert claude_project_name("/w/a.b_c d/é") == "-w-a-b-c-d--"
    # over 200 characters: cut, then '-' and Claude Code's 31-hash of the whole cwd in base 36
    # (expected values computed with the CLI's own function under node)
    long = "/tmp/" + "x" * 250
    assert claude_project_name(long) == "-tmp-" + "x" * 195 + "-" + _LONG_HASH
    assert claude_project_name("/t/😀") == "-t---"  # one character, two UTF-16 units, as JavaScript counts


_LONG_HASH = "3v30nt"  # Math.abs(h).toString(36) for "/tmp/" + "x" * 250 (checked against node below)


def test_long_name_hash_matches_node() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    js = (
        "let e=process.argv[1],t=0;for(let n=0;n<e.length;n++)t=(t<<5)-t+e.charCodeAt(n)|0;"
        "process.stdout.write(Math.abs(t).toString(36))"
    )
    for cwd in ("/tmp/" + "x" * 250, "/home/üser/" + "long-project-name/" * 14, "/t/😀" * 70):
        out = subprocess.run([node, "-e", js, cwd], capture_output=True, text=True, check=True).stdout
        assert claude_project_name(cwd).rsplit("-", 1)[1] == out, cwd


def test_transcript_found_by_cwd_by_memory_path_or_by_session_id(tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    sid = "104e8091-c1c2-4688-89c9-f42ea7822294"
    cwd = str(tmp_path / "my.repo")
    folder = config / "projects" / claude_project_name(cwd)
    assert claude_transcript(config, sid, ClaudeSession(cwd=cwd)) is None  # not written yet: no data, no error
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("")
    assert claude_transcript(config, sid, ClaudeSession(cwd=cwd)) == folder / f"{sid}.jsonl"
    assert claude_transcript(config, sid, ClaudeSession(project_dir=str(folder))) == folder / f"{sid}.jsonl"
    assert claude_transcript(config, sid, ClaudeSession(cwd="/elsewhere")) == folder / f"{sid}.jsonl"
    # a memory path outside CLAUDE_CONFIG_DIR/projects is not followed
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / f"{sid}.jsonl").write_text("")
    assert claude_transcript(config, sid, ClaudeSession(project_dir=str(tmp_path / "odd"))) == folder / f"{sid}.jsonl"
    sub = folder / sid / "subagents" / "workflows" / "w1"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text("")
    assert claude_subagents(folder / f"{sid}.jsonl") == [sub / "agent-a1.jsonl"]


def test_rollout_found_in_its_days_folder_or_anywhere(tmp_path: Path) -> None:
    tid = "01a23106-7123-7ef1-9efd-da7606074297"  # UUIDv7: 2026-12-01
    assert codex_rollouts(tmp_path, tid) == []
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-12-01T09-53-55-{tid}.jsonl").write_text("")
    (day / "rollout-2026-12-01T09-53-55-01a23106-0000-7ef1-9efd-da7606074297.jsonl").write_text("")
    assert codex_rollouts(tmp_path, tid) == [day / f"rollout-2026-12-01T09-53-55-{tid}.jsonl"]
    odd = tmp_path / "sessions" / "2030" / "01" / "01"
    odd.mkdir(parents=True)
    (odd / "rollout-x-not-a-uuid.jsonl").write_text("")
    assert codex_rollouts(tmp_path, "not-a-uuid") == [odd / "rollout-x-not-a-uuid.jsonl"]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj) + "\n"


def test_reading_is_incremental_and_tolerant(tmp_path: Path) -> None:
    """A torn last line waits for its newline, garbage is skipped, a shrunk file is read again."""
    config, sid, cwd = tmp_path / "cfg", "s-1", "/r"
    folder = config / "projects" / claude_project_name(cwd)
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    run = RunSpend.of("claude-stream-json")
    run.feed({"type": "system", "subtype": "init", "session_id": sid, "cwd": cwd, "model": "claude-opus-4-8[1m]"})
    homes = {"CLAUDE_CONFIG_DIR": str(config)}
    assert not run.read_agent_files(homes)  # no transcript yet

    def msg(mid: str, out: int) -> dict[str, Any]:
        usage = {"input_tokens": 100, "output_tokens": out, "cache_read_input_tokens": 0}
        return {
            "type": "assistant",
            "sessionId": sid,
            "message": {"id": mid, "model": "claude-opus-4-8", "usage": usage},
        }

    whole = _line(msg("m1", 50))
    path.write_text(whole + "not json {\n" + _line(msg("m2", 70))[:30])
    assert run.read_agent_files(homes)
    assert (run.spend.input_tokens, run.spend.output_tokens) == (100, 50)
    with path.open("a") as fh:
        fh.write(_line(msg("m2", 70))[30:])
    run.read_agent_files(homes)
    assert (run.spend.input_tokens, run.spend.output_tokens) == (200, 120)
    path.write_text(whole)  # rewritten shorter: read again from the start, nothing counted twice
    run.read_agent_files(homes)
    assert (run.spend.input_tokens, run.spend.output_tokens) == (200, 120)
    path.unlink()
    run.read_agent_files(homes)  # gone: the counts stay
    assert run.spend.output_tokens == 120


# ---- the real CLIs: live spend through their own files vs their own final totals ------------------


def _cli(name: str) -> Path:
    binary = BIN / name
    if shutil.which("node") is None or not binary.exists():
        pytest.skip(f"real {name} CLI not installed (./dev.sh test runs npm ci in agents/)")
    return binary


def _repo(tmp_path: Path) -> Path:
    # a long cwd with characters Claude Code's folder naming replaces, and past its 200-character cut
    repo = tmp_path / ("proj.with_odd chars-" + "y" * 200)
    repo.mkdir()
    (repo / "README").write_text("hi\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "init", cwd=repo)
    return repo


def _base_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        "PATH": f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "LANG": "C.UTF-8",
    }


class Live:
    """The CLI's stdout lines as they come, fed to a RunSpend like the supervisor's log would be."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, run: RunSpend) -> None:
        self.run = run
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            with self._lock:
                self.lines.append(obj)
                self.run.feed(obj)

    def wait_for(self, predicate: Any, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if predicate(self.lines):
                    return
            time.sleep(0.05)
        raise AssertionError(f"timed out; lines so far: {[d.get('type') for d in self.lines]}")

    def finish(self, timeout: float = 90.0) -> list[dict[str, Any]]:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=10)
        return self.lines


def _within_1pct(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= 0.01 * abs(theirs)


def _fed(fmt: str, lines: list[dict[str, Any]], homes: dict[str, str], model: str | None = None) -> Spend:
    run = RunSpend.of(fmt, model)
    for obj in lines:
        run.feed(obj)
    run.read_agent_files(homes)
    return run.spend


# the usage the server reports: message_start says 3 and 5 output tokens, the final count 50 / 70 / 30
CLAUDE_STEPS = [
    Run("true", usage=Usage(1000, 50, 200, 300, 3)),
    Run("sleep 3", usage=Usage(2000, 70, 0, 0, 5)),
    Reply("done", usage=Usage(1500, 30, 1800, 0, 2)),
]


def _claude_env(tmp_path: Path, config: Path, url: str) -> dict[str, str]:
    return _base_env(tmp_path) | {
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "IS_SANDBOX": "1",
    }


def _claude_live(claude: Path, tmp_path: Path, repo: Path, model: ScriptedModel) -> tuple[Live, RunSpend]:
    argv = [str(claude), "-p", "--output-format", "stream-json", "--verbose"]
    argv += ["--permission-mode", "bypassPermissions", "--", "go"]
    run = RunSpend.of("claude-stream-json")
    return Live(argv, _claude_env(tmp_path, tmp_path / "claude-config", model.url), repo, run), run


def test_claude_live_spend_through_its_transcript_equals_its_own_totals(tmp_path: Path) -> None:
    claude = _cli("claude")
    repo = _repo(tmp_path)
    homes = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "CODEX_HOME": str(tmp_path / "codex")}
    with ScriptedModel(CLAUDE_STEPS) as model:
        live, run = _claude_live(claude, tmp_path, repo, model)
        # mid-run: the second command (sleep 3) is running, two messages are complete
        live.wait_for(lambda ls: sum(d.get("type") == "assistant" for d in ls) >= 2)
        time.sleep(1.0)
        stream_only = run.spend.output_tokens
        run.read_agent_files(homes)
        mid = run.spend
        lines = live.finish()
    assert stream_only < 120  # the stream's own lines undercount output (message_start figures)
    assert (mid.input_tokens, mid.output_tokens, mid.cache_read_tokens, mid.cache_write_tokens) == (3000, 120, 200, 300)
    # the transcript was found where the CLI's naming rule says, not by the fallback search
    found = Path(run.found[next(iter(run.counter.sessions))][0])
    assert found.parent.name == claude_project_name(str(repo))
    results = [d for d in lines if d.get("type") == "result"]
    assert results and results[-1]["is_error"] is False
    u, cli_usd = results[-1]["usage"], results[-1]["total_cost_usd"]
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    cli_tokens = sum(u[k] for k in keys)
    # with the result line: the CLI's own totals, exactly
    full = _fed("claude-stream-json", lines, homes)
    assert full.tokens == cli_tokens and prices.cost(full, {}) == (pytest.approx(cli_usd), [])
    # killed before its result line: the transcript's final usage, priced by genai-prices
    cut = _fed("claude-stream-json", [d for d in lines if d.get("type") != "result"], homes)
    cost, unpriced = prices.cost(cut, {})
    assert _within_1pct(cut.tokens, cli_tokens) and cost is not None and _within_1pct(cost, cli_usd), (
        cut.tokens,
        cli_tokens,
        cost,
        cli_usd,
    )
    # and without the transcript, only the stream: what the old counter saw
    blind = _fed("claude-stream-json", [d for d in lines if d.get("type") != "result"], {})
    assert blind.output_tokens == 3 + 5 + 2 and blind.tokens < cli_tokens


def test_claude_subagents_count_through_their_own_transcripts(tmp_path: Path) -> None:
    """A Task call runs a subagent (here it calls Task again, a few levels deep: the script is
    served by position). The result line's `usage` is the main thread's alone; `modelUsage` and
    `total_cost_usd` count the subagents too, and so do we, live, through their transcripts."""
    claude = _cli("claude")
    repo = _repo(tmp_path)
    homes = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    task = {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"}
    steps: list[Step] = [
        Run("true", usage=Usage(1000, 50, 0, 0, 3)),
        CallTool("Task", task, usage=Usage(1200, 60, 0, 0, 2)),
        Reply("done", usage=Usage(1500, 30, 0, 0, 2)),
    ]
    with ScriptedModel(steps) as model:
        live, _ = _claude_live(claude, tmp_path, repo, model)
        lines = live.finish()
    result = [d for d in lines if d.get("type") == "result"][-1]
    per_model = result["modelUsage"].values()
    keys = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
    cli_tokens = sum(u[k] for u in per_model for k in keys)
    assert cli_tokens > sum(result["usage"][k] for k in ("input_tokens", "output_tokens"))
    # with the result line: the CLI's own totals, subagents included, exactly
    assert _fed("claude-stream-json", lines, homes).tokens == cli_tokens
    # without it: the transcripts, every subagent's counted. Each entry is written once, and one
    # written before its message_delta keeps the message_start output figure (docs/real-agents-
    # findings.md, 3e): then a Task call counts 2 output tokens, not 60, and nothing else differs.
    cut = _fed("claude-stream-json", [d for d in lines if d.get("type") != "result"], homes)
    short = cli_tokens - cut.tokens
    assert short % (60 - 2) == 0 and 0 <= short and _within_1pct(cut.tokens, cli_tokens), (cut.tokens, cli_tokens)
    cost = prices.cost(cut, {})[0]
    assert cost is not None and _within_1pct(cost, result["total_cost_usd"])
    if short == 0:
        assert cost == pytest.approx(result["total_cost_usd"])


CODEX_STEPS = [
    Run("true", usage=Usage(1000, 50, 200)),
    Run("sleep 3", usage=Usage(2000, 70)),
    Reply("done", usage=Usage(2500, 30, 1800)),
]


def _codex_config(url: str) -> str:
    return "\n".join(
        [
            'model = "gpt-5.5"',
            'model_provider = "scripted"',
            "[analytics]",
            "enabled = false",
            "[features]",
            "plugins = false",
            "[model_providers.scripted]",
            'name = "Scripted"',
            f'base_url = "{url}/v1"',
            'wire_api = "responses"',
            'env_key = "SCRIPTED_API_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
        ]
    )


def test_codex_live_spend_through_its_rollout_equals_its_own_totals(tmp_path: Path) -> None:
    codex = _cli("codex")
    repo = _repo(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    homes = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(home)}
    with ScriptedModel(CODEX_STEPS) as model:
        (home / "config.toml").write_text(_codex_config(model.url))
        env = _base_env(tmp_path) | {"CODEX_HOME": str(home), "SCRIPTED_API_KEY": "test-key"}
        argv = [str(codex), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
        run = RunSpend.of("codex-json", None)  # no profile model: the rollout must name it
        live = Live([*argv, "--", "go"], env, repo, run)
        live.wait_for(lambda ls: sum(d.get("type") == "item.started" for d in ls) >= 2)
        time.sleep(1.0)
        stream_only = run.spend.tokens
        run.read_agent_files(homes)
        mid = run.spend
        lines = live.finish()
    assert stream_only == 0  # exec --json reports usage only at turn.completed
    assert (mid.input_tokens + mid.cache_read_tokens, mid.output_tokens, mid.cache_read_tokens) == (3000, 120, 200)
    assert mid.models() == ["gpt-5.5"]  # named by the rollout (exec --json never does)
    done = [d for d in lines if d.get("type") == "turn.completed"]
    assert done
    cli_tokens = sum(d["usage"]["input_tokens"] + d["usage"]["output_tokens"] for d in done)
    cli_cached = sum(d["usage"]["cached_input_tokens"] for d in done)
    full = _fed("codex-json", lines, homes)
    assert full.tokens == cli_tokens and full.cache_read_tokens == cli_cached
    cut = _fed("codex-json", [d for d in lines if d.get("type") != "turn.completed"], homes)
    assert _within_1pct(cut.tokens, cli_tokens) and cut.cache_read_tokens == cli_cached
    # Codex reports no dollars: ours, from genai-prices' gpt-5.5 rates, are the same either way
    full_cost, cut_cost = prices.cost(full, {})[0], prices.cost(cut, {})[0]
    assert full_cost is not None and cut_cost is not None and _within_1pct(cut_cost, full_cost)
    assert full_cost == pytest.approx(((5500 - 2000) * 5 + 2000 * 0.5 + 150 * 30) / 1e6)
