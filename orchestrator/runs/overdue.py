"""An agent that exits on its own after its run passed the stuck band: stalled, as the watcher would
have recorded it had a pass come in between (pure: a record and two counts in, an ending out).

The liveness path (orchestrator/runs/liveness.py) stops a run once it is past its bucket's stuck time
(or stuck band in calls). When no watcher pass lands between that moment and the agent's own exit (a
watcher killed or busy), the ending used to depend on that timing: `stalled` with a pass in between,
the agent's own `succeeded` without one. The ending is judged on the run's clock at the moment the
agent exited instead, so it is the same either way; the agent's own claim stays in `agent_claim`.
"""

from __future__ import annotations

from orchestrator.record.model import RunRecord
from spiral.settings import Settings, SettingsError


def past_stuck(record: RunRecord, elapsed_min: float, tool_calls: int) -> str | None:
    """Why the run was already past its stuck band when its agent exited, or None."""
    if record.settings is None or record.bucket is None:
        return None  # a record from before settings were frozen at launch: judged as before
    try:
        bucket = Settings.from_mapping(record.settings).buckets.get(str(record.bucket))
    except SettingsError:
        return None
    if bucket is None:
        return None
    if elapsed_min >= bucket.stuck_min:
        return f"past the {record.bucket} bucket's stuck time ({elapsed_min:.0f} min >= {bucket.stuck_min:g} min)"
    if bucket.stuck_calls and tool_calls >= bucket.stuck_calls:
        return f"past the {record.bucket} bucket's stuck band ({tool_calls} tool calls >= {bucket.stuck_calls})"
    return None
