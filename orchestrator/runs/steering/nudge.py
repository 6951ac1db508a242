"""`nudge`: queue guidance for a running agent, refusing what cannot reach it."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.infra.errors import UserError, read_text
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Guidance
from orchestrator.runs.steering import stock, track

MAX_TEXT = 20_000  # characters: guidance is a few sentences; a pasted log belongs in a file the agent can read


def compose(text: str | None, file: Path | None, redirect: bool, wrap_up: bool) -> tuple[str | None, str]:
    """(the person's text, or None for a stock wording; its kind) from the command's options."""
    if redirect and wrap_up:
        raise UserError("choose one of --redirect and --wrap-up")
    kind = "redirect" if redirect else "wrap-up" if wrap_up else None
    given = [x for x in (text is not None, file is not None, kind is not None) if x]
    if len(given) != 1:
        raise UserError("nudge takes exactly one of: TEXT, --file FILE, --redirect, --wrap-up")
    if kind is not None:
        return None, kind
    if file is not None:
        text = read_text(file)
    assert text is not None
    if not text.strip():
        raise UserError("the guidance text is empty: say what the agent should do instead")
    if len(text) > MAX_TEXT:
        raise UserError(
            f"the guidance text is {len(text)} characters; keep it under {MAX_TEXT} (point at a file instead)"
        )
    return text.strip(), "text"


def nudge(run_dir: Path, text: str | None, kind: str) -> Guidance:
    """Queue the message in the run's inbox and record it, under the run's lock."""
    rd = RunDir.of(run_dir)
    with state_file.locked(rd):
        record = state_file.read(rd)
        if record.queued:
            raise UserError(f"run {record.run_id} is still queued: its agent has not started, guidance needs a turn")
        if not record.active:
            raise UserError(f"run {record.run_id} has ended ({record.state}): there is no agent to guide")
        if record.guidance_via is None:
            raise UserError(
                f"run {record.run_id}: agent {record.agent!r} cannot take guidance "
                "(its profile says guidance: none, or the run was launched before guidance existed)"
            )
        body = text if text is not None else stock.text(kind, record)
        g = track.queue(rd.guidance, record, body, kind, "person", time.time())
        try:
            state_file.write(rd, record)
        except UserError:
            track.withdraw(rd.guidance, g, "not recorded", 0.0)  # an unrecorded message must not reach the agent
            raise
    return g
