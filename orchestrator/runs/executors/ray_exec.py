"""The `ray` executor, seen from the orchestrator's machine: one multiplexing follower per home and cluster.

`start` hands the run to the multiplexer of its home and cluster (executors/mux.py), starting it when
none runs; the multiplexer registers as the run's supervisor (one ProcRef for all of its runs), places
a RunActor (executors/remote.py) on a node with the configured resources and keeps the local folder
filled. Liveness is the multiplexer's: it ends a run `lost` when the engine says its actor or node
died, and the watcher's usual checks end its runs `lost` when the multiplexer itself vanishes. A stop
is asked through the run's own state; the multiplexer stops that run's remote work only and records
the ending, so `stop` waits for the ending, never for the (shared) process to exit.
"""

from __future__ import annotations

from orchestrator.infra import paths, proc
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord

FOLLOWER_STOP_WAIT_S = 40.0  # the multiplexer asks the node to stop the run (30 s at most) and records it


class RayExecutor:
    kind = "ray"
    clones_here = False  # the clone is made on the node (RunActor.start)

    def start(self, rd: RunDir, token: int) -> None:
        from orchestrator.runs.executors import mux

        def spawned(r: RunRecord) -> bool:
            if r.state != "launching" or r.stop_requested is not None or r.admission != token:
                return False  # stopped or taken over before it started: start nothing
            r.started_at = r.spawned_at = state_file.utcnow()  # the multiplexer places it on a node now
            return True

        rd.events.touch()
        rd.workspace.touch()
        record = state_file.update(rd, spawned)
        if record.spawned_at is None or record.admission != token or record.executor is None:
            return
        mux.hand_over(rd, token, record.executor.address or "")

    def alive(self, record: RunRecord) -> bool:
        sup = record.supervisor  # the multiplexer
        return bool(sup and sup.alive())

    def agent_alive(self, record: RunRecord) -> bool:
        # the multiplexer ends the run as soon as the node says the agent ended or the actor died
        return record.state == "running" and self.alive(record)

    def stop(self, record: RunRecord, *, then_supervisor: bool = True) -> str | None:
        """The multiplexer sees the stop request, has the node stop this run and confirm, and records
        the ending; it goes on following its other runs, so it is never stopped here."""
        sup = record.supervisor
        if sup is None:
            return None
        rd = RunDir.of(paths.runs_dir() / record.run_id)

        def settled() -> bool:
            try:
                return not state_file.read(rd).active or not sup.alive()
            except state_file.StateError:
                return not sup.alive()

        if proc.wait_for(settled, timeout=FOLLOWER_STOP_WAIT_S, interval=0.1):
            return None
        return (
            f"the remote run did not confirm the stop within {FOLLOWER_STOP_WAIT_S:g} s; "
            f"the Ray multiplexer (pid {sup.pid}) is still stopping it"
        )
