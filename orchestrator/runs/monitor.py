"""One pass over the runs: enforce liveness, evaluate the detector, record both.

Shared by `status`, `watch` and `demo`. Every run is refreshed under its
lock, from its cached detector state, so concurrent callers agree and a pass
costs what the logs gained, not their length.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.ledger import prices
from orchestrator.notify.channels import Notifier
from orchestrator.notify.pages import redact_cut
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import STATE_JSON, RunDir
from orchestrator.record.model import ProviderStatus, RunRecord, SpendTotals, SpiralState, StopRequest
from orchestrator.record.run_files import read_tracked
from orchestrator.runs import budget, evaluator, fleet, liveness
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.executors import base as executors
from orchestrator.runs.sending import deliver as deliver  # (fanout sends its workers' views with it)
from orchestrator.runs.steering import escalate, track
from orchestrator.runs.view import RunView
from spiral.detector import Detector
from spiral.outcome import Outcome
from spiral.settings import Settings, SettingsError
from spiral.timestamps import format_ts, parse_ts

# a stop request this old is carried out by the next pass: `kill` itself takes seconds (SIGINT, SIGTERM,
# SIGKILL, each with a grace), so by then whoever asked was interrupted or died
STOP_PENDING_S = 60.0


def list_run_dirs() -> list[Path]:
    root = runs_dir()
    if not root.is_dir():
        for where in (root, root.parent):  # no runs yet, unless something that is not a folder is in the way
            if where.exists() and not where.is_dir():
                raise UserError(f"{where}: cannot use it as the state folder: not a folder")
        return []
    names = sorted(e.name for e in os.scandir(root) if os.path.isfile(os.path.join(e.path, STATE_JSON)))
    return [root / name for name in names]  # (sorting names, not Paths: a tenth of the time at 3,000 runs)


def find_run(ref: str) -> Path:
    root = runs_dir()
    if ref and "/" not in ref and RunDir(root / ref).is_run():
        return root / ref
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
    *,
    send: bool = True,
) -> RunView:
    """Evaluate one run, enforce liveness, and send what is due (when given a notifier). `send=False`
    leaves the sending to the caller (`deliver`: a forked worker's views are sent by its parent)."""
    real_now = time.time() if real_now is None else real_now
    rd = RunDir.of(run_dir)
    with state_file.locked(rd):
        record = state_file.read(rd)
        settings = _settings(record, buckets)
        view = _view(rd, record, settings, real_now)
        decision = None
        if record.queued:
            view.elapsed_min = 0.0  # its clock starts when its agent does
        elif record.active:
            decision = _liveness(record, view, settings, cfg, real_now)
            # found dead: nothing is tripped, paged or climbed for a run nobody runs any more
            alive = decision is None or decision.end_as != "lost"
            cached = _evaluate(rd, record, settings, real_now, view, cfg, acts=alive)
            view.spend = _spend(rd, record, cached, cfg)
            spent, over = budget.check(record, view.spend)
            view.events += spent
            written_ago = real_now - (parse_ts(record.updated_at) or 0.0)
            if budget.live_changed(record.spend_live, view.spend, written_ago):
                record.spend_live = view.spend  # the daily ceiling and the notices read it
                view.events.append(of(Kind.SPEND))
            decision = decision or over or view.ladder_stop or _pending_stop(record, real_now)
        elif record.spend is None and record.format:
            # the run ended: account its whole log once, and keep the total in its record
            cached = _catch_up(rd, record, settings, real_now, view.events)  # receipts first, then the feed
            evaluator.flush(cached)
            ended = parse_ts(record.ended_at) or real_now
            final = cached.detector.evaluate(cached.agent_time(RunClock.of(record).at(ended)))
            view.events += track.run_ended(rd.guidance, record, cached, real_now, final)
            if any(e.kind is Kind.GUIDANCE_RECEIVED for e in view.events):  # the case file learns its restarts
                case_file.write_run_case(rd, record, RunClock.of(record).at(ended))
            record.spend = _spend(rd, record, cached, cfg)
            record.spiral.tool_calls = cached.detector.calls
            view.events.append(of(Kind.SPEND))
            KEPT.drop(rd.detector_cache)  # an ended run is not looked at again
        elif track.outstanding(record):  # ended with messages still queued: withdrawn and reported
            view.events += track.run_ended(rd.guidance, record, None, real_now)
        if view.events:
            state_file.write(rd, record)
        if not KEPT.keep:
            KEPT.discard(rd.detector_cache)  # one pass only: what is unwritten is a small catch-up, redone
    if decision is not None and decision.end_as == "queued":
        view.record = fleet.requeue(rd, decision.reason, record.admission)
        view.events.append(of(Kind.QUEUED_AGAIN))
    elif decision is not None:
        view.record = _stop(rd, decision, view)
    return deliver(view, cfg, notifier) if send else view


def view_as_recorded(rd: RunDir, buckets: BucketsFile) -> RunView:
    """The run's row from its record alone, nothing evaluated (runs/warmup.py: a cache being rebuilt)."""
    return _view(rd, record := state_file.read(rd), _settings(record, buckets), time.time())


def refresh_now(run_dir: Path) -> RunView:
    """One run refreshed as a watcher pass would (the user's settings and targets): a command about to act
    on a run (`logs -f` on a quiet log, `nudge`) learns that its supervisor died while no watcher ran."""
    from orchestrator.config import load
    from orchestrator.notify.channels import from_config

    cfg = load()
    return refresh(run_dir, BucketsFile(), cfg, notifier=from_config(cfg))


def _view(rd: RunDir, record: RunRecord, settings: Settings, real_now: float) -> RunView:
    clock = RunClock.of(record)
    bucket = settings.buckets.get(str(record.bucket))
    ended = parse_ts(record.ended_at)
    until = ended if ended is not None and record.ended else real_now
    view = RunView(rd.path, record, expected_min=bucket.expected_min if bucket else 0.0)
    view.elapsed_min = max(0.0, clock.seconds(until - clock.started_at) / 60.0)
    try:
        silent = real_now - rd.events.stat().st_mtime
        view.last_activity_s = clock.seconds(silent)  # the run's clock: liveness and the demo's fast heartbeat
        view.last_activity_real_s = silent  # wall-clock seconds: what `status` shows
    except FileNotFoundError:
        view.last_activity_s = None
    if ended is not None and record.ended:  # an ended run: real seconds since it ended
        view.last_activity_real_s = max(0.0, real_now - ended)
    return view


# run id -> its frozen settings, validated once per process (a run's settings never change)
_FROZEN: dict[str, Settings] = {}


def _settings(record: RunRecord, buckets: BucketsFile) -> Settings:
    """The run's settings as frozen at launch (older runs: buckets.yaml plus the ticket's overrides)."""
    if record.settings is not None:
        known = _FROZEN.get(record.run_id)
        if known is None:
            try:
                known = _FROZEN[record.run_id] = Settings.from_mapping(record.settings)
            except SettingsError as exc:
                raise UserError(f"run {record.run_id}: its recorded settings are invalid: {exc.message}") from None
        return known
    if not record.overrides:
        return buckets.settings
    return buckets.with_overrides(record.overrides, f"{record.ticket_path} (run {record.run_id})", {}, ())


# each run's cached detector, kept in memory between the passes of this process (evaluator.Kept)
KEPT = evaluator.Kept()


def _catch_up(
    rd: RunDir, record: RunRecord, settings: Settings, real_now: float, events: list[Event] | None = None
) -> evaluator.Cached:
    """The run's cached detector, fed what its files gained since the last call.

    Guidance receipts are taken first (into `events` and the record, when given), so the detector's
    windows restart at a receipt before the calls after it are fed."""
    path = rd.detector_cache
    cached = KEPT.obtain(path)
    if cached is None:
        det = Detector(
            settings,
            bucket=str(record.bucket),
            started_at=RunClock.of(record).started_at,
            tracked=read_tracked(rd.tracked),
            outputs=list(record.outputs),
            workdir=str(rd.clone),
            scope=record.scope,  # the ticket's scope globs (the drift signal); none in older records
        )
        cached = evaluator.fresh(det, str(record.format), str(rd.clone), record.model)
    received = len(events) if events is not None else 0
    if record.guidance:
        if events is not None:
            events += track.receipts(rd.guidance, record, cached, real_now)
        else:
            track.register(record, cached)
    before = (cached.events_offset, cached.workspace_offset)
    respent = cached.spend_behind  # a spend part of another version: the log is read again for it
    try:
        evaluator.catch_up(cached, rd)
    except BaseException:
        KEPT.discard(path)  # half fed: the next pass starts again from the file
        raise
    read = cached.events_offset - before[0] + cached.workspace_offset - before[1]
    changed = respent or (events is not None and len(events) > received)
    KEPT.put(path, cached, read=read, changed=changed, dear=respent)
    return cached


def catch_up_only(rd: RunDir, record: RunRecord, buckets: BucketsFile) -> None:
    """Bring the run's cache up to date and write it, nothing more (runs/warmup.py's workers, under the lock)."""
    if track.outstanding(record):
        return  # a receipt may be in: the pass takes it before it feeds the log, so the restart lands right
    _catch_up(rd, record, _settings(record, buckets), time.time())
    KEPT.drop(rd.detector_cache)


def _spend(rd: RunDir, record: RunRecord, cached: evaluator.Cached, cfg: UserConfig) -> SpendTotals | None:
    """Tokens and dollars so far: the log, and what the agent's own session files gained since the last look."""
    run = cached.spend
    if run is None:
        return None
    looked_up, offsets = len(run.memo), sum(run.offsets.values())
    read = run.read_agent_files(record.agent_homes)
    sp = run.spend
    cost, unpriced = prices.cost(sp, cfg.prices, run.memo)
    priced = len(run.memo) != looked_up  # a price looked up: worth a write at once (it may have cost an import)
    if record.active and (read or priced):
        # the next look starts where this one ended (a transcript read from its start is worth a write)
        read_bytes = max(0, sum(run.offsets.values()) - offsets)
        KEPT.put(rd.detector_cache, cached, read=read_bytes, changed=True, dear=priced)
    return SpendTotals(
        tokens=sp.tokens,
        input_tokens=sp.input_tokens,
        output_tokens=sp.output_tokens,
        cache_read_tokens=sp.cache_read_tokens,
        cache_write_tokens=sp.cache_write_tokens,
        cost_usd=cost,
        unpriced_models=unpriced,
    )


def _evaluate(
    rd: RunDir, record: RunRecord, settings: Settings, real_now: float, view: RunView, cfg: UserConfig, acts: bool
) -> evaluator.Cached:
    """The verdict; with `acts` (the run is alive), also its trips, its guidance and its ladder."""
    cached = _catch_up(rd, record, settings, real_now, view.events)
    now = RunClock.of(record).at(real_now)
    _provider(record, cached.outcome, view)
    verdict = cached.detector.evaluate(cached.agent_time(now))
    old = record.spiral
    new = msgspec.structs.replace(  # the page's facts carry over; the verdict and counts are new
        old,
        region=verdict.region,
        signals=list(verdict.signals),
        suspicion=verdict.suspicion,
        evidence=[redact_cut(e) for e in verdict.evidence],  # a path (or its shortened tail) may hold a token
        signals_seen=sorted(set(old.signals_seen) | set(verdict.signals)),
        skipped_lines=cached.skipped_lines + cached.adapter.skipped,
        tool_calls=cached.detector.calls,
    )
    now_min = round(verdict.elapsed_min, 2)  # the agent's minutes, as the page, the episodes and the ladder
    if not acts:
        pass
    elif verdict.should_page and not old.tripped_in_soft_band:
        new.tripped_in_soft_band, new.tripped_at_min = True, round(verdict.elapsed_min, 2)
        new.page_signals, new.page_evidence = list(verdict.signals), list(new.evidence)
        new.page_recent = evaluator.briefs(cached)
        view.events.append(of(Kind.TRIPPED))
    if acts:
        view.events += track.episode(old, new, verdict, cached, now_min)
    # counts move with every call; the record is rewritten only when the verdict changes
    if _verdict_changed(old, new) or view.events:
        record.spiral = new
        view.events.append(of(Kind.EVALUATED))
    if record.guidance:
        view.events += track.after_verdict(rd.guidance, record, cached, verdict, real_now, cfg.guidance)
    if acts:
        climbed, view.ladder_stop = escalate.climb(rd.guidance, record, real_now, now_min)
        view.events += climbed
    return cached


def _provider(record: RunRecord, outcome: Outcome, view: RunView) -> None:
    """The agent's model API as the record shows it: retrying now (one episode), or fine."""
    ep = outcome.provider
    current = None
    if ep is not None:
        current = ProviderStatus(
            episode=len(outcome.episodes),
            text=ep.describe(),
            status=ep.status,
            error=ep.error,
            attempt=ep.attempt,
            max_retries=ep.max_retries,
            since=format_ts(ep.since),
        )
    if current != record.provider:
        record.provider = current
        view.events.append(of(Kind.PROVIDER if current is not None else Kind.PROVIDER_RECOVERED))


def _verdict_changed(old: SpiralState, new: SpiralState) -> bool:
    keys = ("region", "signals", "suspicion", "evidence", "signals_seen", "tripped_in_soft_band", "tripped_since_min")
    return any(getattr(old, k) != getattr(new, k) for k in keys)


def _pending_stop(record: RunRecord, real_now: float) -> liveness.Decision | None:
    """A stop requested long enough ago that whoever asked for it is not carrying it out (a `kill` cut short
    by Ctrl-C, or one that died): this pass carries it out, with the kind and reason asked for."""
    req = record.stop_requested
    asked = parse_ts(req.at) if req is not None else None
    if req is None or asked is None or real_now - asked < STOP_PENDING_S:
        return None
    return liveness.Decision(req.end_as, req.reason)


def _liveness(
    record: RunRecord, view: RunView, settings: Settings, cfg: UserConfig, real_now: float
) -> liveness.Decision | None:
    launcher, executor = record.launcher, executors.for_record(record)
    spawned = parse_ts(record.spawned_at)
    facts = liveness.Facts(
        state=record.state,
        supervisor_alive=executor.alive(record),
        supervisor_registered=record.supervisor is not None,
        agent_alive=executor.agent_alive(record),
        launcher_alive=bool(launcher and launcher.alive()),
        since_spawn_real_s=None if spawned is None else real_now - spawned,
        silent_s=view.last_activity_s if view.last_activity_s is not None else 0.0,
        elapsed_min=view.elapsed_min,
        stuck_min=settings.buckets[str(record.bucket)].stuck_min,
        stuck_calls=settings.buckets[str(record.bucket)].stuck_calls,
        tool_calls=record.spiral.tool_calls,
        heartbeat_s=cfg.heartbeat_s,
        bucket=str(record.bucket),
        from_queue=record.admitted_by == "queue",
    )
    return liveness.judge(facts)


def _stop(rd: RunDir, decision: liveness.Decision, view: RunView) -> RunRecord:
    """Stop a run the liveness path gave up on; the signals seen become hints.

    A stop already requested (by `kill`, or an earlier pass) keeps its kind and
    reason; it is carried through even when its requester or the supervisor died.
    """

    def request(r: RunRecord) -> bool:
        if not r.active:
            return False
        if r.stop_requested is None:
            r.stop_requested = StopRequest(end_as=decision.end_as, reason=decision.reason, at=state_file.utcnow())
        r.hints = list(r.spiral.signals_seen)
        return True

    record = state_file.update(rd, request)
    if not record.active or record.stop_requested is None:
        return record
    req = record.stop_requested
    how, reason = req.end_as or decision.end_as, req.reason or decision.reason
    if how != decision.end_as and decision.end_as == "lost":
        reason += "; its supervisor vanished before recording it"
    # the agent, or the verify: check running after it; then a while for the supervisor to see it
    executors.for_record(record).stop(record, then_supervisor=False)
    # the supervisor records a requested stop itself; when it is gone, record it here
    final = state_file.update(rd, lambda r: state_file.end(r, how, reason))
    if final.state == how:
        view.events.append(of(Kind.ENDED, how))
        ended = parse_ts(final.ended_at) or time.time()
        case_file.write_run_case(rd, final, RunClock.of(final).at(ended))
    return final


def broken(run_dir: Path, error: str) -> RunView:
    """A row for a run that could not be refreshed, so it is shown, not hidden."""
    try:
        record = state_file.read(run_dir)
    except UserError:
        record = RunRecord(run_id=run_dir.name, state="unreadable")
    return RunView(run_dir, record, error=error)


def forget_ended(views: list[RunView]) -> None:
    """Write and forget the kept state of runs no longer active (or gone) after a pass."""
    active = {RunDir(v.run_dir).detector_cache for v in views if v.record.active}
    for path in KEPT.paths():
        if path not in active:
            KEPT.drop(path)
