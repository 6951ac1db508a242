"""What a tap on the run page or a notification's button does: the token checked and spent, then
the same code as the command it stands for (`nudge`, `snooze`, `kill`, `feedback`), and the
outcome kept in the run's record (`actions`: action, time, token id, remote address, result).

A token is spent before the action runs, under the run's lock, so the same token never acts
twice, even from two requests at once; an action that is refused (the run ended meanwhile)
keeps its token spent and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from orchestrator.infra import action_tokens as tokens
from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ActionTaken, RunRecord
from spiral.timestamps import format_ts

GUIDANCE = ("nudge", "redirect", "wrap-up")  # the stock wordings (runs/steering/stock.py)
VERDICT = ("useful", "false-alarm")
ACTIONS = (*GUIDANCE, "snooze", "kill", *VERDICT)
SNOOZE_MIN = 60.0
KEPT = 200  # actions kept in a record: the oldest go first (a flood of refused taps cannot grow it for ever)
LABELS = {
    "nudge": "Nudge",
    "redirect": "Redirect",
    "wrap-up": "Wrap up",
    "snooze": "Snooze ladder 1 h",
    "kill": "Kill…",
    "useful": "Useful page",
    "false-alarm": "False alarm",
}


@dataclass(frozen=True)
class Outcome:
    status: HTTPStatus
    message: str
    confirm: bool = False  # kill without its confirmation: nothing done, the token not spent


def offered(record: RunRecord) -> list[str]:
    """The actions the run page offers for this run now."""
    out: list[str] = []
    if record.active and not record.queued and record.guidance_via is not None:
        out += GUIDANCE
    if record.active and record.ladder.rungs:
        out.append("snooze")
    if record.active:
        out.append("kill")
    from orchestrator.record.pages import pages

    if pages(record):
        out += VERDICT
    return out


def take(
    run_dir: Path, action: str, token: str, *, key: bytes, via: str, remote: str | None, confirmed: bool, now: float
) -> Outcome:
    """Check the token, spend it, act, and record what happened."""
    rd = RunDir.of(run_dir)
    if action not in ACTIONS:
        return Outcome(HTTPStatus.NOT_FOUND, f"no action {action!r}")
    try:
        token_id = tokens.check(key, token, rd.run_id, action, now)
    except tokens.TokenError as exc:
        return Outcome(HTTPStatus.FORBIDDEN, str(exc))
    if action == "kill" and not confirmed:
        return Outcome(HTTPStatus.OK, "kill needs a confirmation", confirm=True)
    taken = ActionTaken(action=action, at=format_ts(now), token_id=token_id, remote=remote, result="taking")
    spent: list[bool] = []

    def spend(r: RunRecord) -> bool:
        if any(a.token_id == token_id for a in r.actions):
            return False  # replayed: nothing written, nothing done
        r.actions = [*r.actions, taken][-KEPT:]
        spent.append(True)
        return True

    state_file.update(rd, spend)
    if not spent:
        return Outcome(HTTPStatus.FORBIDDEN, "this action token was used already: open the run page again")
    try:
        result, ok = _act(rd, action, via), True
    except UserError as exc:
        result, ok = f"refused: {exc}", False
    _record(rd, token_id, result, ok)
    return Outcome(HTTPStatus.OK if ok else HTTPStatus.CONFLICT, result)


def _act(rd: RunDir, action: str, via: str) -> str:
    """The command's own code, as the CLI runs it; a UserError says why it cannot be done."""
    from orchestrator.runs.monitor import refresh_now

    if action in GUIDANCE:
        from orchestrator.runs.steering.nudge import nudge

        refresh_now(rd.path)  # a run whose supervisor died is recorded so, and refused (as `nudge` does)
        g = nudge(rd.path, None, action)
        return f"{action} queued as {g.id} ({g.via}): it reaches the agent after its next tool call"
    if action == "snooze":
        from orchestrator.runs.snooze import snooze

        return f"ladder snoozed until {snooze(rd.path, SNOOZE_MIN)}"
    if action == "kill":
        from orchestrator.runs.kill import gone_unseen, kill_run

        if gone_unseen(rd.path):
            refresh_now(rd.path)
        final = kill_run(rd.path, "stopped by a person from the run page")
        return f"{final.state} ({final.reason})"
    from orchestrator.runs.feedback import give

    f = give(rd.path, action, via)
    return f"page {f.episode} judged {f.verdict}"


def _record(rd: RunDir, token_id: str, result: str, ok: bool) -> None:
    def change(r: RunRecord) -> bool:
        for a in r.actions:
            if a.token_id == token_id:
                a.result, a.ok = result, ok
                return True
        return False

    try:
        state_file.update(rd, change)
    except UserError:
        pass  # the action was taken; only its note is missing (a full disk): the answer still says it
