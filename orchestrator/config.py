"""config.yaml in the state folder: agent profiles, tickets folder, limits.

The file is optional; without it the built-in profiles (claude, codex, demo)
and defaults apply.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from msgspec import Meta

from orchestrator.guidance import ladder
from orchestrator.guidance.policy import DEFAULT_ANSWER_MIN, DEFAULT_DELIVER_MIN, Policy
from orchestrator.guidance.wiring import MODES, path_for
from orchestrator.infra import step_forms, yamlfile
from orchestrator.infra.paths import config_path
from orchestrator.infra.serve_config import ServeBlock, ServeConfig
from orchestrator.infra.typed_yaml import FreeMapping, Invalid, NonNegativeFloat, PositiveFloat, Strict, convert, one_of
from orchestrator.record.model import Rung
from spiral.adapters import FORMATS

DEFAULT_HEARTBEAT_S = 1800.0
DEFAULT_WATCHER_TICK_S = 30.0
DEFAULT_WATCHER_IDLE_S = 600.0
# `gc` keeps an ended run's clone this many days; one that spiraled, failed, stalled or was lost, longer
DEFAULT_GC_KEEP_DAYS = 7.0
DEFAULT_GC_KEEP_DAYS_FLAGGED = 30.0
DELIVER_MODES = ("branch", "none")  # what happens to a succeeded run's work (orchestrator/runs/delivery.py)


@dataclass(frozen=True)
class CloneSteps:
    """What is done to a run's clone around the agent, as an agent profile or a `repos:` block of
    config.yaml gives it (a ticket's own keys come first; None: not given here)."""

    copy: tuple[tuple[str, str], ...] | None = None  # (absolute source, path in the clone), before setup
    setup: tuple[str, ...] | None = None  # argv run in the clone before the agent starts
    setup_timeout_s: float | None = None
    deliver: str | None = None  # branch | none
    pr_command: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    command: tuple[str, ...]
    format: str
    prompt: str = "argument"  # argument | stdin
    version_command: tuple[str, ...] = ()
    model: str | None = None  # for pricing, when the log does not name its model (codex exec --json)
    env: dict[str, str] = field(default_factory=dict)  # added to the agent's environment
    root_env: dict[str, str] = field(default_factory=dict)  # added too when the orchestrator runs as root
    install_hint: str | None = None  # said when the command is not on PATH
    guidance: str | None = None  # hook | inbox | none (orchestrator/guidance/wiring.py); None: by the command
    escalation: tuple[Rung, ...] = ()  # the profile's opt-in escalation ladder (orchestrator/guidance/ladder.py)
    max_usd: float | None = None  # spend ceilings for its runs (orchestrator/runs/budget.py)
    max_tokens: int | None = None
    steps: CloneSteps = CloneSteps()  # copy, setup, deliver, pr_command for its runs


# Unattended means no one is there to approve a tool call: the built-in profiles let the
# agent act inside its clone (README, "Agent profiles", says what that trusts it with).
# Each ends its argv with `--`, so a ticket body that starts with `-` is never an option.
BUILTIN = {
    "claude": Profile(
        "claude",
        ("claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions", "--"),
        "claude-stream-json",
        version_command=("claude", "--version"),
        # Claude Code refuses bypassPermissions as root unless told it runs in a sandbox (exactly "1")
        root_env={"IS_SANDBOX": "1"},
        install_hint="npm install -g @anthropic-ai/claude-code",
    ),
    # the narrower choice: these tools only, everything else denied (and the ending says so)
    "claude-allowlist": Profile(
        "claude-allowlist",
        (
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools=Bash,Edit,MultiEdit,Write,Read,Glob,Grep,TodoWrite",  # one argv word: the spaced form eats the prompt
            "--",
        ),
        "claude-stream-json",
        version_command=("claude", "--version"),
        install_hint="npm install -g @anthropic-ai/claude-code",
    ),
    "codex": Profile(
        "codex",
        ("codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--"),
        "codex-json",
        version_command=("codex", "--version"),
        install_hint="npm install -g @openai/codex",
    ),
    # the demo agent's format is the recorded case's; it is filled in at launch
    "demo": Profile("demo", (sys.executable, "-m", "orchestrator.demo.agent"), "generic"),
}


@dataclass
class UserConfig:
    path: Path
    tickets_dir: Path | None = None
    default_agent: str = "claude"
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    # `launch` starts a detached watcher when none runs, so detection never depends on a person;
    # it exits after watcher_idle_s with no active run. $ORCHESTRATOR_AUTOSTART_WATCHER=0 turns the
    # default off (the test suite does), `autostart_watcher:` in config.yaml decides over it.
    autostart_watcher: bool = True
    watcher_tick_s: float = DEFAULT_WATCHER_TICK_S
    watcher_idle_s: float = DEFAULT_WATCHER_IDLE_S
    profiles: dict[str, Profile] = field(default_factory=lambda: dict(BUILTIN))
    notify: dict[str, Any] = field(default_factory=dict)
    # config.yaml's price overrides (USD per million tokens); other models: ledger/prices.py
    prices: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    guidance: Policy = field(default_factory=Policy)
    gc_keep_days: float = DEFAULT_GC_KEEP_DAYS  # orchestrator/runs/gc.py
    gc_keep_days_flagged: float = DEFAULT_GC_KEEP_DAYS_FLAGGED
    # the queue (orchestrator/runs/fleet.py): None is no cap
    max_parallel: int | None = None
    max_parallel_per_repo: int | None = None
    stagger_s: float = 0.0
    daily_max_usd: float | None = None  # the fleet's daily spend ceiling: past it no queued run starts
    otlp: OtlpConfig | None = None  # traces of ended runs over OTLP/HTTP (orchestrator/telemetry)
    executor: ExecutorConfig | None = None  # where runs execute (orchestrator/runs/executors); None: here
    deliver: str = "branch"  # a succeeded run's work: pushed on a branch, or left in the clone (runs/delivery.py)
    pr_command: list[str] = field(default_factory=list)  # run in the clone once the branch is pushed
    repos: dict[str, CloneSteps] = field(default_factory=dict)  # `repos:` blocks, by repo_key() of the repo
    notify_on: list[str] | None = None  # the events that notify (checked by orchestrator.notify.channels)
    serve: ServeConfig = field(default_factory=ServeConfig)  # the run page's public URL, one-tap actions
    lines: yamlfile.Lines = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutorConfig:
    """`executor:` in config.yaml: `local` (this machine) or `ray` (a Ray cluster's nodes)."""

    kind: str = "local"
    address: str | None = None  # ray: the cluster's address (host:port of the head's GCS, or ray://...)
    resources: dict[str, float] = field(default_factory=dict)  # ray: what a run's node must have


@dataclass(frozen=True)
class OtlpConfig:
    """`otlp:` in config.yaml: where a span per ended run goes (orchestrator/telemetry)."""

    endpoint: str  # the full OTLP/HTTP (protobuf) traces URL, e.g. http://127.0.0.1:4318/v1/traces
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a token: never printed
    service_name: str = "spiral-orchestrator"
    timeout_s: float = 10.0
    retry_initial_s: float = 30.0  # a failed export is retried after this, doubling up to retry_max_s
    retry_max_s: float = 900.0

    def backoff(self, attempts: int) -> float:
        return float(min(self.retry_max_s, self.retry_initial_s * 2 ** max(0, attempts - 1)))


_Argv = Annotated[
    tuple[Annotated[str, Meta(min_length=1)], ...],
    Meta(min_length=1, description="must be a non-empty list of strings (an argv)"),
]


PrCommand = Annotated[list[Annotated[str, Meta(min_length=1)]], Meta(min_length=1)]


class StepKeys(Strict, kw_only=True):
    """The clone-step keys a ticket, an agent profile and a `repos:` block of config.yaml share (what
    `steps_of` makes a CloneSteps of). A `repos:` block is these keys alone."""

    copy: Any = None  # checked by orchestrator.infra.step_forms
    setup: Any = None
    setup_timeout_seconds: PositiveFloat | None = None
    deliver: Annotated[str, one_of(DELIVER_MODES)] | None = None
    pr_command: PrCommand | None = None


class _Agent(StepKeys):
    command: _Argv
    format: Annotated[str, one_of(FORMATS)] = "generic"
    prompt: Annotated[Literal["argument", "stdin"], Meta(description="must be 'argument' or 'stdin'")] = "argument"
    version_command: Annotated[tuple[str, ...], Meta(description="must be a list of strings")] = ()
    model: Annotated[str, Meta(description="must be a model name")] | None = None
    env: Annotated[dict[str, str], Meta(description="must map variable names to text")] = {}
    guidance: Annotated[str, one_of(MODES)] | None = None
    escalation: Any = None  # checked by orchestrator.guidance.ladder, which owns its keys
    max_usd: Annotated[float, Meta(gt=0, description="must be a positive number of dollars")] | None = None
    max_tokens: Annotated[int, Meta(gt=0, description="must be a positive whole number of tokens")] | None = None


class _Price(Strict):
    """USD per million tokens."""

    input: NonNegativeFloat
    output: NonNegativeFloat
    cache_read: NonNegativeFloat | None = None  # not given: the input price (as genai-prices does)
    cache_write: NonNegativeFloat | None = None


class _Executor(Strict):
    kind: Annotated[Literal["local", "ray"], Meta(description="must be 'local' or 'ray'")] = "local"
    address: Annotated[str, Meta(min_length=1, description="must be the cluster's address (host:port)")] | None = None
    resources: dict[str, PositiveFloat] | None = None

    def __post_init__(self) -> None:
        if self.kind == "ray" and self.address is None:
            raise Invalid("address", "is needed for kind: ray (the cluster's address, e.g. 127.0.0.1:6379)")
        if self.kind == "local" and (self.address is not None or self.resources):
            raise Invalid("kind", "local takes no address or resources (did you mean kind: ray?)")


class _Otlp(Strict):
    endpoint: Annotated[str, Meta(description="must be a URL")]
    headers: FreeMapping = {}  # checked below: its values may be secrets, so no error shows them
    service_name: Annotated[str, Meta(min_length=1, description="must be a name")] = "spiral-orchestrator"
    timeout_seconds: Annotated[float, Meta(gt=0, le=300, description="must be a number of seconds up to 300")] = 10.0
    retry_initial_seconds: PositiveFloat = 30.0
    retry_max_seconds: PositiveFloat = 900.0

    def __post_init__(self) -> None:
        if not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", self.endpoint):
            raise Invalid("endpoint", "must be an http:// or https:// URL (e.g. http://127.0.0.1:4318/v1/traces)")
        for name, value in self.headers.items():
            if not isinstance(name, str) or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise Invalid(("headers", name), "must be an HTTP header name")
            if not isinstance(value, str) or "\n" in value or "\r" in value:
                raise Invalid(("headers", name), "must be text on one line (its value is not shown)")


_PRICE_ROW = "needs input and output (and optionally cache_read, cache_write): USD per million tokens"


class _File(Strict):
    tickets_dir: Annotated[str, Meta(description="must be a path")] | None = None
    default_agent: Annotated[str, Meta(description="must be an agent name")] | None = None
    heartbeat_seconds: PositiveFloat = DEFAULT_HEARTBEAT_S
    autostart_watcher: Annotated[bool, Meta(description="must be true or false")] | None = None
    watcher_tick_seconds: PositiveFloat = DEFAULT_WATCHER_TICK_S
    watcher_idle_seconds: PositiveFloat = DEFAULT_WATCHER_IDLE_S
    agents: Annotated[dict[str, _Agent], Meta(description="must be a mapping of profile name to profile")] | None = None
    notify: FreeMapping | None = None  # checked by orchestrator.notify, which owns its keys
    prices: dict[str, Annotated[_Price, Meta(description=_PRICE_ROW)]] | None = None
    max_parallel: Annotated[int, Meta(ge=1, description="must be a whole number of runs, at least 1")] | None = None
    max_parallel_per_repo: (
        Annotated[int, Meta(ge=1, description="must be a whole number of runs, at least 1")] | None
    ) = None
    stagger_seconds: NonNegativeFloat = 0.0
    daily_max_usd: Annotated[float, Meta(gt=0, description="must be a positive number of dollars")] | None = None
    guidance_deliver_minutes: PositiveFloat = DEFAULT_DELIVER_MIN
    guidance_answer_minutes: PositiveFloat = DEFAULT_ANSWER_MIN
    gc_keep_days: NonNegativeFloat = DEFAULT_GC_KEEP_DAYS
    gc_keep_days_flagged: NonNegativeFloat = DEFAULT_GC_KEEP_DAYS_FLAGGED
    otlp: Annotated[_Otlp, Meta(description="must be a mapping with an endpoint")] | None = None
    executor: Annotated[_Executor, Meta(description="must be a mapping with a kind (local or ray)")] | None = None
    deliver: Annotated[str, one_of(DELIVER_MODES)] = "branch"
    pr_command: PrCommand | None = None
    repos: Annotated[dict[str, StepKeys], Meta(description="must map repositories to their steps")] | None = None
    notify_on: Any = None  # checked by orchestrator.notify.channels, which owns the event names
    serve: (
        Annotated[ServeBlock, Meta(description="must be a mapping (public_url, actions, action_ttl_hours)")] | None
    ) = None

    def __post_init__(self) -> None:
        known = set(BUILTIN) | set(self.agents or ())
        if self.default_agent is not None and self.default_agent not in known:
            raise Invalid(
                "default_agent", f"{self.default_agent!r} is not a known agent (known: {', '.join(sorted(known))})"
            )


def load(path: Path | None = None) -> UserConfig:
    path = path or config_path()
    cfg = UserConfig(path=path, autostart_watcher=os.environ.get("ORCHESTRATOR_AUTOSTART_WATCHER", "1") != "0")
    if not path.exists():
        return cfg
    data, cfg.lines = yamlfile.load_file(path)
    if data is None:
        return cfg
    complaints = yamlfile.Complaints(str(path), cfg.lines)
    doc = convert(data, _File, complaints, "config.yaml")
    if doc.tickets_dir is not None:
        cfg.tickets_dir = Path(doc.tickets_dir).expanduser()
    cfg.heartbeat_s = doc.heartbeat_seconds
    if doc.autostart_watcher is not None:
        cfg.autostart_watcher = doc.autostart_watcher
    cfg.watcher_tick_s, cfg.watcher_idle_s = doc.watcher_tick_seconds, doc.watcher_idle_seconds
    for name, agent in (doc.agents or {}).items():
        try:
            rungs = tuple(ladder.parse(agent.escalation))
            path_for(list(agent.command), agent.guidance)
        except ladder.LadderError as exc:
            raise complaints(("agents", name, *exc.path), exc.message) from None
        except ValueError as exc:
            raise complaints(("agents", name, "guidance"), str(exc)) from None
        cfg.profiles[name] = Profile(
            name,
            agent.command,
            agent.format,
            agent.prompt,
            agent.version_command,
            agent.model,
            dict(agent.env),
            guidance=agent.guidance,
            escalation=rungs,
            max_usd=agent.max_usd,
            max_tokens=agent.max_tokens,
            steps=steps_of(agent, complaints, ("agents", name), path.parent),
        )
    cfg.guidance = Policy(doc.guidance_deliver_minutes, doc.guidance_answer_minutes)
    cfg.gc_keep_days, cfg.gc_keep_days_flagged = doc.gc_keep_days, doc.gc_keep_days_flagged
    cfg.max_parallel, cfg.max_parallel_per_repo = doc.max_parallel, doc.max_parallel_per_repo
    cfg.stagger_s, cfg.daily_max_usd = doc.stagger_seconds, doc.daily_max_usd
    cfg.default_agent = doc.default_agent or cfg.default_agent
    cfg.notify = doc.notify or {}
    cfg.deliver, cfg.pr_command = doc.deliver, list(doc.pr_command or ())
    for repo, block in (doc.repos or {}).items():
        cfg.repos[repo_key(repo, path.parent)] = steps_of(block, complaints, ("repos", repo), path.parent)
    if doc.notify_on is not None:
        cfg.notify_on = doc.notify_on
    if doc.serve is not None:
        cfg.serve = doc.serve.config()
    if doc.executor is not None and doc.executor.kind != "local":
        e = doc.executor
        cfg.executor = ExecutorConfig(e.kind, e.address, dict(e.resources or {}))
    if doc.otlp is not None:
        o = doc.otlp
        headers = {str(k): str(v) for k, v in o.headers.items()}
        cfg.otlp = OtlpConfig(
            o.endpoint, headers, o.service_name, o.timeout_seconds, o.retry_initial_seconds, o.retry_max_seconds
        )
    for model, p in (doc.prices or {}).items():
        cache_read = p.input if p.cache_read is None else p.cache_read
        cache_write = p.input if p.cache_write is None else p.cache_write
        cfg.prices[model] = (p.input, p.output, cache_read, cache_write)
    return cfg


def steps_of(block: StepKeys, fail: yamlfile.Complaints, where: tuple[str, ...], base: Path) -> CloneSteps:
    """The clone steps of a ticket's front matter, a profile or a `repos:` block (`where`: its keys' path,
    for errors; `base`: the folder a relative `copy:` source is taken from). None: a key not given."""
    setup = step_forms.command_argv(block.setup, fail, (*where, "setup"), "setup")
    copy = step_forms.copy_items(block.copy, fail, (*where, "copy"), "copy", base)
    return CloneSteps(
        copy=tuple(copy) if copy else None,
        setup=tuple(setup) if setup else None,
        setup_timeout_s=block.setup_timeout_seconds,
        deliver=block.deliver,
        pr_command=tuple(block.pr_command) if block.pr_command else None,
    )


def repo_key(repo: str, base: Path | None = None) -> str:
    """One spelling of a repository, for matching a ticket's `repo:` with a `repos:` block: a local
    path made absolute (from `base` when relative), a URL without its trailing `/` or `.git`."""
    repo = repo.strip()
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", repo) or re.match(r"^[^/]*:", repo):
        return repo.rstrip("/").removesuffix(".git")
    path = Path(os.path.expanduser(repo))
    return os.path.realpath(path if path.is_absolute() or base is None else base / path)
