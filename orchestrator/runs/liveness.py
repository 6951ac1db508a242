"""Liveness: is a run still a live process making output? (pure decision)"""

from __future__ import annotations

from dataclasses import dataclass

LAUNCH_GRACE_S = 60.0  # real seconds a supervisor has to show up after launch
# a queued run whose starter died right around the spawn: after this long with no supervisor, it is started again
SPAWN_GRACE_S = 10.0


@dataclass(frozen=True)
class Facts:
    state: str
    supervisor_alive: bool
    agent_alive: bool
    launcher_alive: bool  # the `launch` command that is cloning and spawning
    since_spawn_real_s: float | None  # since the supervisor was spawned; None while still cloning
    silent_s: float  # run-clock seconds since the log last grew
    elapsed_min: float  # run-clock minutes since launch
    stuck_min: float
    heartbeat_s: float
    bucket: str
    from_queue: bool = False  # started by a pass over the queue (fleet.py), not by its own `launch`
    stuck_calls: int = 0  # the bucket's stuck band in tool calls (0: none)
    tool_calls: int = 0
    supervisor_registered: bool = False  # a supervisor took the run (it may have died since)


@dataclass(frozen=True)
class Decision:
    end_as: str  # stalled | lost | queued (back to the queue: no agent was started)
    reason: str


def judge(f: Facts) -> Decision | None:
    if f.state == "launching":
        if f.since_spawn_real_s is None:
            if f.launcher_alive:
                return None
            if f.from_queue:  # its admitter died before the agent started: nothing ran, it waits again
                return Decision("queued", "its start was interrupted before the agent started; queued again")
            return Decision("lost", "the launch was interrupted before the agent started")
        if (
            f.from_queue
            and not f.supervisor_registered
            and not f.launcher_alive
            and f.since_spawn_real_s > SPAWN_GRACE_S
        ):
            # its starter died around the spawn and no supervisor came: no agent ran, so it waits again
            return Decision("queued", "its start was interrupted before a supervisor took it; queued again")
        if not f.supervisor_alive and f.since_spawn_real_s > LAUNCH_GRACE_S:
            return Decision("lost", "the supervisor never started the agent")
        return None
    if f.state != "running":
        return None
    if not f.supervisor_alive:
        return Decision(
            "lost",
            "the supervising process vanished"
            + ("; the agent was still running and was stopped" if f.agent_alive else ""),
        )
    if not f.agent_alive:
        return None  # exited: its supervisor is recording the ending
    if f.elapsed_min >= f.stuck_min:
        return Decision(
            "stalled", f"past the {f.bucket} bucket's stuck time ({f.elapsed_min:.0f} min >= {f.stuck_min:g} min)"
        )
    if f.stuck_calls and f.tool_calls >= f.stuck_calls:
        return Decision(
            "stalled", f"past the {f.bucket} bucket's stuck band ({f.tool_calls} tool calls >= {f.stuck_calls})"
        )
    if f.silent_s >= f.heartbeat_s:
        return Decision(
            "stalled", f"no log output for {f.silent_s / 60:.0f} min (heartbeat limit {f.heartbeat_s / 60:g} min)"
        )
    return None
