"""Run each real-CLI scenario once against the scripted model server.

Not a pytest test: the reproduction script for docs/real-agents-findings.md.

    npm ci --prefix agents                      # once: the pinned CLIs
    .venv/bin/python tests/realcli_probe.py     # all fast scenarios (~1 min)
    .venv/bin/python tests/realcli_probe.py --only claude-429 codex-429
    .venv/bin/python tests/realcli_probe.py --slow    # + the default-retry runs (~4 min)
    .venv/bin/python tests/realcli_probe.py --samples /tmp/realcli-samples

    # the *-offline scenarios run only where nothing but loopback is reachable:
    unshare -n sh -c 'ip link set lo up; .venv/bin/python tests/realcli_probe.py --only claude-offline codex-offline'

Each scenario prints one line: name, OK/FAIL (did the CLI behave as the
findings say), exit code, wall time, and the observation.  Everything runs
under a temporary HOME, CLAUDE_CONFIG_DIR and CODEX_HOME in /tmp, in a fresh
git repository, talking only to the scripted server on 127.0.0.1; every CLI
run has a timeout.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from tests.scripted_model import (
    EditFile,
    Fail,
    Reply,
    Run,
    ScriptedModel,
    Usage,
    WriteFile,
    debug_loop_script,
)

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "agents" / "node_modules" / ".bin"
CLAUDE = BIN / "claude"
CODEX = BIN / "codex"
RUN_TIMEOUT = 120.0

# Claude: as root, bypassPermissions / --dangerously-skip-permissions is
# refused unless IS_SANDBOX=1 is in the environment.
CLAUDE_UNATTENDED = ["--permission-mode", "bypassPermissions"]
CLAUDE_UNATTENDED_ENV = {"IS_SANDBOX": "1"}
# Codex: no sandbox, no approvals.  (--skip-git-repo-check only matters
# outside a git repository.)
CODEX_UNATTENDED = ["--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
# A model Codex has metadata for: it offers exec_command and apply_patch and
# prints no "Model metadata ... not found" error item.
CODEX_MODEL = "gpt-5.5"


# ---------------------------------------------------------------------------
# Sandboxes and launchers
# ---------------------------------------------------------------------------


@dataclass
class Sandbox:
    """Temp HOME / TMPDIR / config dirs and a git repo used as the agent's cwd."""

    root: Path
    home: Path = field(init=False)
    tmp: Path = field(init=False)
    claude_config: Path = field(init=False)
    codex_home: Path = field(init=False)
    repo: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"  # Claude puts claude-<uid>/ here, Codex its bwrap mount targets
        self.claude_config = self.root / "claude-config"
        self.codex_home = self.root / "codex-home"
        self.repo = self.root / "repo"
        for d in (self.home, self.tmp, self.claude_config, self.codex_home, self.repo):
            d.mkdir(parents=True, exist_ok=True)
        git = ["git", "-c", "user.name=probe", "-c", "user.email=probe@example.invalid", "-C", str(self.repo)]
        (self.repo / "README.md").write_text("probe repo\n")
        for args in (["init", "-q"], ["add", "README.md"], ["commit", "-q", "-m", "init"]):
            subprocess.run(git + args, check=True, timeout=30, env={"PATH": "/usr/bin:/bin", "HOME": str(self.home)})

    def base_env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
        }


@dataclass
class Result:
    argv: list[str]
    rc: int | None  # None: killed at the timeout
    seconds: float
    stdout: str
    stderr: str

    def lines(self) -> list[dict]:
        """The JSON lines of stdout."""
        out = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out


NO_RUN = Result([], 0, 0.0, "", "")


def run_cli(
    argv: Sequence[str], env: dict[str, str], cwd: Path, stdin: str | None = None, timeout: float = RUN_TIMEOUT
) -> Result:
    start = time.monotonic()
    try:
        proc = subprocess.run(
            list(argv), env=env, cwd=cwd, input=stdin or "", capture_output=True, text=True, timeout=timeout
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    return Result(list(argv), rc, time.monotonic() - start, out, err)


def run_live(
    argv: Sequence[str], env: dict[str, str], cwd: Path, during: Callable[[], object], after_s: float
) -> tuple[Result, list[tuple[float, str]], object]:
    """Run a CLI, timestamp each stdout line as it arrives, and call
    ``during()`` once, ``after_s`` seconds in (while the agent is busy)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stamped: list[tuple[float, str]] = []
    err: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            stamped.append((time.monotonic() - start, line))

    def pump_err() -> None:
        assert proc.stderr is not None
        err.append(proc.stderr.read())

    readers = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
    for reader in readers:
        reader.start()
    time.sleep(after_s)
    seen = during()
    try:
        rc: int | None = proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        rc = None
    for reader in readers:
        reader.join(timeout=5)
    out = "".join(line for _, line in stamped)
    return Result(list(argv), rc, time.monotonic() - start, out, "".join(err)), stamped, seen


def claude_env(box: Sandbox, model: ScriptedModel, **extra: str) -> dict[str, str]:
    return (
        box.base_env()
        | {
            "CLAUDE_CONFIG_DIR": str(box.claude_config),
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        | extra
    )


def claude_argv(*args: str) -> list[str]:
    return [str(CLAUDE), "-p", "--output-format", "stream-json", "--verbose", *args]


def claude(
    box: Sandbox,
    model: ScriptedModel,
    args: Sequence[str],
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Result:
    return run_cli(claude_argv(*args), claude_env(box, model, **(env or {})), box.repo, stdin, timeout)


def claude_unattended(
    box: Sandbox,
    model: ScriptedModel,
    args: Sequence[str],
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Result:
    return claude(box, model, [*CLAUDE_UNATTENDED, *args], stdin, CLAUDE_UNATTENDED_ENV | (env or {}), timeout)


def codex_config(
    model: ScriptedModel,
    *,
    request_max_retries: int | None = 0,
    stream_max_retries: int | None = 0,
    quiet: bool = True,
) -> str:
    """config.toml for Codex against the scripted server.

    A retry count of None leaves Codex's default (4 request / 5 stream
    retries).  ``quiet`` turns analytics off (else the process lingers ~5 s
    at exit where the internet is unreachable) and plugins off (else it
    looks up github.com / api.github.com)."""
    lines = [f'model = "{CODEX_MODEL}"', 'model_provider = "scripted"', ""]
    if quiet:
        lines += ["[analytics]", "enabled = false", "", "[features]", "plugins = false", ""]
    lines += [
        "[model_providers.scripted]",
        'name = "Scripted"',
        f'base_url = "{model.url}/v1"',
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
    ]
    if request_max_retries is not None:
        lines.append(f"request_max_retries = {request_max_retries}")
    if stream_max_retries is not None:
        lines.append(f"stream_max_retries = {stream_max_retries}")
    return "\n".join(lines) + "\n"


def codex_env(box: Sandbox) -> dict[str, str]:
    return box.base_env() | {"CODEX_HOME": str(box.codex_home), "SCRIPTED_API_KEY": "test-key"}


def codex(
    box: Sandbox,
    model: ScriptedModel,
    args: Sequence[str],
    stdin: str | None = None,
    config: str | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Result:
    (box.codex_home / "config.toml").write_text(config if config is not None else codex_config(model))
    return run_cli([str(CODEX), "exec", "--json", *args], codex_env(box), box.repo, stdin, timeout)


def rollout_files(box: Sandbox) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(box.codex_home / "sessions" / "*" / "*" / "*" / "rollout-*.jsonl")))


def claude_transcripts(box: Sandbox) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(box.claude_config / "projects" / "*" / "*.jsonl")))


def isolated_network() -> bool:
    """True inside a network namespace with no IPv4 route (only loopback),
    e.g. under ``unshare -n sh -c 'ip link set lo up; ...'``."""
    with open("/proc/net/route") as fh:
        return len([line for line in fh if line.strip()]) <= 1


# ---------------------------------------------------------------------------
# Reading what the server saw
# ---------------------------------------------------------------------------


def claude_prompt(model: ScriptedModel) -> str | None:
    """The user's prompt text in the first main-loop request."""
    for exchange in model.turn_requests():
        for message in exchange.body.get("messages", []):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                texts = [b.get("text", "") for b in content if b.get("type") == "text"]
                return texts[-1] if texts else ""
    return None


def codex_prompt(model: ScriptedModel) -> str | None:
    for exchange in model.turn_requests():
        texts = [
            part.get("text", "")
            for item in exchange.body.get("input") or []
            if item.get("type") == "message" and item.get("role") == "user"
            for part in item.get("content") or []
            if part.get("type") == "input_text" and not part.get("text", "").startswith("<")
        ]
        return texts[-1] if texts else ""
    return None


def last_result(res: Result) -> dict:
    results = [line for line in res.lines() if line.get("type") == "result"]
    return results[-1] if results else {}


def outputs(model: ScriptedModel, width: int = 40) -> list[str]:
    return [t.output.strip().replace("\n", " | ")[:width] for t in model.tool_outputs()]


def claude_summary(res: Result, model: ScriptedModel) -> str:
    r = last_result(res)
    retries = [line for line in res.lines() if line.get("subtype") == "api_retry"]
    return (
        f"result.subtype={r.get('subtype')} is_error={r.get('is_error')} api_error_status={r.get('api_error_status')} "
        f"permission_denials={len(r.get('permission_denials') or [])} api_retry={len(retries)} "
        f"turn_requests={len(model.turn_requests())} tool_outputs={outputs(model)}"
    )


def codex_summary(res: Result, model: ScriptedModel) -> str:
    kinds = collections.Counter(line.get("type") for line in res.lines())
    return f"events={dict(kinds)} turn_requests={len(model.turn_requests())} tool_outputs={outputs(model)}"


# ---------------------------------------------------------------------------
# Scenarios: each gets a fresh sandbox and server and returns
# (behaved as documented?, the CLI run, one-line observation)
# ---------------------------------------------------------------------------

Outcome = tuple[bool, Result, str]
Scenario = Callable[[Sandbox, ScriptedModel, "Path | None"], Outcome]
SCENARIOS: dict[str, Scenario] = {}
SLOW: set[str] = set()
NEEDS_ISOLATION: set[str] = set()


def scenario(name: str, *, slow: bool = False, isolated: bool = False) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        if slow:
            SLOW.add(name)
        if isolated:
            NEEDS_ISOLATION.add(name)
        return fn

    return register


def save(samples: Path | None, name: str, text: str) -> None:
    if samples is not None:
        samples.mkdir(parents=True, exist_ok=True)
        (samples / name).write_text(text)


def healthy_steps() -> list:
    return [
        WriteFile("hello.py", "print('hello from scripted')\n", usage=Usage(100, 20)),
        Run("python3 hello.py", usage=Usage(110, 21)),
        EditFile("hello.py", "print('hello from scripted')", "print('edited')", usage=Usage(120, 22)),
        Run("python3 hello.py", usage=Usage(130, 23)),
        Reply("All done.", usage=Usage(140, 24)),
    ]


def _http(url: str, body: dict | None, method: str = "POST") -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@scenario("server-selfcheck")
def sc_server_selfcheck(box, model, samples):
    """The server alone: positions, side requests, faults, both dialects, JSON and SSE."""
    model.set_script([Fail(429, times=1), Run("echo one"), Reply("bye")])
    tools = [{"name": "Bash", "input_schema": {}}]
    first = {"model": "m", "max_tokens": 10, "tools": tools, "messages": [{"role": "user", "content": "hi"}]}
    checks = {}
    checks["fault first"] = _http(model.url + "/v1/messages", first)[0] == 429
    status, text = _http(model.url + "/v1/messages", first)
    checks["turn 0 is Bash"] = status == 200 and json.loads(text)["content"][0]["name"] == "Bash"
    checks["retry gets same turn"] = (
        json.loads(_http(model.url + "/v1/messages", first)[1])["content"][0]["name"] == "Bash"
    )
    side = {"model": "haiku", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
    checks["side request answered"] = (
        json.loads(_http(model.url + "/v1/messages", side)[1])["content"][0]["text"] == "ok"
    )
    second = first | {
        "stream": True,
        "messages": first["messages"]
        + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t0", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "one\n"}]},
        ],
    }
    status, text = _http(model.url + "/v1/messages", second)
    events = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    checks["anthropic SSE order"] = events == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    checks["tool_result recorded"] = [t.output for t in model.tool_outputs()] == ["one\n"]
    responses = {
        "model": "m",
        "input": [{"type": "message", "role": "user", "content": []}],
        "tools": [],
        "stream": True,
    }
    status, text = _http(model.url + "/v1/responses", responses)
    checks["responses SSE completes"] = status == 200 and "event: response.completed" in text and "exec_command" in text
    checks["count_tokens"] = _http(model.url + "/v1/messages/count_tokens", first)[0] == 200
    checks["unknown path 404"] = _http(model.url + "/api/nothing", None, "GET")[0] == 404
    failed = [name for name, ok in checks.items() if not ok]
    return not failed, NO_RUN, f"checks={len(checks)} failed={failed}"


# -- Claude: permissions ------------------------------------------------------


@scenario("claude-healthy")
def sc_claude_healthy(box, model, samples):
    model.set_script(healthy_steps())
    res = claude_unattended(box, model, ["--", "make hello.py"])
    save(samples, "claude-healthy.stream.jsonl", res.stdout)
    ran = [t.output.strip() for t in model.tool_outputs()][1::2]
    ok = (
        res.rc == 0
        and (box.repo / "hello.py").read_text().strip() == "print('edited')"
        and ran
        == [
            "hello from scripted",
            "edited",
        ]
    )
    return ok, res, claude_summary(res, model)


def _claude_refused_as_root(flags: list[str], env: dict[str, str] | None = None) -> Scenario:
    def run(box, model, samples):
        model.set_script([Run("echo should-not-run"), Reply("ok")])
        res = claude(box, model, [*flags, "--", "go"], env=env)
        return res.rc == 1 and not model.turn_requests(), res, f"env={env} stderr={res.stderr.strip()!r}"

    return run


scenario("claude-bypass-mode-as-root")(_claude_refused_as_root(["--permission-mode", "bypassPermissions"]))
scenario("claude-bypass-mode-IS_SANDBOX-yes")(
    _claude_refused_as_root(["--permission-mode", "bypassPermissions"], {"IS_SANDBOX": "yes"})
)
scenario("claude-skip-permissions-as-root")(_claude_refused_as_root(["--dangerously-skip-permissions"]))


def _claude_writes(flags: list[str], env: dict[str, str]) -> Scenario:
    def run(box, model, samples):
        model.set_script(
            [
                WriteFile("w.txt", "w\n"),
                Run("touch made.txt"),
                Run("python3 -c \"open('p.txt','w').write('x')\""),
                EditFile("w.txt", "w", "e"),
                Reply("ok"),
            ]
        )
        res = claude(box, model, [*flags, "--", "go"], env=env)
        init = next((line for line in res.lines() if line.get("subtype") == "init"), {})
        files = {f: (box.repo / f).exists() for f in ("w.txt", "made.txt", "p.txt")}
        edited = files["w.txt"] and (box.repo / "w.txt").read_text() == "e\n"
        return (
            res.rc == 0 and all(files.values()) and edited,
            res,
            f"permissionMode={init.get('permissionMode')} files={files} edited={edited} " + claude_summary(res, model),
        )

    return run


scenario("claude-bypass-mode-IS_SANDBOX")(
    _claude_writes(["--permission-mode", "bypassPermissions"], {"IS_SANDBOX": "1"})
)
scenario("claude-skip-permissions-IS_SANDBOX")(_claude_writes(["--dangerously-skip-permissions"], {"IS_SANDBOX": "1"}))
scenario("claude-allowedTools-one-word")(_claude_writes(["--allowedTools=Bash,Edit,Write,Read"], {}))
scenario("claude-allowedTools-comma-list-then-dashdash")(_claude_writes(["--allowedTools", "Bash,Edit,Write,Read"], {}))


@scenario("claude-allowedTools-spaced-swallows-prompt")
def sc_claude_allowed_tools_spaced(box, model, samples):
    model.set_script([Run("echo spaced"), Reply("ok")])
    res = claude(box, model, ["--allowedTools", "Bash", "Edit", "the prompt"])
    return res.rc == 1 and not model.turn_requests(), res, f"stderr={res.stderr.strip()!r}"


def _claude_denials(flags: list[str]) -> Scenario:
    def run(box, model, samples):
        model.set_script(
            [
                Run("echo read-only-ok"),
                Run("touch made.txt"),
                Run("python3 -c \"open('p.txt','w').write('x')\""),
                WriteFile("d.txt", "d\n"),
                Reply("ok"),
            ]
        )
        res = claude(box, model, [*flags, "--", "go"])
        r = last_result(res)
        denied = [
            d["tool_name"] + ":" + str(d["tool_input"].get("command", "Write"))
            for d in r.get("permission_denials") or []
        ]
        results = [(t.is_error, t.output) for t in model.tool_outputs()]
        return res.rc == 0 and r.get("is_error") is False, res, f"denied={denied} tool_results={results}"

    return run


scenario("claude-default-profile")(_claude_denials([]))
scenario("claude-acceptEdits")(_claude_denials(["--permission-mode", "acceptEdits"]))


# -- Claude: prompt passing ---------------------------------------------------


@scenario("claude-prompt-stdin")
def sc_claude_prompt_stdin(box, model, samples):
    model.set_script([Reply("ok")])
    res = claude_unattended(box, model, [], stdin="- item from stdin\n")
    seen = claude_prompt(model)
    return res.rc == 0 and seen == "- item from stdin\n", res, f"prompt_seen={seen!r}"


@scenario("claude-prompt-dashdash")
def sc_claude_prompt_dashdash(box, model, samples):
    model.set_script([Reply("ok")])
    res = claude_unattended(box, model, ["--", "- item one\n- item two"])
    seen = claude_prompt(model)
    return res.rc == 0 and seen == "- item one\n- item two", res, f"prompt_seen={seen!r}"


@scenario("claude-prompt-dash-without-dashdash")
def sc_claude_prompt_dash_bare(box, model, samples):
    model.set_script([Reply("ok")])
    res = claude_unattended(box, model, ["- item one"])
    return res.rc == 1 and not model.turn_requests(), res, f"stderr={res.stderr.strip()!r}"


@scenario("claude-prompt-arg-plus-stdin")
def sc_claude_prompt_both(box, model, samples):
    model.set_script([Reply("ok")])
    res = claude_unattended(box, model, ["--", "arg prompt"], stdin="piped extra\n")
    seen = claude_prompt(model)
    return res.rc == 0, res, f"prompt_seen={seen!r}"


# -- Claude: usage, liveness ----------------------------------------------------


@scenario("claude-usage")
def sc_claude_usage(box, model, samples):
    model.set_script([Run("true", usage=Usage(1000, 50, 200, 300, 3)), Reply("done", usage=Usage(2000, 70, 0, 0, 5))])
    res = claude_unattended(box, model, ["--", "go"])
    streamed = [
        line["message"]["usage"].get("output_tokens") for line in res.lines() if line.get("type") == "assistant"
    ]
    transcript = [
        d["message"]["usage"].get("output_tokens")
        for f in claude_transcripts(box)
        for d in map(json.loads, f.read_text().splitlines())
        if d.get("type") == "assistant"
    ]
    r = last_result(res)
    usage = {
        k: r.get("usage", {}).get(k)
        for k in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    }
    ok = streamed == [3, 5] and transcript == [50, 70] and usage["output_tokens"] == 120
    return (
        ok,
        res,
        (
            f"model_at_server={sorted({e.model for e in model.turn_requests()})} "
            f"stream_assistant_output_tokens={streamed} transcript_output_tokens={transcript} result.usage={usage} "
            f"total_cost_usd={r.get('total_cost_usd')} modelUsage={json.dumps(r.get('modelUsage'))}"
        ),
    )


@scenario("claude-live")
def sc_claude_live(box, model, samples):
    """Are stream-json lines and the transcript written while a 3 s command runs?"""
    model.set_script([Run("sleep 3", usage=Usage(500, 40)), Reply("ok")])

    def during():
        return [
            (d.get("type"), (d.get("message") or {}).get("usage", {}).get("output_tokens"))
            for f in claude_transcripts(box)
            for d in map(json.loads, f.read_text().splitlines())
            if d.get("type") in ("assistant", "user")
        ]

    argv = claude_argv(*CLAUDE_UNATTENDED, "--", "go")
    res, stamped, seen = run_live(argv, claude_env(box, model, **CLAUDE_UNATTENDED_ENV), box.repo, during, 1.5)
    early = [json.loads(line).get("type") for t, line in stamped if t < 1.5 and line.startswith("{")]
    where = [str(p.relative_to(box.claude_config)) for p in claude_transcripts(box)]
    return (
        res.rc == 0 and "assistant" in early,
        res,
        f"stdout_before_1.5s={early} transcript_at_1.5s={seen} transcript={where}",
    )


# -- Claude: provider errors ------------------------------------------------------


def _claude_error(status: int, sample: str | None = None, env: dict[str, str] | None = None, **fail) -> Scenario:
    env = {"CLAUDE_CODE_MAX_RETRIES": "2"} if env is None else env

    def run(box, model, samples):
        model.set_script([Fail(status, **fail)])
        res = claude_unattended(box, model, ["--", "go"], env=env, timeout=300)
        if sample:
            save(samples, sample, res.stdout)
        r = last_result(res)
        retries = [line for line in res.lines() if line.get("subtype") == "api_retry"]
        first = {k: retries[0].get(k) for k in ("attempt", "max_retries", "error_status", "error")} if retries else None
        delays = [round(line["retry_delay_ms"]) for line in retries]
        return (
            r.get("is_error") is True and res.rc == 1,
            res,
            (
                f"env={env} fail={fail} requests={len(model.turn_requests())} api_retry={len(retries)} first={first} "
                f"delays_ms={delays} result.subtype={r.get('subtype')} is_error={r.get('is_error')} "
                f"api_error_status={r.get('api_error_status')} result={r.get('result')!r}"
            ),
        )

    return run


scenario("claude-429")(_claude_error(429, "claude-429.stream.jsonl"))
scenario("claude-429-no-retries")(_claude_error(429, env={"CLAUDE_CODE_MAX_RETRIES": "0"}))
scenario("claude-429-x-should-retry-false")(_claude_error(429, env={}, should_retry=False))
scenario("claude-429-retry-after-0")(_claude_error(429, retry_after="0"))
scenario("claude-529")(_claude_error(529))
scenario("claude-401")(_claude_error(401, "claude-401.stream.jsonl"))
scenario("claude-429-default-retries", slow=True)(_claude_error(429, env={}))


@scenario("claude-transient-errors")
def sc_claude_transient(box, model, samples):
    model.set_script([Fail(429, times=2), Run("echo after-429"), Fail(529, times=1), Reply("ok")])
    res = claude_unattended(box, model, ["--", "go"], env={"CLAUDE_CODE_MAX_RETRIES": "3"})
    retries = [(line["attempt"], line["error_status"]) for line in res.lines() if line.get("subtype") == "api_retry"]
    ok = res.rc == 0 and last_result(res).get("is_error") is False and outputs(model) == ["after-429"]
    return ok, res, f"api_retry={retries} " + claude_summary(res, model)


# -- Claude: spiral loop, traffic -------------------------------------------------


@scenario("claude-loop-40")
def sc_claude_loop(box, model, samples):
    model.set_script(debug_loop_script(40))
    res = claude_unattended(box, model, ["--", "fix the bug"])
    runs = [t for t in model.tool_outputs()[1:] if "debug: still failing" in t.output]
    note = f"failing_runs={len(runs)} turn_requests={len(model.turn_requests())}"
    if runs:
        note += f" run_output={runs[0].output!r} is_error={runs[0].is_error}"
    return res.rc == 0 and len(runs) == 40, res, note


@scenario("claude-offline", isolated=True)
def sc_claude_offline(box, model, samples):
    """Without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC / DISABLE_AUTOUPDATER, nothing but loopback reachable."""
    model.set_script([Run("echo offline"), Reply("ok")])
    env = claude_env(box, model, **CLAUDE_UNATTENDED_ENV)
    for var in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"):
        env.pop(var)
    res = run_cli(claude_argv(*CLAUDE_UNATTENDED, "--", "go"), env, box.repo)
    seen = [f"{e.method} {e.path.split('?')[0]} {e.kind}" for e in model.exchanges]
    return res.rc == 0 and res.seconds < 5, res, f"requests={seen}"


# -- Codex --------------------------------------------------------------------------


@scenario("codex-healthy")
def sc_codex_healthy(box, model, samples):
    model.set_script(healthy_steps())
    res = codex(box, model, [*CODEX_UNATTENDED, "--", "make hello.py"])
    save(samples, "codex-healthy.exec.jsonl", res.stdout)
    rollouts = rollout_files(box)
    if rollouts:
        save(samples, "codex-healthy.rollout.jsonl", rollouts[-1].read_text())
    hello = box.repo / "hello.py"
    ok = res.rc == 0 and hello.exists() and hello.read_text().strip() == "print('edited')"
    where = [str(p.relative_to(box.codex_home)) for p in rollouts]
    tools = sorted({t.get("name") or t.get("type") for t in model.turn_requests()[0].body.get("tools", [])})
    return ok, res, codex_summary(res, model) + f" rollout={where} tools_offered={tools}"


def _codex_sandbox(flags: list[str], expect_writes: bool) -> Scenario:
    def run(box, model, samples):
        model.set_script([WriteFile("sb.txt", "sb\n"), Run("echo ran > ran.txt; cat ran.txt"), Run("ls"), Reply("ok")])
        res = codex(box, model, [*flags, "--", "go"])
        wrote = {f: (box.repo / f).exists() for f in ("sb.txt", "ran.txt")}
        items = [line["item"]["type"] for line in res.lines() if line.get("type") == "item.completed"]
        ok = res.rc == 0 and all(wrote.values()) == expect_writes
        return ok, res, f"wrote={wrote} items_completed={items} tool_outputs={outputs(model, 90)}"

    return run


scenario("codex-default-profile")(_codex_sandbox([], expect_writes=False))
scenario("codex-workspace-write")(_codex_sandbox(["--sandbox", "workspace-write"], expect_writes=True))
scenario("codex-workspace-write-approval-never")(
    _codex_sandbox(["--sandbox", "workspace-write", "-c", "approval_policy=never"], expect_writes=True)
)
scenario("codex-bypass")(_codex_sandbox(CODEX_UNATTENDED, expect_writes=True))


@scenario("codex-prompt-stdin-dash")
def sc_codex_stdin_dash(box, model, samples):
    model.set_script([Reply("ok")])
    res = codex(box, model, [*CODEX_UNATTENDED, "-"], stdin="- item from stdin\n")
    seen = codex_prompt(model)
    return res.rc == 0 and seen == "- item from stdin\n", res, f"prompt_seen={seen!r}"


@scenario("codex-prompt-stdin-noarg")
def sc_codex_stdin_noarg(box, model, samples):
    model.set_script([Reply("ok")])
    res = codex(box, model, CODEX_UNATTENDED, stdin="- prompt only on stdin\n")
    seen = codex_prompt(model)
    return res.rc == 0 and seen == "- prompt only on stdin\n", res, f"prompt_seen={seen!r}"


@scenario("codex-prompt-dashdash")
def sc_codex_dashdash(box, model, samples):
    model.set_script([Reply("ok")])
    res = codex(box, model, [*CODEX_UNATTENDED, "--", "- item one\n- item two"])
    seen = codex_prompt(model)
    return res.rc == 0 and seen == "- item one\n- item two", res, f"prompt_seen={seen!r}"


@scenario("codex-prompt-dash-without-dashdash")
def sc_codex_dash_bare(box, model, samples):
    model.set_script([Reply("ok")])
    res = codex(box, model, [*CODEX_UNATTENDED, "- item one"])
    err = " / ".join(line for line in res.stderr.splitlines() if line.startswith(("error", "  tip")))
    return res.rc == 2 and not model.turn_requests(), res, f"stderr={err!r}"


@scenario("codex-prompt-arg-plus-stdin")
def sc_codex_prompt_both(box, model, samples):
    model.set_script([Reply("ok")])
    res = codex(box, model, [*CODEX_UNATTENDED, "--", "arg prompt"], stdin="piped extra\n")
    return res.rc == 0, res, f"prompt_seen={codex_prompt(model)!r}"


@scenario("codex-live")
def sc_codex_live(box, model, samples):
    """Are exec --json lines and rollout usage written while a 3 s command runs?"""
    model.set_script([Run("sleep 3", usage=Usage(500, 40)), Reply("ok")])
    (box.codex_home / "config.toml").write_text(codex_config(model))

    def during():
        seen = []
        for f in rollout_files(box):
            for d in map(json.loads, f.read_text().splitlines()):
                kind = d["type"] + "/" + str(d.get("payload", {}).get("type"))
                if d["type"] == "token_usage_record":
                    kind += f"(output_tokens={d['payload']['usage']['output_tokens']})"
                if kind.startswith(("token_usage_record", "event_msg/token_count", "response_item/function_call")):
                    seen.append(kind)
        return seen

    argv = [str(CODEX), "exec", "--json", *CODEX_UNATTENDED, "--", "go"]
    res, stamped, seen = run_live(argv, codex_env(box), box.repo, during, 1.5)
    early = [json.loads(line).get("type") for t, line in stamped if t < 1.5 and line.startswith("{")]
    return res.rc == 0 and "item.started" in early, res, f"stdout_before_1.5s={early} rollout_at_1.5s={seen}"


def _codex_error(
    status: int, sample: str | None = None, *, req: int | None = 0, stream: int | None = 0, **fail
) -> Scenario:
    def run(box, model, samples):
        model.set_script([Fail(status, **fail)])
        config = codex_config(model, request_max_retries=req, stream_max_retries=stream)
        res = codex(box, model, [*CODEX_UNATTENDED, "--", "go"], config=config, timeout=300)
        if sample:
            save(samples, sample, res.stdout)
        errors = [line["message"] for line in res.lines() if line.get("type") == "error"]
        failed = [line for line in res.lines() if line.get("type") == "turn.failed"]
        return (
            res.rc == 1 and bool(failed),
            res,
            (
                f"request_max_retries={req} stream_max_retries={stream} fail={fail} requests={len(model.turn_requests())} "
                f"error_lines={len(errors)} first_error={errors[0] if errors else None!r} "
                f"turn.failed={json.dumps(failed[-1]) if failed else None}"
            ),
        )

    return run


scenario("codex-429")(_codex_error(429, "codex-429.exec.jsonl", req=None, stream=None, retry_after="0"))
scenario("codex-429-no-retry-after")(_codex_error(429, req=None, stream=None))
scenario("codex-429-retry-after-0-stream-2")(_codex_error(429, stream=2, retry_after="0"))
scenario("codex-401")(_codex_error(401))
scenario("codex-500")(_codex_error(500))
scenario("codex-500-request-retries-2")(_codex_error(500, req=2))
scenario("codex-500-default-retries", slow=True)(_codex_error(500, req=None, stream=None))
scenario("codex-401-default-retries", slow=True)(_codex_error(401, req=None, stream=None))


@scenario("codex-transient-errors")
def sc_codex_transient(box, model, samples):
    model.set_script([Fail(429, times=2, retry_after="0"), Run("echo after-429"), Fail(500, times=1), Reply("ok")])
    config = codex_config(model, request_max_retries=1, stream_max_retries=3)
    res = codex(box, model, [*CODEX_UNATTENDED, "--", "go"], config=config)
    errors = [line["message"] for line in res.lines() if line.get("type") == "error"]
    ok = res.rc == 0 and outputs(model, 200)[0].endswith("after-429")
    return ok, res, f"error_lines={errors} served={[e.served for e in model.exchanges]}"


@scenario("codex-loop-40")
def sc_codex_loop(box, model, samples):
    model.set_script(debug_loop_script(40))
    res = codex(box, model, [*CODEX_UNATTENDED, "--", "fix the bug"])
    runs = [t for t in model.tool_outputs()[1:] if "debug: still failing" in t.output]
    failed = [
        line["item"]["exit_code"]
        for line in res.lines()
        if line.get("type") == "item.completed" and line["item"]["type"] == "command_execution"
    ]
    note = (
        f"failing_runs={len(runs)} turn_requests={len(model.turn_requests())} exit_codes={collections.Counter(failed)}"
    )
    return res.rc == 0 and len(runs) == 40, res, note


def _codex_offline(quiet: bool) -> Scenario:
    def run(box, model, samples):
        model.set_script([Run("echo offline"), Reply("ok")])
        res = codex(box, model, [*CODEX_UNATTENDED, "--", "go"], config=codex_config(model, quiet=quiet))
        ok = res.rc == 0 and (res.seconds < 3) == quiet
        return ok, res, f"quiet={quiet} requests={[e.served for e in model.exchanges]}"

    return run


scenario("codex-offline", isolated=True)(_codex_offline(quiet=True))
scenario("codex-offline-not-quiet", isolated=True)(_codex_offline(quiet=False))


# ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Probe the real Claude Code / Codex CLIs against the scripted model.")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="scenario names (default: all fast ones)")
    parser.add_argument("--slow", action="store_true", help="also run the default-retry scenarios (minutes)")
    parser.add_argument("--samples", type=Path, help="save representative raw logs in this folder")
    parser.add_argument("--keep", action="store_true", help="keep the temp sandboxes (their paths are printed)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in SCENARIOS:
            print(
                name + (" (slow)" if name in SLOW else "") + (" (needs unshare -n)" if name in NEEDS_ISOLATION else "")
            )
        return 0
    for exe in (CLAUDE, CODEX):
        if not exe.exists():
            print(f"missing {exe}: run `npm ci --prefix agents` first", file=sys.stderr)
            return 2
    names = args.only or [n for n in SCENARIOS if args.slow or n not in SLOW]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenarios: {unknown} (see --list)", file=sys.stderr)
        return 2
    isolated = isolated_network()
    passed = failed = skipped = 0
    for name in names:
        if name in NEEDS_ISOLATION and not isolated:
            skipped += 1
            print(f"{name:44s} SKIP  needs a loopback-only network namespace (unshare -n)", flush=True)
            continue
        root = Path(tempfile.mkdtemp(prefix=f"realcli-{name}-", dir="/tmp"))
        box = Sandbox(root)
        with ScriptedModel(workdir=str(box.repo)) as model:
            try:
                ok, res, note = SCENARIOS[name](box, model, args.samples)
            except Exception as exc:  # report it and go on with the next scenario
                ok, res, note = False, NO_RUN, f"probe error: {exc!r}"
        passed += ok
        failed += not ok
        kept = f"  [{root}]" if args.keep else ""
        print(f"{name:44s} {'OK  ' if ok else 'FAIL'}  rc={res.rc} {res.seconds:6.2f}s  {note}{kept}", flush=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
