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
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, SpiralState
from orchestrator.runs import evaluator
from orchestrator.runs.liveness import Decision
from orchestrator.runs.view import RunView
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
    stops: dict[str, Decision] = field(default_factory=dict)  # by who asked (STOP_ORDER; tick.first_stop)


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
    scale = clock.scale  # real seconds times this are the run's seconds (RunClock.seconds)
    bucket = settings.buckets.get(str(record.bucket))
    ended = parse_ts(record.ended_at)
    until = ended if ended is not None and record.ended else real_now
    view = RunView(rd.path, record, expected_min=bucket.expected_min if bucket else 0.0)
    view.elapsed_min = max(0.0, (until - clock.started_at) * scale / 60.0)
    try:
        silent = real_now - rd.events.stat().st_mtime
        view.last_activity_s = silent * scale  # the run's clock: liveness and the demo's fast heartbeat
        view.last_activity_real_s = silent  # wall-clock seconds: what `status` shows
    except FileNotFoundError:
        view.last_activity_s = None
    if ended is not None and record.ended:  # an ended run: real seconds since it ended
        view.last_activity_real_s = max(0.0, real_now - ended)
    return view
