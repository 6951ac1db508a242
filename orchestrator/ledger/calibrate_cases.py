"""What recorded runs took, for calibrate --cases: each case's minutes and tool calls (reads files).

A case counts as a run that succeeded when its `outcome:` says so (resolved, succeeded); a case
without `outcome:` counts unless it is expected to spiral (`expect.spiral: true`). Its minutes are
its recording's span (case.yaml's started_at to ended_at), its calls those the adapters read in its
log, as replay counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from orchestrator.infra.errors import UserError
from orchestrator.ledger.rows import scan_log
from orchestrator.record.case import SUCCEEDED_OUTCOMES, find_cases, load_case
from orchestrator.record.layout import CaseFiles


def succeeded(outcome: str | None, expects_spiral: bool) -> bool:
    return outcome in SUCCEEDED_OUTCOMES if outcome is not None else not expects_spiral


def runs_in(dirs: list[Path], say: Callable[[str], object] | None = None) -> dict[str, list[tuple[float, int]]]:
    """Per bucket, (minutes, tool calls) of every case under `dirs` that succeeded."""
    folders, unlisted = find_cases(dirs)
    if unlisted:
        raise UserError(f"{unlisted[0]['case']}: {unlisted[0]['error']}")
    if not folders:
        raise UserError(f"no case folders (with {CaseFiles(dirs[0]).case_yaml.name}) under {', '.join(map(str, dirs))}")
    out: dict[str, list[tuple[float, int]]] = {}
    skipped = 0
    for folder in folders:
        case = load_case(folder)
        if not succeeded(case.outcome, case.expect.spiral):
            skipped += 1
            continue
        files = CaseFiles(folder)
        if not files.events.is_file():
            raise UserError(f"{folder}: no events.jsonl (the agent's log) in the case folder")
        calls = scan_log(files.events, case.format).tool_calls  # (as the ledger counts a run's calls)
        out.setdefault(case.bucket, []).append(((case.ended_at - case.started_at) / 60.0, calls))
    if say is not None:
        kept = sum(len(v) for v in out.values())
        say(f"{kept} succeeded run(s) in {len(folders)} case(s); {skipped} left out (not succeeded)")
    return out
