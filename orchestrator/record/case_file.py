"""The case.yaml of a run folder, so that a run folder is a corpus case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orchestrator.infra.atomic import write_text_atomic
from spiral.timestamps import format_ts, parse_ts


def write_run_case(run_dir: Path, state: dict[str, Any], ended_run_ts: float | None = None) -> None:
    started = parse_ts(state["started_at"]) or 0.0
    ended = ended_run_ts if ended_run_ts is not None else started
    spiral = state.get("spiral") or {}
    case = {
        "id": state["run_id"],
        "description": f"Live run of ticket {state['ticket_id']} with agent {state['agent']}: "
        f"{state.get('state')}{' (' + state['reason'] + ')' if state.get('reason') else ''}.",
        "format": state["format"],
        "bucket": state["bucket"],
        "started_at": format_ts(started),
        "ended_at": format_ts(max(started, ended)),
        "outputs": list(state.get("outputs") or []),
        "workdir": str(run_dir / "clone"),
        "overrides": state.get("overrides") or {},
        # the observed outcome; a person relabels it when adding the run to the corpus
        "expect": {"spiral": bool(spiral.get("tripped_in_soft_band"))},
    }
    write_text_atomic(run_dir / "case.yaml", yaml.safe_dump(case, sort_keys=False, width=100))
