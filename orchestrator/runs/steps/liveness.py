"""Step: is the run's process still there, and is a stop due that nobody carried out?"""

from __future__ import annotations

from orchestrator.notify.kinds import NoticeKind
from orchestrator.runs import liveness
from orchestrator.runs.events import Event
from orchestrator.runs.executors import base as executors
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass
from spiral.timestamps import parse_ts

# a stop request this old is carried out by the next pass: `kill` itself takes seconds (SIGINT, SIGTERM,
# SIGKILL, each with a grace), so by then whoever asked was interrupted or died
STOP_PENDING_S = 60.0


class Liveness:
    name = "liveness"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset()
    notices: tuple[NoticeKind, ...] = ()

    def apply(self, p: Pass) -> list[Event]:
        decision = liveness.judge(facts(p))
        if decision is not None:
            p.stops["liveness"] = decision
        # found dead: nothing is tripped, paged or climbed for a run nobody runs any more
        p.acts = decision is None or decision.end_as != "lost"
        pending = pending_stop(p)
        if pending is not None:
            p.stops["pending"] = pending
        return []


def facts(p: Pass) -> liveness.Facts:
    record, view = p.record, p.view
    launcher, executor = record.launcher, executors.for_record(record)
    spawned = parse_ts(record.spawned_at)
    bucket = p.settings.buckets[str(record.bucket)]
    return liveness.Facts(
        state=record.state,
        supervisor_alive=executor.alive(record),
        supervisor_registered=record.supervisor is not None,
        agent_alive=executor.agent_alive(record),
        launcher_alive=bool(launcher and launcher.alive()),
        since_spawn_real_s=None if spawned is None else p.real_now - spawned,
        silent_s=view.last_activity_s if view.last_activity_s is not None else 0.0,
        elapsed_min=view.elapsed_min,
        stuck_min=bucket.stuck_min,
        stuck_calls=bucket.stuck_calls,
        tool_calls=record.spiral.tool_calls,
        heartbeat_s=p.cfg.heartbeat_s,
        bucket=str(record.bucket),
        from_queue=record.admitted_by == "queue",
    )


def pending_stop(p: Pass) -> liveness.Decision | None:
    """A stop requested long enough ago that whoever asked for it is not carrying it out (a `kill` cut short
    by Ctrl-C, or one that died): this pass carries it out, with the kind and reason asked for."""
    req = p.record.stop_requested
    asked = parse_ts(req.at) if req is not None else None
    if req is None or asked is None or p.real_now - asked < STOP_PENDING_S:
        return None
    return liveness.Decision(req.end_as, req.reason)
