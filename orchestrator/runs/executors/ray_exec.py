"""The `ray` executor, seen from the orchestrator's machine: a local follower per run.

`start` spawns `python -m orchestrator.runs.executors.follow RUN_DIR ADMISSION` detached (as the
local executor spawns the supervisor); the follower registers as the run's supervisor, places a
RunActor (executors/remote.py) on a node with the configured resources and keeps the local folder
filled. Liveness is the follower's: it ends the run `lost` when the engine says the actor or its node
died, and the watcher's usual checks end it `lost` when the follower itself vanishes.
"""

from __future__ import annotations

import sys

from orchestrator.infra import proc
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord

FOLLOWER_STOP_WAIT_S = 30.0  # the follower asks the node to stop the run and waits for it to confirm


class RayExecutor:
    kind = "ray"
    clones_here = False  # the clone is made on the node (RunActor.start)

    def start(self, rd: RunDir, token: int) -> None:
        def spawned(r: RunRecord) -> bool:
            if r.state != "launching" or r.stop_requested is not None or r.admission != token:
                return False  # stopped or taken over before it started: start nothing
            r.started_at = r.spawned_at = state_file.utcnow()  # the follower places it on a node now
            return True

        rd.events.touch()
        rd.workspace.touch()
        record = state_file.update(rd, spawned)
        if record.spawned_at is None or record.admission != token:
            return
        follower = [sys.executable, "-m", "orchestrator.runs.executors.follow", str(rd.path), str(token)]
        proc.spawn_detached(follower, cwd=rd.path, log=rd.supervisor_log)

    def alive(self, record: RunRecord) -> bool:
        sup = record.supervisor  # the follower
        return bool(sup and sup.alive())

    def agent_alive(self, record: RunRecord) -> bool:
        # the follower ends the run as soon as the node says the agent ended or the actor died
        return record.state == "running" and self.alive(record)

    def stop(self, record: RunRecord, *, then_supervisor: bool = True) -> str | None:
        """The follower sees the stop request, has the node stop the agent and confirm, then exits."""
        sup = record.supervisor
        if sup is None:
            return None
        proc.wait_for(lambda: not sup.alive(), timeout=FOLLOWER_STOP_WAIT_S)
        if sup.alive():
            proc.kill_tree(sup)  # the actor is owned by the follower: Ray ends it with its owner
            return "the remote run did not confirm the stop in time; its follower was stopped"
        return None
