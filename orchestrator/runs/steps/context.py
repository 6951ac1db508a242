"""What one pass knows of one run while its steps run (`Pass`), and the run's kept detector.

`runs/tick.py` builds a `Pass` under the run's lock from the record it read once; each step of
`runs/steps` reads and changes it in order; the tick writes the record once and then carries out
what the steps asked for: a stop, a requeue, the notices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra.errors import UserError
from orchestrator.ledger import prices
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, SpendTotals, SpiralState
from orchestrator.record.run_files import read_tracked
from orchestrator.runs import evaluator
from orchestrator.runs.events import Event
from orchestrator.runs.liveness import Decision
from orchestrator.runs.steering import track
from orchestrator.runs.view import RunView
from spiral.detector import Detector
from spiral.settings import Settings, SettingsError
from spiral.timestamps import parse_ts
from spiral.verdict import Verdict

# each run's cached detector, kept in memory between the passes of this process (evaluator.Kept)
KEPT = evaluator.Kept()

# who may stop a run, first first: a dead run is lost whatever else is due; then a spend ceiling,
# the ladder's stop rung, and a stop someone asked for and did not carry out
STOP_ORDER = ("liveness", "budget", "ladder", "pending")


@dataclass
class Pass:
    rd: RunDir
    record: RunRecord
    settings: Settings
    cfg: UserConfig
    real_now: float
    view: RunView
    cached: evaluator.Cached | None = None  # the run's detector, fed (the feed step)
    verdict: Verdict | None = None  # this pass's verdict (the detection step)
    spiral: SpiralState | None = None  # the spiral state it makes, recorded by the episodes step
    final: Verdict | None = None  # an ended run's verdict on its whole log (the ending step)
    acts: bool = True  # the run is alive: trips, guidance and the ladder act (a lost run's do not)
    stops: dict[str, Decision] = field(default_factory=dict)  # by who asked (STOP_ORDER)

    @property
    def events(self) -> list[Event]:
        return self.view.events

    def decision(self) -> Decision | None:
        """The stop (or requeue) this pass carries out, if any."""
        return next((self.stops[k] for k in STOP_ORDER if k in self.stops), None)


# run id -> its frozen settings, validated once per process (a run's settings never change)
_FROZEN: dict[str, Settings] = {}


def settings_of(record: RunRecord, buckets: BucketsFile) -> Settings:
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


def first_view(rd: RunDir, record: RunRecord, settings: Settings, real_now: float) -> RunView:
    """The run's row before any step: its minutes and how long its log has been still."""
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


def catch_up(
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


def spend_of(rd: RunDir, record: RunRecord, cached: evaluator.Cached, cfg: UserConfig) -> SpendTotals | None:
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
