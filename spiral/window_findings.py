"""The window signals' findings from the call windows as they stand (pure)."""

from __future__ import annotations

from spiral.call_windows import CallWindows
from spiral.settings import Settings
from spiral.signals import polling, repetition, reruns, same_error, sustained_bash
from spiral.verdict import Finding
from spiral.window import SlidingCounter


def window_findings(
    settings: Settings,
    w: CallWindows,
    provisional: tuple[SlidingCounter, SlidingCounter, SlidingCounter, SlidingCounter] | None = None,
) -> tuple[Finding | None, ...]:
    s, r = settings, settings.rules
    scripts, files, targets, polls = provisional or (w.rep_scripts, w.rep_files, w.sb_targets, w.polls)
    rep = repetition.check(
        scripts,
        files,
        same_script=s.rep_same_script,
        same_file=s.rep_same_file,
        weight=s.weights["repetition"],
    )
    sb = sustained_bash.check(targets, same_target=s.sb_same_target, weight=s.weights["sustained_bash"])
    if r.outcomes:  # why the settled runs counted (a call still waiting adds nothing to say yet)
        if rep is not None:
            rep = reruns.explained(rep, w.rep_runs, w.changes)
        if sb is not None:
            sb = reruns.explained(sb, w.sb_runs, w.changes)
    poll = polling.check(polls, polls=s.poll_count, weight=s.weights["polling"])
    err = None
    if r.same_error:
        err = same_error.check(w.errors, w.error_calls, repeats=r.same_error_repeats, weight=r.same_error_weight)
    stuck = w.attempts.check(r.stuck_weight) if w.attempts is not None else None
    return rep, sb, poll, err, stuck
