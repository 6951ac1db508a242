"""The follower of a run on Ray: `python -m orchestrator.runs.executors.follow RUN_DIR ADMISSION`.

Registered as the run's supervisor (so `kill`, the watcher's liveness and `lost` work as for a local
run), it places a RunActor on a node with the configured resources, passes the profile's environment
(API keys) through Ray's runtime_env (never through the ticket or the log), then pulls the new lines
of the remote events.jsonl and workspace.jsonl and appends them here as they were written there, until
the remote supervisor records the ending, which is recorded here through state_file.update.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.infra import proc
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ENDED, RunRecord
from orchestrator.runs.supervisor import _register

PULL_EVERY_S = 0.2
START_TIMEOUT_S = 300.0  # placing the actor and cloning on the node
CALL_TIMEOUT_S = 30.0  # one pull; past it (or the actor dead) the node is taken as gone


def _placed(where: str, handle: str) -> Any:
    def change(r: RunRecord) -> bool:
        if r.executor is None:
            return False
        r.executor = msgspec.structs.replace(r.executor, where=where, handle=handle)
        return True

    return change


def _mirror(remote: RunRecord) -> Any:
    """The remote run's progress (running, its agent's version) before its ending."""

    def change(r: RunRecord) -> bool:
        if r.state == "launching" and remote.state == "running" and r.stop_requested is None:
            r.state, r.agent_version = "running", remote.agent_version or r.agent_version
            return True
        return False

    return change


def _ended(remote: RunRecord) -> Any:
    """The remote supervisor's ending, unless a stop asked for here names it (as supervisor._finish)."""

    def change(r: RunRecord) -> bool:
        r.agent_report, r.provider = remote.agent_report, None
        r.agent_claim, r.verify_result = remote.agent_claim, remote.verify_result
        req = r.stop_requested
        if req is not None and req.end_as in ENDED:
            state_file.end(r, req.end_as, req.reason, exit_code=remote.exit_code)
        else:
            state_file.end(r, remote.state, remote.reason or remote.state, exit_code=remote.exit_code)
        return True

    return change


def follow(run_dir: Path, admission: int) -> int:
    import ray  # the `ray` extra

    from orchestrator.runs.executors.remote import RunActor

    rd = RunDir.of(run_dir)
    me = proc.ProcRef.of(os.getpid())
    record = state_file.update(rd, _register(me, admission))
    if record.supervisor != me or record.executor is None:
        return 0
    place = record.executor
    handle = f"run-{record.run_id}-{admission}"

    def lost(why: str) -> None:
        state_file.update(rd, lambda r: state_file.end(r, "lost", why))
        final = state_file.read(rd)
        case_file.write_run_case(rd, final, RunClock.of(final).at(time.time()))

    try:
        ray.init(address=place.address, log_to_driver=False, logging_level=logging.ERROR, namespace="orchestrator")
    except Exception as exc:
        lost(f"the Ray cluster at {place.address} could not be reached: {str(exc).splitlines()[0][:200]}")
        return 1
    remote_record = msgspec.structs.replace(record, env={})  # the secrets go by runtime_env only
    actor_cls = ray.remote(num_cpus=0, max_restarts=0)(RunActor)
    actor: Any = actor_cls.options(
        name=handle, resources=dict(place.resources), runtime_env={"env_vars": dict(record.env)}
    ).remote()
    try:
        info: dict[str, Any] = ray.get(
            actor.start.remote(msgspec.json.encode(remote_record), rd.ticket.read_text(encoding="utf-8")),
            timeout=START_TIMEOUT_S,
        )
    except Exception as exc:
        ray.kill(actor)
        why = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        state_file.update(rd, lambda r: state_file.end(r, "failed", f"the run could not start on Ray: {why}"))
        return 1
    rd.tracked.write_text("".join(p + "\n" for p in info["tracked"]), encoding="utf-8")
    record = state_file.update(rd, _placed(info["where"], handle))
    case_file.write_run_case(rd, record)
    return _stream(rd, actor, info["where"], lost)


def _stream(rd: RunDir, actor: Any, where: str, lost: Any) -> int:
    import ray

    events_at = workspace_at = 0
    stop_sent = False
    while True:
        try:
            ev, ws, state_bytes = ray.get(actor.pull.remote(events_at, workspace_at), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            lost(f"the Ray node running it ({where}) disappeared: {type(exc).__name__}")
            ray.kill(actor)
            return 1
        _append(rd.events, ev)
        _append(rd.workspace, ws)
        events_at, workspace_at = events_at + len(ev), workspace_at + len(ws)
        remote = msgspec.json.decode(state_bytes, type=RunRecord)
        if remote.state in ENDED and not ev and not ws:  # every line is here: the ending follows them
            state_file.update(rd, _ended(remote))
            final = state_file.read(rd)
            case_file.write_run_case(rd, final, RunClock.of(final).at(time.time()))
            break
        local = state_file.read(rd)
        if (local.stop_requested is not None or not local.active) and not stop_sent:
            req = local.stop_requested
            how, why = (req.end_as, req.reason) if req is not None else (local.state, local.reason)
            ray.get(actor.stop.remote(how or "killed", why or "stopped"), timeout=CALL_TIMEOUT_S)
            stop_sent = True
            continue  # the remote supervisor records the stop: its last lines and ending come next
        state_file.update(rd, _mirror(remote))
        if not ev and not ws:
            time.sleep(PULL_EVERY_S)
    try:
        ray.get(actor.cleanup.remote(), timeout=CALL_TIMEOUT_S)
    finally:
        ray.kill(actor)
    return 0


def _append(path: Path, data: bytes) -> None:
    if data:
        with path.open("ab") as fh:
            fh.write(data)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        sys.stderr.write("usage: python -m orchestrator.runs.executors.follow RUN_DIR ADMISSION\n")
        return 2
    return follow(Path(argv[1]), int(argv[2]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
