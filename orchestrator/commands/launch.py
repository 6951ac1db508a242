"""The `launch` command's options and output (the command line registers it; launch.py does the work)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt
from orchestrator.infra.errors import UserError

if TYPE_CHECKING:
    from orchestrator.config import UserConfig
    from orchestrator.runs.launch import Launched


def _all_tickets(folder: Path | None) -> list[str]:
    if folder is None:
        raise UserError("--all needs tickets_dir in config.yaml (the folder of ticket files)")
    try:
        found = sorted({*folder.glob("*.md"), *folder.glob("*/ticket.md")})
    except OSError as exc:
        raise UserError(f"{folder}: cannot list tickets: {exc.strerror}") from None
    if not found:
        raise UserError(f"{folder}: no tickets (*.md or */ticket.md)")
    return [str(p) for p in found]


def launch_command(
    tickets: Annotated[
        list[str] | None,
        typer.Argument(help="Ticket files (Markdown + YAML front matter) or ticket ids in tickets_dir."),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every ticket in tickets_dir (*.md, */ticket.md).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Clone each ticket's repo fresh, start its agent detached (or queue it), print the run ids.

    Each agent runs under a per-run supervisor that outlives this command; its
    output is captured to runs/<id>/events.jsonl and the clone is snapshotted
    every 30 s. With max_parallel in config.yaml, runs past the cap wait in
    state `queued` and the watcher starts them as slots free (`status` shows
    their place; `kill ID` cancels one). Follow runs with `status`, `logs ID -f`.

    Exit 0: every run started or is queued. Exit 1: a run was made but failed or
    was stopped before its agent started (its id is printed and its record
    kept). Exit 2: a ticket or the config was refused and nothing was launched.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.runs.launch import launch_many

    cfg = load()
    refs = list(tickets or [])
    if every:
        refs += _all_tickets(cfg.tickets_dir)
    if not refs:
        raise UserError("launch needs a ticket (a file or an id), or --all")
    many = launch_many(refs, cfg, BucketsFile())
    if as_json:  # one ticket: its row alone; several: {"runs": [...]}
        sys.stdout.write(jsonout.document(_row(many[0]) if len(many) == 1 else {"runs": [_row(r) for r in many]}))
    else:
        for res in many:
            typer.echo(res.run_id)
    for res in many:
        _say(res)
    if any(not r.problem for r in many):  # a run to page about: say if pages would go nowhere
        _say_no_target(cfg)
    # a run that was queued and then failed or was stopped before its agent started is a failed check
    # (exit 1, its record kept), not bad input: what `launch` refuses outright (a bad ticket) exits 2
    raise typer.Exit(1 if any(r.problem for r in many) else 0)


def _row(r: Launched) -> dict[str, object]:
    return {"run_id": r.run_id, "state": r.state, "reason": r.reason, "run_dir": str(r.run_dir)}


def _say_no_target(cfg: UserConfig) -> None:
    """Once per launch: with no notification target, pages and notices go nowhere."""
    from orchestrator.notify.channels import NO_TARGET, from_config
    from orchestrator.runs.pipeline import NOTICES

    try:
        configured = from_config(cfg, NOTICES).configured
    except UserError:
        return  # a bad notify block is said by the watcher and `status`, with its own message
    if not configured:
        sys.stderr.write(f"launch: {NO_TARGET}\n")


def _say(r: Launched) -> None:
    if r.problem:
        sys.stderr.write(f"{r.problem}\n")
    elif r.setting_up:
        sys.stderr.write(f"run {r.run_id} launching: its setup runs first (setup.log in its folder)\n")
    elif r.state == "queued":
        sys.stderr.write(f"run {r.run_id} queued: the watcher starts it when a slot frees\n")
    elif r.state not in ("running", "launching"):
        sys.stderr.write(f"run {r.run_id} {r.state}: {r.reason}\n")
