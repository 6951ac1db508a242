"""case.yaml: the one writer of a case folder's description (shared/spec/corpus.md).

A run folder is a corpus case, so the run's own case.yaml is written here too,
from its record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orchestrator.infra.atomic import write_text_atomic
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import CaseFiles, RunDir
from orchestrator.record.model import RunRecord
from spiral.timestamps import format_ts, parse_ts


def case_text(case: dict[str, Any], *, width: int = 100, ascii_only: bool = False) -> str:
    """A case mapping as YAML, keys in the order given."""
    return yaml.safe_dump(case, sort_keys=False, width=width, allow_unicode=not ascii_only)


def with_scope(scope: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The `scope:` entry of a case mapping: none at all when empty, so such a case.yaml reads as before."""
    return {"scope": list(scope)} if scope else {}


def with_receipts(record: RunRecord) -> dict[str, Any]:
    """The `guidance_received:` entry: when guidance reached the agent (run clock), where the detector's
    windows restarted; none at all when no guidance was received, so such a case.yaml reads as before."""
    clock = RunClock.of(record)
    times = [format_ts(clock.at(g.received_epoch)) for g in record.guidance if g.received_epoch is not None]
    return {"guidance_received": times} if times else {}


def write_case(folder: CaseFiles | Path, case: dict[str, Any], *, width: int = 100, ascii_only: bool = False) -> None:
    files = folder if isinstance(folder, CaseFiles) else CaseFiles(folder)
    write_text_atomic(files.case_yaml, case_text(case, width=width, ascii_only=ascii_only))


def write_run_case(run: RunDir | Path, record: RunRecord, ended_run_ts: float | None = None) -> None:
    rd = RunDir.of(run)
    started = parse_ts(record.started_at) or 0.0
    ended = ended_run_ts if ended_run_ts is not None else started
    why = f" ({record.reason})" if record.reason else ""
    case = {
        "id": record.run_id,
        "description": f"Live run of ticket {record.ticket_id} with agent {record.agent}: {record.state}{why}.",
        "format": record.format,
        "bucket": record.bucket,
        "started_at": format_ts(started),
        "ended_at": format_ts(max(started, ended)),
        "outputs": list(record.outputs),
        **with_scope(record.scope),
        **with_receipts(record),
        "workdir": record.agent_clone(rd.clone),
        "overrides": record.overrides,
        # the observed outcome; a person relabels it when adding the run to the corpus
        "expect": {"spiral": record.spiral.tripped_in_soft_band},
    }
    write_case(rd, case)
