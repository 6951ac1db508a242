"""The `gc` command's options and output (the command line registers it; orchestrator/runs/gc.py does the work)."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt
from orchestrator.infra.errors import UserError

if TYPE_CHECKING:  # the command line imports this module on every command: the work only when gc runs
    from orchestrator.runs.gc import Clone, Plan


def gc_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would go and the space it frees; change nothing.")
    ] = False,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            help="Remove clones of runs that ended this many days ago (default: gc_keep_days, 7).",
        ),
    ] = None,
    flagged_older_than: Annotated[
        float | None,
        typer.Option(
            "--flagged-older-than",
            metavar="DAYS",
            help="The same for runs that spiraled or ended failed, stalled or lost (default: gc_keep_days_flagged, 30).",
        ),
    ] = None,
    discard_unsaved: Annotated[
        bool,
        typer.Option(
            "--discard-unsaved",
            help="Do not save a clone's uncommitted changes and unpushed commits first: they are lost.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove the clones of ended runs past their retention; keep every record.

    Only runs/<id>/clone/ goes: state.json, events.jsonl, workspace.jsonl,
    case.yaml, the ticket and guidance/ stay, so `history`, `replay` and
    `logs` keep working (state.json records `clone_removed_at`). A clone is
    kept gc_keep_days (7) after its run ended, gc_keep_days_flagged (30) when
    the run spiraled or ended failed, stalled or lost (config.yaml). Queued,
    launching and running runs are never touched, however old; a run whose
    record cannot be read is skipped and reported. Safe to interrupt: the
    next gc finishes a half-removed clone. Exit 1 if a clone could not go.

    Nothing pushes a run's work anywhere, so before a clone goes its unsaved
    work is kept in the run folder: what `git status` lists (untracked files
    too, ignored ones not) as unsaved/work.patch (`git apply --binary`), and
    commits no remote-tracking ref holds (branches, a detached HEAD, the
    stash) as unsaved/commits.bundle (`git fetch` from it). A clone whose work
    a patch cannot hold (nested repositories, git-lfs files, a folder git
    cannot read), or is over 256 MiB to save, stays (exit 1) unless
    --discard-unsaved.
    """
    from orchestrator.config import load
    from orchestrator.runs import gc

    cfg = load()
    retention = gc.Retention(
        _days("--older-than", older_than, cfg.gc_keep_days),
        _days("--flagged-older-than", flagged_older_than, cfg.gc_keep_days_flagged),
    )
    the_plan = gc.plan(retention)
    say = sys.stderr.write if as_json else sys.stdout.write
    for run_id, why in the_plan.skipped:
        sys.stderr.write(f"skipped {run_id}: {why}\n")
    if not dry_run and the_plan.due:
        say(f"removing {len(the_plan.due)} clone{_s(len(the_plan.due))} ({gc.human(the_plan.total.bytes)})\n")

        def progress(c: Clone) -> None:
            if c.removed:
                kept = f"; its unsaved work saved as {', '.join(c.saved)}" if c.saved else ""
                say(f"  removed {c.run_id}/clone ({_why(c)}): {gc.human(c.size.bytes)}{kept}\n")
            else:
                sys.stderr.write(f"  could not remove {c.run_id}/clone: {c.error}\n")
            (sys.stderr if as_json else sys.stdout).flush()

        for clone in the_plan.due:
            gc.remove(clone, progress, discard_unsaved=discard_unsaved)
    if as_json:
        sys.stdout.write(jsonout.document(the_plan.to_dict(dry_run)))
    else:
        _summary(the_plan, dry_run)
    raise typer.Exit(1 if any(c.error for c in the_plan.due) else 0)


def _days(option: str, given: float | None, configured: float) -> float:
    if given is None:
        return configured
    if not (math.isfinite(given) and given >= 0):
        raise UserError(f"{option} must be a number of days, 0 or more, got {given}")
    return given


def _unsaved(c: Clone) -> str:
    """What a dry run says of a clone's unsaved work: it is saved first, unless discarded."""
    if not c.has_unsaved or c.unsaved is None:
        return ""
    paths, commits = c.unsaved
    parts = [f"{n} {what}{_s(n)}" for n, what in ((paths, "changed path"), (commits, "unpushed commit")) if n]
    return f"; unsaved work ({', '.join(parts)}) goes to {c.run_id}/unsaved/ first"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _why(c: Clone) -> str:
    flagged = f", {c.flagged}" if c.flagged and c.flagged != c.state else ""
    resumed = ", finishing an interrupted gc" if c.resumed else ""
    return f"{c.state}{flagged}, ended {c.age_days:.1f} days ago, retention {c.keep_days:g} days{resumed}"


def _summary(p: Plan, dry_run: bool) -> None:
    from orchestrator.runs.gc import human

    total = p.total
    shared = " (the rest is hard-linked from outside the clone)" if total.frees != total.bytes else ""
    if dry_run:
        if p.due:
            typer.echo(
                f"would remove {len(p.due)} clone{_s(len(p.due))}: {human(total.bytes)} on disk, "
                f"frees {human(total.frees)}{shared}"
            )
            for c in p.due:
                typer.echo(f"  {c.run_id}/clone  {human(c.size.bytes):>10}  ({_why(c)}){_unsaved(c)}")
        else:
            typer.echo("no clone is past its retention")
    else:
        done = [c for c in p.due if c.removed]
        if p.due:
            freed = sum(c.size.frees for c in done)
            typer.echo(
                f"removed {len(done)} of {len(p.due)} clone{_s(len(p.due))}: "
                f"{human(sum(c.size.bytes for c in done))} on disk, {human(freed)} freed{shared}"
            )
        else:
            typer.echo("no clone is past its retention")
    if p.kept:
        nxt = p.kept[0]
        left = max(0.0, nxt.keep_days - nxt.age_days)
        typer.echo(
            f"kept {len(p.kept)} clone{_s(len(p.kept))} within retention (next due: {nxt.run_id} in {left:.1f} days)"
        )
    for run_id, _state, why in p.untouched:
        typer.echo(f"left alone: {run_id} ({why})")
    days = (
        f"{p.retention.days:g} days ({p.retention.flagged_days:g} for runs that spiraled, failed, stalled or were lost)"
    )
    typer.echo(f"retention: {days}")
