"""The files of a case folder and of a run folder: the one place that names them.

A run folder *is* a corpus case (shared/spec/cli.md): the case files below, plus
the run's own record, lock, clone and supervisor output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EVENTS = "events.jsonl"
CASE_YAML = "case.yaml"
STATE_JSON = "state.json"


@dataclass(frozen=True)
class CaseFiles:
    """A corpus case folder (shared/spec/corpus.md)."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def case_yaml(self) -> Path:
        return self.path / CASE_YAML

    @property
    def events(self) -> Path:
        """The agent's output, one timestamped envelope a line."""
        return self.path / EVENTS

    @property
    def workspace(self) -> Path:
        """Clone snapshots: porcelain status and blob ids, one a line."""
        return self.path / "workspace.jsonl"

    @property
    def tracked(self) -> Path:
        return self.path / "tracked.txt"

    def is_case(self) -> bool:
        return self.case_yaml.is_file()


@dataclass(frozen=True)
class RunDir(CaseFiles):
    """`runs/<run-id>/`: a case folder plus the run's record and working files."""

    @classmethod
    def of(cls, where: Path | RunDir) -> RunDir:
        return where if isinstance(where, RunDir) else cls(Path(where))

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def state_json(self) -> Path:
        return self.path / STATE_JSON

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    @property
    def ticket(self) -> Path:
        return self.path / "ticket.md"

    @property
    def clone(self) -> Path:
        return self.path / "clone"

    @property
    def detector_cache(self) -> Path:
        return self.path / "detector.pickle"

    @property
    def guidance(self) -> Path:
        """The guidance inbox (orchestrator/guidance/inbox.py) and its claimed and withdrawn messages."""
        return self.path / "guidance"

    @property
    def supervisor_log(self) -> Path:
        return self.path / "supervisor.log"

    @property
    def agent_stderr(self) -> Path:
        return self.path / "agent.stderr"

    def is_run(self) -> bool:
        return self.state_json.is_file()
