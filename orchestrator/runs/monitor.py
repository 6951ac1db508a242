"""One pass over the runs: enforce liveness, evaluate the detector, record both.

Shared by `status`, `watch` and `demo`. Every run is refreshed under its
lock, from its cached detector state, so concurrent callers agree and a pass
costs what the logs gained, not their length.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.corpus.recorded import read_tracked
from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.notify import delivery
from orchestrator.notify.channels import Notifier
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.runs import evaluator, liveness
from spiral.detector import Detector
from spiral.settings import Settings, SettingsError
from spiral.timestamps import parse_ts
from spiral.verdict import json_number


@dataclass
class RunView:
    run_dir: Path
    state: dict[str, Any]
    elapsed_min: float = 0.0
    expected_min: float = 0.0
    last_activity_s: float | None = None
    spend: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why this run could not be looked at
    events: list[str] = field(default_factory=list)  # what this pass did: "stalled", "tripped", ...

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def to_dict(self) -> dict[str, Any]:
        s = self.state
        spiral = s.get("spiral") or {}
        return {
            "id": self.run_id,
            "ticket": s.get("ticket_id"),
            "bucket": s.get("bucket"),
            "agent": s.get("agent"),
            "state": s.get("state"),
            "reason": s.get("reason"),
            "elapsed_min": round(self.elapsed_min, 2),
            "expected_min": self.expected_min,
            "region": spiral.get("region", "healthy"),
            "signals": spiral.get("signals", []),
            "suspicion": json_number(spiral.get("suspicion", 0)),
            "evidence": spiral.get("evidence", []),
            "tripped_at_min": spiral.get("tripped_at_min"),
            "notified": bool(spiral.get("notified")),
            "page_error": ((s.get("notices") or {}).get("spiral") or {}).get("last_error"),
            "hints": s.get("hints", []),
            "last_activity_s": None if self.last_activity_s is None else round(self.last_activity_s, 1),
            "tokens": (self.spend or s.get("spend") or {}).get("tokens"),
            "cost_usd": (self.spend or s.get("spend") or {}).get("cost_usd"),
            "started_at": s.get("started_at"),
            "ended_at": s.get("ended_at"),
            "error": self.error,
        }


def list_run_dirs() -> list[Path]:
    root = runs_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "state.json").is_file())


def find_run(ref: str) -> Path:
    root = runs_dir()
    exact = root / ref
    if ref and "/" not in ref and (exact / "state.json").is_file():
        return exact
    matches = [p for p in list_run_dirs() if p.name.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UserError(f"run {ref!r} is ambiguous: {', '.join(p.name for p in matches[:5])}")
    raise UserError(f"no run {ref!r} in {root}")


def refresh(
    run_dir: Path,
    buckets: BucketsFile,
    cfg: UserConfig,
    real_now: float | None = None,
    notifier: Notifier | None = None,
) -> RunView:
    """Evaluate one run, enforce liveness, and send what is due (when given a notifier)."""
    real_now = time.time() if real_now is None else real_now
    with state_file.locked(run_dir):
        state = state_file.read(run_dir)
        view = _view(run_dir, state, buckets, real_now)
        if state.get("state") in state_file.ACTIVE:
            cached = _evaluate(run_dir, state, buckets, real_now, view)
            view.spend = _spend(cached, cfg)
            decision = _liveness(state, view, buckets, cfg, real_now)
        else:
            decision = None
            if "spend" not in state and state.get("format"):
                # the run ended: account its whole log once, and keep the total in its record
                cached = _catch_up(run_dir, state, buckets)
                state["spend"] = _spend(cached, cfg)
                state.setdefault("spiral", {})["tool_calls"] = cached.detector.calls
                view.events.append("spend")
        if view.events:
            state_file.write(run_dir, state)
    if decision is not None:
        _stop(run_dir, decision, view)
        view.state = state_file.read(run_dir)
    if notifier is not None and delivery.due(view.state, notifier):
        for event, what in delivery.deliver_due(run_dir, notifier):
            view.events.append(f"{event} notice {what}")
        view.state = state_file.read(run_dir)
    return view


def _view(run_dir: Path, state: dict[str, Any], buckets: BucketsFile, real_now: float) -> RunView:
    clock = RunClock.of(state)
    bucket = _settings(state, buckets).buckets.get(str(state.get("bucket")))
    ended = parse_ts(state.get("ended_at"))
    until = ended if ended is not None and state.get("state") in state_file.ENDED else real_now
    view = RunView(run_dir, state, expected_min=bucket.expected_min if bucket else 0.0)
    view.elapsed_min = max(0.0, clock.seconds(until - clock.started_at) / 60.0)
    try:
        view.last_activity_s = clock.seconds(real_now - (run_dir / "events.jsonl").stat().st_mtime)
    except FileNotFoundError:
        view.last_activity_s = None
    return view


def _settings(state: dict[str, Any], buckets: BucketsFile) -> Settings:
    """The run's settings as frozen at launch (older runs: buckets.yaml plus the ticket's overrides)."""
    frozen = state.get("settings")
    if isinstance(frozen, dict):
        try:
            return Settings.from_mapping(frozen)
        except SettingsError as exc:
            raise UserError(f"run {state.get('run_id')}: its recorded settings are invalid: {exc.message}") from None
    overrides = state.get("overrides") or {}
    if not overrides:
        return buckets.settings
    return buckets.with_overrides(overrides, f"{state.get('ticket_path')} (run {state.get('run_id')})", {}, ())


def _catch_up(run_dir: Path, state: dict[str, Any], buckets: BucketsFile) -> evaluator.Cached:
    """The run's cached detector, fed what its files gained since the last call."""
    cache_path = run_dir / "detector.pickle"
    cached = evaluator.load(cache_path)
    if cached is None:
        det = Detector(
            _settings(state, buckets),
            bucket=state["bucket"],
            started_at=RunClock.of(state).started_at,
            tracked=read_tracked(run_dir / "tracked.txt"),
            outputs=state.get("outputs") or [],
            workdir=str(run_dir / "clone"),
        )
        cached = evaluator.fresh(det, state["format"], str(run_dir / "clone"), state.get("model"))
    before = (cached.events_offset, cached.workspace_offset)
    evaluator.catch_up(cached, run_dir)
    if before != (cached.events_offset, cached.workspace_offset) or not cache_path.exists():
        evaluator.save(cache_path, cached)
    return cached


def _spend(cached: evaluator.Cached, cfg: UserConfig) -> dict[str, Any]:
    if cached.spend is None:
        return {}
    sp = cached.spend.spend
    cost, unpriced = sp.cost(cfg.prices)
    return {
        "tokens": sp.tokens,
        "input_tokens": sp.input_tokens,
        "output_tokens": sp.output_tokens,
        "cache_read_tokens": sp.cache_read_tokens,
        "cache_write_tokens": sp.cache_write_tokens,
        "cost_usd": cost,
        "unpriced_models": unpriced,
    }


def _evaluate(
    run_dir: Path, state: dict[str, Any], buckets: BucketsFile, real_now: float, view: RunView
) -> evaluator.Cached:
    cached = _catch_up(run_dir, state, buckets)
    verdict = cached.detector.evaluate(RunClock.of(state).at(real_now))
    spiral = dict(state.get("spiral") or {})
    new = {
        "region": verdict.region,
        "signals": list(verdict.signals),
        "suspicion": verdict.suspicion,
        "evidence": list(verdict.evidence),
    }
    counts = {"skipped_lines": cached.skipped_lines + cached.adapter.skipped, "tool_calls": cached.detector.calls}
    seen = sorted(set(spiral.get("signals_seen", [])) | set(verdict.signals))
    if verdict.should_page and not spiral.get("tripped_in_soft_band"):
        new.update(
            tripped_in_soft_band=True,
            tripped_at_min=round(verdict.elapsed_min, 2),
            page_evidence=list(verdict.evidence),
            page_signals=list(verdict.signals),
            page_recent=list(cached.recent),
        )
        view.events.append("tripped")
    # counts move with every call; the record is rewritten only when the verdict changes
    if any(spiral.get(k) != v for k, v in new.items()) or seen != spiral.get("signals_seen"):
        spiral.update(new, signals_seen=seen, **counts)
        state["spiral"] = spiral
        view.events.append("evaluated")
    return cached


def _liveness(
    state: dict[str, Any], view: RunView, buckets: BucketsFile, cfg: UserConfig, real_now: float
) -> liveness.Decision | None:
    sup = proc.ProcRef.from_dict(state.get("supervisor"))
    agent = proc.ProcRef.from_dict(state.get("agent_pid"))
    spawned = parse_ts(state.get("spawned_at"))
    launcher = proc.ProcRef.from_dict(state.get("launcher"))
    bucket = _settings(state, buckets).buckets[state["bucket"]]
    facts = liveness.Facts(
        state=state["state"],
        supervisor_alive=bool(sup and sup.alive()),
        agent_alive=bool(agent and agent.alive()),
        launcher_alive=bool(launcher and launcher.alive()),
        since_spawn_real_s=None if spawned is None else real_now - spawned,
        silent_s=view.last_activity_s if view.last_activity_s is not None else 0.0,
        elapsed_min=view.elapsed_min,
        stuck_min=bucket.stuck_min,
        heartbeat_s=cfg.heartbeat_s,
        bucket=state["bucket"],
    )
    return liveness.judge(facts)


def _stop(run_dir: Path, decision: liveness.Decision, view: RunView) -> None:
    """Stop a run the liveness path gave up on; the signals seen become hints.

    A stop already requested (by `kill`, or an earlier pass) keeps its kind and
    reason; it is carried through even when its requester or the supervisor died.
    """

    def request(s: dict[str, Any]) -> bool:
        if s.get("state") not in state_file.ACTIVE:
            return False
        if not s.get("stop_requested"):
            s["stop_requested"] = {"as": decision.end_as, "reason": decision.reason, "at": state_file.utcnow()}
        s["hints"] = (s.get("spiral") or {}).get("signals_seen", [])
        return True

    state = state_file.update(run_dir, request)
    if state.get("state") not in state_file.ACTIVE:
        return
    req = state["stop_requested"]
    how, reason = str(req.get("as") or decision.end_as), str(req.get("reason") or decision.reason)
    if how != decision.end_as and decision.end_as == "lost":
        reason += "; its supervisor vanished before recording it"
    agent = proc.ProcRef.from_dict(state.get("agent_pid"))
    if agent is not None:
        proc.kill_tree(agent)
    sup = proc.ProcRef.from_dict(state.get("supervisor"))
    if sup is not None:
        proc.wait_for(lambda: not sup.alive(), timeout=10)
    # the supervisor records a requested stop itself; when it is gone, record it here
    final = state_file.update(run_dir, lambda s: state_file.end(s, how, reason))
    if final.get("state") == how:
        view.events.append(how)
        clock = RunClock.of(final)
        ended = parse_ts(final.get("ended_at")) or time.time()
        case_file.write_run_case(run_dir, final, clock.at(ended))


def broken(run_dir: Path, error: str) -> RunView:
    """A row for a run that could not be refreshed, so it is shown, not hidden."""
    try:
        state = state_file.read(run_dir)
    except UserError:
        state = {"run_id": run_dir.name, "state": "unreadable"}
    return RunView(run_dir, state, error=error)


def refresh_all(buckets: BucketsFile, cfg: UserConfig, notifier: Notifier | None = None) -> list[RunView]:
    return [refresh(d, buckets, cfg, notifier=notifier) for d in list_run_dirs()]
