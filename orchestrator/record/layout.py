"""The files of a case folder and of a run folder: the one place that names them.

A run folder *is* a corpus case (shared/spec/cli.md): the case files below, plus
the run's own record, lock, clone and supervisor output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

EVENTS = "events.jsonl"
CASE_YAML = "case.yaml"
STATE_JSON = "state.json"


@dataclass(frozen=True)
class CaseFiles:
    """A corpus case folder (shared/spec/corpus.md). Its files' paths are fields, made once with the
    folder: a pass reads them many times, and a field costs no call."""

    path: Path
    name: str = field(init=False, compare=False)
    case_yaml: Path = field(init=False, compare=False)
    events: Path = field(init=False, compare=False)  # the agent's output, one timestamped envelope a line
    workspace: Path = field(init=False, compare=False)  # clone snapshots: porcelain status and blob ids
    tracked: Path = field(init=False, compare=False)

    def __post_init__(self) -> None:
        p, put = self.path, object.__setattr__  # (frozen: the fields are set once, here)
        put(self, "name", p.name)
        put(self, "case_yaml", p / CASE_YAML)
        put(self, "events", p / EVENTS)
        put(self, "workspace", p / "workspace.jsonl")
        put(self, "tracked", p / "tracked.txt")

    def is_case(self) -> bool:
        return self.case_yaml.is_file()


@dataclass(frozen=True)
class RunDir(CaseFiles):
    """`runs/<run-id>/`: a case folder plus the run's record and working files."""

    run_id: str = field(init=False, compare=False)
    state_json: Path = field(init=False, compare=False)
    lock: Path = field(init=False, compare=False)
    ticket: Path = field(init=False, compare=False)
    clone: Path = field(init=False, compare=False)
    detector_cache: Path = field(init=False, compare=False)
    # the guidance inbox (orchestrator/guidance/inbox.py) and its claimed and withdrawn messages
    guidance: Path = field(init=False, compare=False)
    supervisor_log: Path = field(init=False, compare=False)
    agent_stderr: Path = field(init=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        p, put = self.path, object.__setattr__
        put(self, "run_id", p.name)
        put(self, "state_json", p / STATE_JSON)
        put(self, "lock", p / ".lock")
        put(self, "ticket", p / "ticket.md")
        put(self, "clone", p / "clone")
        put(self, "detector_cache", p / "detector.pickle")
        put(self, "guidance", p / "guidance")
        put(self, "supervisor_log", p / "supervisor.log")
        put(self, "agent_stderr", p / "agent.stderr")

    @classmethod
    def of(cls, where: Path | RunDir) -> RunDir:
        return where if isinstance(where, RunDir) else cls(Path(where))

    def is_run(self) -> bool:
        return self.state_json.is_file()
