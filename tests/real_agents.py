"""Helpers for tests/agents/test_real_agents.py: the real Claude Code and Codex CLIs, launched
through the orchestrator's built-in profiles, against tests/scripted_model.py on 127.0.0.1.

What the CLIs need to run unattended and offline is in docs/real-agents-findings.md;
this module turns it into an environment for `launch` (the supervisor and the agent
inherit the launcher's environment), a config.yaml, tickets, and bounded waits.
Nothing here touches the real home: HOME, TMPDIR, CLAUDE_CONFIG_DIR and CODEX_HOME
are folders under the test's tmp_path, and the environment is built from scratch
(not inherited), so no real API key or IS_SANDBOX value leaks into a run.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from tests.helpers import ROOT, Receiver, spiral_pages, wait_passes
from tests.scripted_model import Reply, Run, ScriptedModel, Step, Usage, WriteFile

BIN = ROOT / "agents" / "node_modules" / ".bin"
PINNED = {"claude": "2.1.197", "codex": "0.171.0"}  # agents/package.json
CODEX_MODEL = "gpt-5.5"  # a model Codex has metadata for: it offers exec_command and apply_patch
API_KEY = "test-key"

# Every wait is bounded; a scenario never needs more than this.
RUN_TIMEOUT_S = 90.0
# watcher ticks (config.yaml watcher_tick_seconds) to let pass before asserting "no page"
WATCHER_TICK_S = 0.5

# The small bucket in seconds: the soft band from 1.8 s, stuck only at 2 min (> every wait here).
TINY_BUCKETS = {
    "snapshot_every_seconds": 0.3,
    "buckets": {"small": {"expected_min": 0.01, "soft_start_min": 0.03, "stuck_min": 2.0}},
}


# ---- are the CLIs here? -------------------------------------------------------------------------


@functools.cache
def _cli_problem(name: str) -> str | None:
    """Why the real `name` CLI cannot be used here (None: it can)."""
    if shutil.which("node") is None:
        return "node is not on PATH: install Node.js >= 18 and npm, then ./dev.sh test installs the pinned CLIs"
    binary = BIN / name
    if not binary.exists():
        how = "run ./dev.sh test (npm ci in agents/)" if shutil.which("npm") else "npm is not on PATH"
        return f"{binary.relative_to(ROOT)} is not installed: {how}"
    try:
        p = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": "/nonexistent"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary.relative_to(ROOT)} --version did not run: {exc}"
    if p.returncode != 0:
        return f"{binary.relative_to(ROOT)} --version exited {p.returncode}: {(p.stderr or p.stdout).strip()[:200]}"
    if PINNED[name] not in p.stdout:
        return f"{binary.relative_to(ROOT)} is {p.stdout.strip()!r}, not the pinned {PINNED[name]}: rerun npm ci"
    return None


def require_cli(name: str) -> None:
    """Skip (with the reason in the summary) when the real CLI is absent or broken."""
    problem = _cli_problem(name)
    if problem is not None:
        pytest.skip(f"real {name} CLI unavailable: {problem}")


# ---- the scripted model, with paths in the run's clone -------------------------------------------


class CloneScriptedModel(ScriptedModel):
    """The scripted server, resolving relative file paths against the clone of the (one) run
    under `runs_root`: the clone's path is known only once `launch` has made it, and
    Claude's Write tool wants absolute paths."""

    def __init__(self, runs_root: Path, **kwargs: Any) -> None:
        self._runs_root = runs_root
        super().__init__(**kwargs)

    @property  # type: ignore[override]
    def workdir(self) -> str | None:
        clones = sorted(self._runs_root.glob("*/clone"), key=lambda p: p.stat().st_mtime)
        return str(clones[-1]) if clones else None

    @workdir.setter
    def workdir(self, value: str | None) -> None:
        pass  # always the run's clone


# ---- the sandbox: environment and config ----------------------------------------------------------


@dataclass
class Sandbox:
    """One test's agent world: temp HOME / TMPDIR / agent config dirs, the state folder,
    a scripted model, a receiver for pages."""

    root: Path
    orch_home: Path
    model: ScriptedModel
    receiver: Receiver
    home: Path = field(init=False)
    tmp: Path = field(init=False)
    claude_config: Path = field(init=False)
    codex_home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "agent-home"
        self.tmp = self.root / "agent-tmp"
        self.claude_config = self.root / "claude-config"
        self.codex_home = self.root / "codex-home"
        for d in (self.home, self.tmp, self.claude_config, self.codex_home, self.orch_home):
            d.mkdir(parents=True, exist_ok=True)
        self.write_codex_config()

    @property
    def runs_root(self) -> Path:
        return self.orch_home / "runs"

    def write_codex_config(self) -> None:
        """CODEX_HOME/config.toml: the scripted provider, no retries, nothing but 127.0.0.1."""
        (self.codex_home / "config.toml").write_text(
            "\n".join(
                [
                    f'model = "{CODEX_MODEL}"',
                    'model_provider = "scripted"',
                    "",
                    "[analytics]",
                    "enabled = false",
                    "",
                    "[features]",
                    "plugins = false",
                    "",
                    "[model_providers.scripted]",
                    'name = "Scripted"',
                    f'base_url = "{self.model.url}/v1"',
                    'wire_api = "responses"',
                    'env_key = "SCRIPTED_API_KEY"',
                    "request_max_retries = 0",
                    "stream_max_retries = 0",
                    "",
                ]
            )
        )

    def env(self, claude_max_retries: int = 2, **extra: str) -> dict[str, str]:
        """The whole environment for `launch` (and so for the supervisor and the agent)."""
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin')}",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "ORCHESTRATOR_HOME": str(self.orch_home),
            # Claude Code
            "CLAUDE_CONFIG_DIR": str(self.claude_config),
            "ANTHROPIC_BASE_URL": self.model.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(claude_max_retries),
            # Codex
            "CODEX_HOME": str(self.codex_home),
            "SCRIPTED_API_KEY": API_KEY,
        }
        if "PYTHONPATH" in os.environ:  # e.g. the orchestrator from another checkout
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(extra)
        return env

    def write_config(self, agents: dict[str, Any] | None = None, **keys: Any) -> None:
        """config.yaml: pages to the receiver, the auto-started watcher ticking fast."""
        cfg: dict[str, Any] = {
            # launch starts the watcher itself (the test suite's default is off: conftest.py)
            "autostart_watcher": True,
            "watcher_tick_seconds": WATCHER_TICK_S,
            "notify": {"urls": [self.receiver.url]},
        }
        if agents:
            cfg["agents"] = agents
        cfg.update(keys)
        (self.orch_home / "config.yaml").write_text(json.dumps(cfg, indent=1))  # JSON is YAML

    # -- the CLI ----------------------------------------------------------------------------------

    def cli(self, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=self.env(**env),
            timeout=timeout,
        )

    def ticket(self, repo: Path, body: str, agent: str, name: str = "t1", **front: Any) -> Path:
        fields: dict[str, Any] = {
            "id": name,
            "repo": str(repo),
            "bucket": "small",
            "agent": agent,
            "overrides": TINY_BUCKETS,
        }
        fields.update(front)
        path = self.root / f"{name}.md"
        path.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items()) + "---\n" + body + "\n")
        return path

    def launch(self, ticket: Path, **env: str) -> str:
        p = self.cli("launch", str(ticket), **env)
        assert p.returncode == 0, f"launch exited {p.returncode}: {p.stderr.strip()}"
        return p.stdout.strip().splitlines()[-1]

    # -- reading a run ---------------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.runs_root / run_id

    def state(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / "state.json").read_text())

    def events(self, run_id: str) -> list[Any]:
        path = self.run_dir(run_id) / "events.jsonl"
        return [json.loads(line)["data"] for line in path.read_text().splitlines() if line.strip()]

    def status_row(self, run_id: str) -> dict[str, Any]:
        p = self.cli("status", "--json")
        assert p.returncode == 0, p.stderr
        return next(r for r in json.loads(p.stdout)["runs"] if r["id"] == run_id)

    def spiral_pages(self, run_id: str) -> int:
        return spiral_pages(self.receiver, run_id)

    def settle(self, passes: int = 3) -> None:
        """Let the sandbox's watcher look a few more times (after an ending, before "nothing more was sent")."""
        wait_passes(passes, home=self.orch_home)

    def wait_ended(self, run_id: str, timeout: float = RUN_TIMEOUT_S) -> dict[str, Any]:
        """The run's record once it has ended (bounded); a stuck run is killed and reported."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.state(run_id)
            if s["state"] not in ("launching", "running"):
                return s
            time.sleep(0.2)
        s = self.state(run_id)
        self.cli("kill", run_id)
        raise AssertionError(
            f"run {run_id} still {s['state']} after {timeout:.0f} s; stderr: {self.agent_stderr(run_id)[-600:]!r}"
        )

    def agent_stderr(self, run_id: str) -> str:
        path = self.run_dir(run_id) / "agent.stderr"
        return path.read_text(errors="replace") if path.exists() else ""

    def describe(self, run_id: str) -> str:
        """The record's ending and the agent's stderr tail, for assertion messages."""
        s = self.state(run_id)
        return (
            f"state={s.get('state')!r} reason={s.get('reason')!r} exit_code={s.get('exit_code')!r}; "
            f"server: {[e.served for e in self.model.exchanges if e.kind != 'aux']}; "
            f"stderr tail: {self.agent_stderr(run_id)[-400:]!r}"
        )


def wait_for(pred: Callable[[], bool], timeout: float, what: str, every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


# ---- what the server saw -------------------------------------------------------------------------


def user_texts(model: ScriptedModel) -> list[str]:
    """Every user text block / input_text part of the first main-loop request."""
    turns = model.turn_requests()
    if not turns:
        return []
    body = turns[0].body or {}
    out: list[str] = []
    for message in body.get("messages") or []:  # Anthropic
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    for item in body.get("input") or []:  # Responses
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            out += [p.get("text", "") for p in item.get("content") or [] if p.get("type") == "input_text"]
    return out


def served_tokens(model: ScriptedModel) -> int:
    """Tokens the server reported in its successful answers, as the CLIs count them."""
    u = model.usage_served(("turn", "side"))
    if any(e.dialect == "openai" for e in model.exchanges):
        return u.input_tokens + u.output_tokens  # Responses: input_tokens includes the cached part
    return u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens


def claude_result_tokens(events: list[Any]) -> int | None:
    """Claude Code's own total: the `result` line's usage (input + output + cache read + cache write)."""
    results = [e for e in events if isinstance(e, dict) and e.get("type") == "result"]
    if not results or not isinstance(results[-1].get("usage"), dict):
        return None
    u = results[-1]["usage"]
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(u.get(k) or 0) for k in keys)


def codex_turn_tokens(events: list[Any]) -> int | None:
    """Codex's own total: the `turn.completed` usage (input, cached part included, + output)."""
    done = [e for e in events if isinstance(e, dict) and e.get("type") == "turn.completed"]
    if not done:
        return None
    return sum(int(e["usage"].get("input_tokens") or 0) + int(e["usage"].get("output_tokens") or 0) for e in done)


# ---- processes -------------------------------------------------------------------------------------


def process_tree(pid: int) -> list[psutil.Process]:
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def gone(p: psutil.Process) -> bool:
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def stop_leftovers(box: Sandbox) -> None:
    """Teardown: kill any run still active, and the watcher launch started for this state folder
    (by the pid it wrote into watch.lock, after checking it is ours)."""
    if box.runs_root.is_dir():
        for run_dir in box.runs_root.iterdir():
            try:
                st = json.loads((run_dir / "state.json").read_text())
            except (OSError, ValueError):
                continue
            if st.get("state") in ("launching", "running"):
                box.cli("kill", run_dir.name, timeout=30)
    lock = box.orch_home / "watch.lock"
    try:
        pid = int(lock.read_text().strip())
        proc = psutil.Process(pid)
        if proc.environ().get("ORCHESTRATOR_HOME") == str(box.orch_home):
            proc.terminate()
            wait_for(lambda: gone(proc), timeout=10, what=f"the watcher (pid {pid}) to exit", every=0.05)
    except (OSError, ValueError, psutil.Error):
        pass


def make_sandbox(tmp_path: Path, steps: list[Step] | None = None) -> Sandbox:
    orch_home = Path(os.environ["ORCHESTRATOR_HOME"])  # the autouse fixture's tmp folder
    model = CloneScriptedModel(orch_home / "runs", script=steps or [])
    model.start()
    receiver = Receiver().start()
    box = Sandbox(tmp_path / "agents", orch_home, model, receiver)
    return box


@contextmanager
def sandbox(tmp_path: Path, **config: Any) -> Iterator[Sandbox]:
    """A sandbox with its config.yaml written (`config`: extra keys), everything it started stopped after."""
    b = make_sandbox(tmp_path)
    b.write_config(**config)
    try:
        yield b
    finally:
        stop_leftovers(b)
        b.model.stop()
        b.receiver.stop()


# ---- recording a run as a corpus case ---------------------------------------------------------------

CASE_WORKDIR = "/home/dev/runs/{case_id}/clone"  # what a recorded clone path becomes in a case
SANDBOX_STANDIN = "/home/dev/agent-sandbox"  # ... and the sandbox folders (agent config dirs, TMPDIR)


def _slug(path: str) -> str:
    """How Claude Code names a project folder after a path (memory_paths, transcripts)."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def save_case(box: Sandbox, run_id: str, out: Path, case_id: str, description: str) -> None:
    """Copy a finished run folder to `out` as a corpus case: the run's own files, with its
    tmp paths replaced by fixed stand-ins (workdir included) and the scripted server's port
    fixed, so the case reads the same wherever it was recorded. Judged on the default
    buckets (no overrides), labelled healthy."""
    from orchestrator.record.case_file import write_case

    run = box.run_dir(run_id)
    clone = str(run / "clone")
    workdir = CASE_WORKDIR.format(case_id=case_id)
    swaps = [
        (clone, workdir),
        (_slug(clone), _slug(workdir)),
        (str(box.root), SANDBOX_STANDIN),
        (_slug(str(box.root)), _slug(SANDBOX_STANDIN)),
        (str(box.orch_home), "/home/dev/orchestrator"),
    ]

    def clean(text: str) -> str:
        for old, new in swaps:
            text = text.replace(old, new)
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8765", text)

    out.mkdir(parents=True)
    for name in ("events.jsonl", "workspace.jsonl", "tracked.txt"):
        (out / name).write_text(clean((run / name).read_text()))
    recorded = yaml.safe_load((run / "case.yaml").read_text())
    write_case(
        out,
        {
            "id": case_id,
            "description": description,
            "format": recorded["format"],
            "bucket": recorded["bucket"],
            "started_at": recorded["started_at"],
            "ended_at": recorded["ended_at"],
            "outputs": recorded["outputs"],
            "workdir": workdir,
            "overrides": {},
            "expect": {"spiral": False},
        },
    )


HELLO = "print('hello from scripted')\n"


def healthy_script() -> list[Step]:
    """Write hello.py, run it, answer: three model turns, each with its own usage (the final
    output count differs from message_start's, as it does with the real API)."""
    return [
        WriteFile("hello.py", HELLO, usage=Usage(1000, 50, 200, 300, start_output_tokens=3)),
        Run("python3 hello.py", usage=Usage(2000, 70, 0, 0, start_output_tokens=5)),
        Reply("All done.", usage=Usage(2100, 30, 400, 0, start_output_tokens=2)),
    ]


HEALTHY_CASES = {
    "claude": (
        "healthy-real-claude-stream-json",
        "Real Claude Code 2.1.197 stream-json output (claude -p --output-format stream-json --verbose "
        "--permission-mode bypassPermissions), recorded by the orchestrator against the scripted model server "
        "(tests/scripted_model.py): Write hello.py, run it once, answer. Healthy: it must not page.",
    ),
    "codex": (
        "healthy-real-codex-exec-json",
        "Real Codex CLI 0.171.0 exec --json output (codex exec --json --sandbox workspace-write), recorded by "
        "the orchestrator against the scripted model server (tests/scripted_model.py): apply_patch adds "
        "hello.py, one exec_command runs it, answer. Healthy: it must not page.",
    ),
}


def record_healthy_cases(corpus: Path) -> list[Path]:
    """Run the healthy scenario once per CLI and save each run as a corpus case.

    .venv/bin/python -m tests.real_agents corpus/     # refuses to overwrite a case
    """
    import tempfile

    from tests.helpers import git

    made = []
    for agent, (case_id, description) in HEALTHY_CASES.items():
        if _cli_problem(agent):
            raise SystemExit(f"{agent}: {_cli_problem(agent)}")
        with tempfile.TemporaryDirectory(prefix="real-agents-") as tmp:
            root = Path(tmp)
            os.environ["ORCHESTRATOR_HOME"] = str(root / "orchestrator-home")
            repo = root / "origin"
            (repo / "src").mkdir(parents=True)
            (repo / "src" / "app.py").write_text("print('hi')\n")
            (repo / "run_tests.sh").write_text("#!/bin/sh\necho ok\n")
            git("init", "-q", "-b", "main", cwd=repo)
            git("add", "-A", cwd=repo)
            git("commit", "-q", "-m", "init", cwd=repo)
            box = make_sandbox(root, healthy_script())
            try:
                box.write_config()
                run_id = box.launch(box.ticket(repo, "Write hello.py and run it.", agent))
                s = box.wait_ended(run_id)
                if s["state"] != "succeeded":
                    raise SystemExit(f"{agent}: the run did not succeed: {box.describe(run_id)}")
                box.cli("status", "--json")  # the ending's accounting, as a person would see it
                save_case(box, run_id, corpus / case_id, case_id, description)
                made.append(corpus / case_id)
            finally:
                stop_leftovers(box)
                box.model.stop()
                box.receiver.stop()
    return made


if __name__ == "__main__":
    for case in record_healthy_cases(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "corpus")):
        print(case)
