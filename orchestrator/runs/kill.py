"""`kill`: a person stops a run; the whole process tree goes, the ending is recorded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from spiral.timestamps import parse_ts


def kill_run(run_dir: Path, reason: str = "stopped by a person") -> dict[str, Any]:
    def request(s: dict[str, Any]) -> bool:
        if s.get("state") not in state_file.ACTIVE:
            return False
        s["stop_requested"] = {"as": "killed", "reason": reason, "at": state_file.utcnow()}
        return True

    state = state_file.update(run_dir, request)
    if state.get("state") not in state_file.ACTIVE:
        raise UserError(f"run {run_dir.name} already ended: {state.get('state')} ({state.get('reason')})")
    agent = proc.ProcRef.from_dict(state.get("agent_pid"))
    if agent is not None and not proc.kill_tree(agent):
        raise UserError(f"run {run_dir.name}: some of the agent's processes survived SIGKILL (pid {agent.pid})")
    sup = proc.ProcRef.from_dict(state.get("supervisor"))
    if sup is not None:
        proc.wait_for(lambda: not sup.alive(), timeout=10)
        if sup.alive():  # it never saw the exit: stop it too, the ending is recorded below
            proc.kill_tree(sup)
    final = state_file.update(run_dir, lambda s: state_file.end(s, "killed", reason))
    if final.get("state") == "killed":
        ended = parse_ts(final.get("ended_at")) or time.time()
        case_file.write_run_case(run_dir, final, RunClock.of(final).at(ended))
    return final
