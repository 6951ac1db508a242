"""The run record (`state.json`) as types, with its versions and migrations.

Nothing outside `orchestrator/record/` reads the JSON by key: every reader
gets a `RunRecord`. The file keeps one shape per `version`; an older file is
migrated when read (and written back in the current shape on the next
change), a newer one is refused rather than silently truncated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.infra.proc import ProcRef
from orchestrator.infra.typed_yaml import PositiveFloat
from orchestrator.record.migrations import MIGRATIONS

VERSION = 5
QUEUED = "queued"  # waiting for a slot under the concurrency cap (orchestrator/runs/fleet.py)
ACTIVE = ("launching", "running")
ENDED = ("succeeded", "failed", "stalled", "killed", "lost", "over_budget", "no_change", "gave_up")


class RecordError(ValueError):
    """A state.json that cannot be read as a run record (the message says why)."""


class StopRequest(msgspec.Struct, kw_only=True):
    """A stop somebody asked for (kill, liveness): its ending is recorded as `end_as`."""

    end_as: str = msgspec.field(name="as")
    reason: str = ""
    at: str | None = None


class Claim(msgspec.Struct):
    """A sender's lease on a notice, so that racing senders send it once."""

    pid: int
    create_time: float
    expires: float = 0.0

    @property
    def holder(self) -> ProcRef:
        return ProcRef(self.pid, self.create_time)


class Notice(msgspec.Struct, kw_only=True):
    """One notification of a run (the spiral page, an ending notice) and its delivery."""

    title: str | None = None
    body: str | None = None
    attempts: int = 0
    claim: Claim | None = None
    channels_done: list[str] = []
    delivered: bool = False
    delivered_at: str | None = None
    last_error: str | None = None
    last_attempt_at: str | None = None
    next_attempt_at: float | None = None
    # channel -> its attempts that got no answer by their deadline: each may have reached the receiver, so a
    # channel is given up after a few (notify/delivery.py)
    unanswered: dict[str, int] = {}
    gave_up: bool = False  # no more attempts (last_error says why)


class Episode(msgspec.Struct, kw_only=True):
    """A spiral episode after the first: it began when guidance reached the agent (windows restarted),
    and it pages (notice `spiral-<n>`) only when the detector trips again on evidence from after that."""

    n: int
    since_min: float
    tripped_at_min: float | None = None
    signals: list[str] = []
    evidence: list[str] = []
    recent: list[str] = []


class SpiralState(msgspec.Struct, kw_only=True):
    """The detector's latest verdict on a run, and the page it tripped (if any)."""

    region: str = "healthy"
    signals: list[str] = []
    suspicion: float = 0.0
    evidence: list[str] = []
    signals_seen: list[str] = []
    skipped_lines: int = 0
    tool_calls: int = 0
    tripped_in_soft_band: bool = False
    tripped_at_min: float | None = None
    page_signals: list[str] = []
    page_evidence: list[str] = []
    page_recent: list[str] = []
    notified: bool = False
    # episodes: the first is the run's start; each guidance received after a trip opens the next
    episode: int = 1
    episodes: list[Episode] = []
    windows_since_min: float | None = None  # the windows last restarted at (guidance received), run minutes
    tripped_since_min: float | None = None  # since when the verdict has been tripped without a break


class Guidance(msgspec.Struct, kw_only=True):
    """One message queued for the agent (`nudge`, or a rung of the escalation ladder) and its receipt."""

    id: str
    seq: int
    kind: str = "text"  # text | redirect | wrap-up | nudge
    by: str = "person"  # person | escalation
    text: str = ""  # as queued, redacted and cut
    via: str | None = None  # the delivery path: claude hook | codex hook | inbox file
    queued_at: str | None = None
    queued_at_min: float | None = None
    received_at: str | None = None
    received_epoch: float | None = None  # received_at as epoch seconds
    restart_at: float | None = None  # the same moment on the agent's clock: where the detector's windows restarted
    received_at_min: float | None = None  # run minutes on the agent's clock (provider waits left out)
    received_via: str | None = None  # e.g. "claude PostToolUseFailure hook after Bash"
    signals_at_receipt: list[str] = []  # what was firing when it arrived
    first_calls_after: list[str] = []
    undelivered: str | None = None  # why it never reached the agent (withdrawn from the inbox)
    # the recorded answer: recovered (the signals firing at receipt stopped within the answer window),
    # ignored (they still fire, or it tripped again), None while the window is open
    answer: str | None = None
    answer_at_min: float | None = None


class Rung(msgspec.Struct, kw_only=True):
    """One rung of a run's escalation ladder, as configured (ticket or profile `escalation:`)."""

    action: str  # nudge | redirect | wrap-up | stop
    after_min: float
    text: str | None = None


class Escalation(msgspec.Struct, kw_only=True):
    """A rung the ladder climbed: what, why, when, on what evidence."""

    rung: int  # 1-based
    action: str
    at: str
    at_min: float
    why: str
    signals: list[str] = []
    evidence: list[str] = []
    guidance_id: str | None = None


class SpendTotals(msgspec.Struct, kw_only=True):
    """Tokens and dollars of a run; `cost_usd` None means unknown (unpriced), never free."""

    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_models: list[str] = []


class ProviderStatus(msgspec.Struct, kw_only=True):
    """The agent waiting on its model API right now (one episode of retries)."""

    episode: int
    text: str  # e.g. "retrying rate limited (429) (attempt 4/10)"
    status: int | None = None
    error: str | None = None
    attempt: int | None = None
    max_retries: int | None = None
    since: str | None = None


class AgentReport(msgspec.Struct, kw_only=True):
    """What the agent's own log said about its run (spiral/outcome.py)."""

    tool_calls: int = 0
    denied_calls: int = 0
    final_seen: bool = False
    final_error: bool = False
    api_error_status: int | None = None
    provider_episodes: int = 0


class AgentClaim(msgspec.Struct, kw_only=True):
    """The ending the agent's own exit and log supported, before the orchestrator's `verify:` check."""

    ending: str
    reason: str = ""


class VerifyResult(msgspec.Struct, kw_only=True):
    """The ticket's `verify:` check as the supervisor ran it in the clone (output in `verify.log`)."""

    argv: list[str] = []
    exit_code: int | None = None  # None: it never exited by itself (timed out, or could not start)
    passed: bool = False
    timed_out: bool = False
    seconds: float = 0.0
    tail: list[str] = []  # its last output lines, redacted
    error: str | None = None  # why it could not start


class Delivered(msgspec.Struct, kw_only=True):
    """The run's work handed back (orchestrator/runs/delivery.py): committed on its branch, pushed."""

    branch: str
    commit: str | None = None
    pushed_at: str | None = None  # None: the push failed (`error` says why; the work is in unsaved/)
    pr_url: str | None = None  # what `pr_command:` printed
    error: str | None = None  # why the push or the PR command failed, redacted


class TraceExport(msgspec.Struct, kw_only=True):
    """The run's trace sent over OTLP (orchestrator/telemetry): recorded once the endpoint accepted it."""

    exported_at: str | None = None
    attempts: int = 0
    claim: Claim | None = None  # the sender's lease while an attempt is in flight
    last_error: str | None = None
    next_attempt_at: float | None = None


class PageFeedback(msgspec.Struct, kw_only=True):
    """A person's verdict on one of the run's pages: was it a real spiral?"""

    verdict: str  # useful | false-alarm
    at: str
    episode: int = 1  # the page (episode) it judges
    signals: list[str] = []  # what that page named
    via: str = "cli"  # cli | page | notification


class ActionTaken(msgspec.Struct, kw_only=True):
    """A one-tap action taken from `serve --actions` (the run page, or a notification's button)."""

    action: str  # nudge | redirect | wrap-up | snooze | kill | false-alarm | useful
    at: str
    token_id: str
    remote: str | None = None  # the address it came from
    result: str = ""  # what it did, or why it was refused
    ok: bool = False


class Placement(msgspec.Struct, kw_only=True):
    """Where a run executes (orchestrator/runs/executors): the engine, and the machine once it is placed."""

    kind: str = "local"  # local | ray
    where: str | None = None  # the host (local) or the node (ray) that runs the supervisor
    address: str | None = None  # the engine's address (ray: the cluster's)
    resources: dict[str, float] = {}  # what the run asks the engine for (ray: custom resources)
    handle: str | None = None  # the engine's name for the run's work (ray: the actor's name)
    # the clone the agent works in, when it is not the run folder's own (ray: the node's temp folder):
    # the paths in the agent's log are under it, so the detector reads them against it
    clone: str | None = None


class Ceilings(msgspec.Struct, kw_only=True):
    """The spend step's part (runs/steps/spend.py): the run's spend ceilings, frozen at launch (None is
    none), and what the step saw against them."""

    max_usd: float | None = None
    max_tokens: int | None = None
    warned_at: float | None = None  # the share of a ceiling spent when the 70 % notice was due
    unpriced: bool = False  # a dollar ceiling on an unpriced model: held to its token ceiling only
    live: SpendTotals | None = None  # the spend of a live run as last written (the daily ceiling reads it)


class EscalationLadder(msgspec.Struct, kw_only=True):
    """The ladder step's part (runs/steps/ladder.py): the opt-in rungs frozen at launch (empty: off, the
    product never acts on its own), the rungs climbed, and until when `snooze` holds the ladder."""

    rungs: list[Rung] = []
    climbed: list[Escalation] = []
    snoozed_until: str | None = None


class RunRecord(msgspec.Struct, kw_only=True):
    """Everything the orchestrator knows about one run; the run's single source of truth."""

    version: int = VERSION
    run_id: str = ""
    # what was launched
    ticket_id: str | None = None
    ticket_path: str | None = None
    bucket: str | None = None
    agent: str | None = None
    format: str | None = None
    argv: list[str] = []
    prompt_mode: str = "argument"
    prompt: str | None = None
    env: dict[str, str] = {}
    # where the agent keeps its own records (CLAUDE_CONFIG_DIR, CODEX_HOME), resolved at launch
    agent_homes: dict[str, str] = {}
    model: str | None = None
    version_command: list[str] = []
    agent_version: str | None = None
    repo: str | None = None
    base: str | None = None
    branch: str | None = None
    start_commit: str | None = None  # the clone's commit when the agent started: what `diff` compares with
    outputs: list[str] = []
    # the ticket's `scope:` globs (the drift signal); absent in older records, which means none
    scope: list[str] = []
    overrides: dict[str, Any] = {}
    time_scale: PositiveFloat = 1.0
    snapshot_every_s: PositiveFloat = 30.0
    # the detector settings the run is judged by, frozen at launch
    settings: dict[str, Any] | None = None
    ceilings: Ceilings = msgspec.field(default_factory=Ceilings)  # spend ceilings (runs/budget.py)
    held: str | None = None  # a queued run the daily ceiling holds back: why
    held_since: str | None = None
    # where it stands
    state: str = "launching"
    queued_at: str | None = None  # when it entered the queue (runs launched before the queue: None)
    admitted_by: str | None = None  # who moved it out of the queue: launch (its own) | queue (a later pass)
    requeued: int = 0  # times it went back to the queue (its admitter died before the agent started)
    admission: int = 0  # which start this is: only the admitter and supervisor of this one may act on it
    verify_pid: ProcRef | None = None  # the verify: check while it runs (stopped with the run)
    reason: str | None = None
    created_at: str | None = None
    started_at: str | None = None
    spawned_at: str | None = None
    ended_at: str | None = None
    updated_at: str | None = None
    exit_code: int | None = None
    launcher: ProcRef | None = None
    supervisor: ProcRef | None = None
    agent_pid: ProcRef | None = None
    stop_requested: StopRequest | None = None
    hints: list[str] = []
    spiral: SpiralState = msgspec.field(default_factory=SpiralState)
    notices: dict[str, Notice] = {}
    spend: SpendTotals | None = None
    # the agent's model API, and what its own log said (both absent for logs that do not tell)
    provider: ProviderStatus | None = None
    agent_report: AgentReport | None = None
    # guidance (orchestrator/guidance): how this run's agent takes it (None: it cannot), what was sent
    guidance_via: str | None = None
    guidance: list[Guidance] = []
    ladder: EscalationLadder = msgspec.field(default_factory=EscalationLadder)
    # when `gc` removed the run's clone (orchestrator/runs/gc.py); None: the clone is still there
    clone_removed_at: str | None = None
    # the ticket's `verify:` check frozen at launch (empty: none, the agent's exit decides), what the
    # agent claimed before it ran, and its result (None: not run); absent in older records
    verify: list[str] = []
    verify_timeout_s: PositiveFloat = 600.0
    setup: list[str] = []  # the ticket's `setup:`, run in the clone before the agent (runs/checks.py)
    copy: list[list[str]] = []  # `copy:` as [source, path in the clone] pairs, copied in before setup
    setup_timeout_s: PositiveFloat = 600.0
    agent_claim: AgentClaim | None = None
    verify_result: VerifyResult | None = None
    # `deliver:` frozen at launch (branch | none; None: a record from before delivery), and what it did
    deliver: str | None = None
    pr_command: list[str] = []
    delivered: Delivered | None = None
    executor: Placement | None = None  # where it executes (None: a local run recorded before executors)
    otlp: TraceExport | None = None  # its OpenTelemetry export (None: never tried; absent in older records)
    # a person's verdicts on its pages (`feedback`) and the one-tap actions taken (`serve --actions`);
    # absent in older records
    feedback: list[PageFeedback] = []
    actions: list[ActionTaken] = []

    def agent_clone(self, local: Path) -> str:
        """The folder the agent's log names its files under: the clone on the node that runs it, or
        `local` (the run folder's clone) for a run on this machine, as the OS names it: an agent
        logs its working folder with every symlink resolved (getcwd), so a state folder reached
        through one (macOS's /tmp and /var, a linked home) is read under its real path."""
        placed = self.executor.clone if self.executor is not None else None
        return placed or os.path.realpath(local)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def verified(self) -> bool | None:
        """Whether the `verify:` check passed; None when none ran (the ticket has none, or the agent failed)."""
        return None if self.verify_result is None else self.verify_result.passed

    @property
    def queued(self) -> bool:
        return self.state == QUEUED

    def notice(self, event: str) -> Notice:
        """The record of one notice, created empty on first use."""
        return self.notices.setdefault(event, Notice())


def from_builtins(raw: object, run_id: str) -> RunRecord:
    """A record from parsed JSON, migrated to the current version; RecordError when it cannot be."""
    if not isinstance(raw, dict):
        raise RecordError("state file is not a JSON object")
    version = raw.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordError(f"state file has an unknown version {version!r}")
    if version > VERSION:
        raise RecordError(f"state file is version {version}, newer than this orchestrator reads ({VERSION})")
    while version < VERSION:
        raw = MIGRATIONS[version](dict(raw))
        version += 1
    raw["version"] = VERSION
    try:
        record = msgspec.convert(raw, RunRecord)
    except msgspec.ValidationError as exc:
        raise RecordError(f"state file is not a valid run record: {exc}") from None
    if not record.run_id:
        record.run_id = run_id
    return record


def to_builtins(record: RunRecord) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(record)
    return out
