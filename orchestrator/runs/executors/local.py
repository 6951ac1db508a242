"""The `local` executor: today's detached supervisor on this machine, ProcRefs for liveness."""

from __future__ import annotations

import sys

from orchestrator.infra import proc
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord


class LocalExecutor:
    kind = "local"
    clones_here = True

    def start(self, rd: RunDir, token: int) -> None:
        supervisor = [sys.executable, "-m", "orchestrator.runs.supervisor", str(rd.path), str(token)]
        proc.spawn_detached(supervisor, cwd=rd.path, log=rd.supervisor_log)

    def alive(self, record: RunRecord) -> bool:
        sup = record.supervisor
        return bool(sup and sup.alive())

    def agent_alive(self, record: RunRecord) -> bool:
        agent = record.agent_pid
        return bool(agent and agent.alive())

    def stop(self, record: RunRecord, *, then_supervisor: bool = True) -> str | None:
        """The agent's tree (or the verify: check after it), then, given time, the supervisor."""
        agent, problem = record.agent_pid, None
        if agent is not None and not proc.kill_tree(agent):
            problem = f"some of the agent's processes survived SIGKILL (pid {agent.pid})"
            if then_supervisor:  # `kill` says so at once
                return problem
        if record.verify_pid is not None:
            proc.kill_tree(record.verify_pid)
        sup = record.supervisor
        if sup is not None:
            proc.wait_for(lambda: not sup.alive(), timeout=10)
            if then_supervisor and sup.alive():  # it never saw the exit: stop it too
                proc.kill_tree(sup)
        return problem
