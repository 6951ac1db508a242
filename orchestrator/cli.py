"""The command line: parse, call a plain function, render. Nothing else lives here."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from orchestrator.errors import UserError

app = typer.Typer(
    help="Run coding agents on tickets in fresh clones; page once when a run spirals.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
corpus_app = typer.Typer(help="Recorded runs: turn real agent logs into corpus cases.",
                         no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]


def _out() -> Console:
    # a pipe gets a wide table rather than rich's 80-column default
    width = None if sys.stdout.isatty() else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def _print_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


@app.command()
def replay(
    case: Annotated[Path, typer.Argument(help="A case folder (holding case.yaml and events.jsonl).")],
    as_json: JsonOpt = False,
) -> None:
    """Replay one recorded run through the detector on a 30 s clock.

    Says whether, when and why a page would have been sent, and whether that
    matches the case's `expect:`. Exit 0 when it matches, 1 when not.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.render import replay_detail
    from orchestrator.replay import replay_case

    if not (case / "case.yaml").is_file():
        raise UserError(f"{case}: not a case folder (no case.yaml)")
    result = replay_case(case, BucketsFile()).to_dict()
    if as_json:
        _print_json(result)
    else:
        replay_detail(result, _out())
    raise typer.Exit(0 if result["pass"] else 1)


@app.command("eval")
def eval_cmd(
    dirs: Annotated[list[Path], typer.Argument(help="Folders to search for case folders.")],
    as_json: JsonOpt = False,
) -> None:
    """Replay every case found under the folders; print the confusion counts.

    Exit 0 when every case passes, 1 otherwise.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.render import eval_summary
    from orchestrator.replay import evaluate

    summary = evaluate(dirs, BucketsFile())
    if as_json:
        _print_json(summary)
    else:
        eval_summary(summary, _out())
    raise typer.Exit(0 if summary["failed"] == 0 else 1)


@corpus_app.command("import")
def corpus_import(
    file: Annotated[Path, typer.Argument(help="A native agent log (.jsonl, or .jsonl.gz).")],
    fmt: Annotated[str, typer.Option("--format", help="claude-transcript | claude-stream-json | codex-json | generic")],
    bucket: Annotated[str, typer.Option(help="small | medium | big")],
    out: Annotated[Path, typer.Option(help="The case folder to create (must not exist yet).")],
    case_id: Annotated[Optional[str], typer.Option("--id", help="Case id; default: from the folder name.")] = None,
    spiral: Annotated[bool, typer.Option("--spiral/--healthy", help="The label: must it page?")] = False,
    spacing: Annotated[float, typer.Option(help="Seconds between lines that carry no timestamp.")] = 5.0,
) -> None:
    """Turn a real recorded log into a corpus case (events only, no snapshots).

    Timestamps come from the log's own lines (transcripts, Codex rollouts);
    lines without one are spaced `--spacing` seconds after the previous line.
    """
    from orchestrator.importer import import_log

    summary = import_log(file, fmt=fmt, bucket=bucket, out=out, case_id=case_id,
                         spiral=spiral, spacing=spacing)
    typer.echo(f"wrote {out}: {summary['lines']} lines, {summary['tool_calls']} tool calls, "
               f"{summary['skipped']} skipped, {summary['minutes']:.1f} min")


@app.command()
def launch(
    ticket: Annotated[str, typer.Argument(help="A ticket file (Markdown + YAML front matter), or a ticket id "
                                               "looked up in the configured tickets_dir.")],
    as_json: JsonOpt = False,
) -> None:
    """Clone the ticket's repo fresh, start its agent detached, print the run id.

    The agent runs under a per-run supervisor that outlives this command; its
    output is captured to runs/<id>/events.jsonl and the clone is snapshotted
    every 30 s. Follow it with `status`, `logs ID -f`; stop it with `kill ID`.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.launch import launch as do_launch
    from orchestrator.userconfig import load

    res = do_launch(ticket, load(), BucketsFile())
    if as_json:
        _print_json({"version": 1, "run_id": res.run_id, "state": res.state, "reason": res.reason,
                     "run_dir": str(res.run_dir)})
    else:
        typer.echo(res.run_id)
        if res.state not in ("running", "launching"):
            sys.stderr.write(f"run {res.run_id} {res.state}: {res.reason}\n")
    raise typer.Exit(0 if res.state in ("running", "launching", "succeeded") else 1)


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Every run at a glance: state, elapsed vs expected, region, spiral signals, page.

    Also enforces liveness on the way (dead, silent or overdue runs are
    stopped and recorded), so nothing stays `running` without a process.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.render import status_table
    from orchestrator.userconfig import load
    from orchestrator.notifier import from_config
    from orchestrator.watch import one_pass

    cfg = load()
    rows = [v.to_dict() for v in one_pass(BucketsFile(), cfg, from_config(cfg))]
    if as_json:
        _print_json({"version": 1, "runs": rows})
        return
    if not rows:
        from orchestrator.home import runs_dir

        typer.echo(f"no runs yet in {runs_dir()}; start one with `./dev.sh launch TICKET` or try `./dev.sh demo`")
        return
    _out().print(status_table(rows))


@app.command()
def watch(
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit.")] = False,
    tick: Annotated[float, typer.Option(help="Seconds between passes.", min=0.1)] = 30.0,
) -> None:
    """The background watcher: each tick, evaluate every active run, enforce
    liveness, and send due notifications (retrying failed ones with backoff).

    Detection must not depend on anyone calling `status`: keep one watcher
    running (only one may run at a time; a second one exits with a message).
    `status` sends too; either way a run's page goes out once.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.userconfig import load
    from orchestrator.watch import watch as do_watch

    def report(views: list) -> None:
        for v in views:
            for ev in v.events:
                if ev != "evaluated":
                    typer.echo(f"{v.run_id}: {ev}")

    from orchestrator.notifier import from_config

    cfg = load()
    do_watch(BucketsFile(), cfg, once=once, tick_s=tick, report=report, notifier=from_config(cfg))


@app.command()
def kill(run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]) -> None:
    """Stop a run's whole process tree (SIGINT, SIGTERM, SIGKILL, confirmed) and record `killed`."""
    from orchestrator.kill import kill_run
    from orchestrator.monitor import find_run

    final = kill_run(find_run(run))
    typer.echo(f"{final['run_id']}: {final['state']} ({final.get('reason')})")


@app.command()
def logs(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing new calls until the run ends.")] = False,
) -> None:
    """A run's tool calls, one readable line each: time, minute, tool, command or file."""
    from orchestrator.logs import tool_calls
    from orchestrator.monitor import find_run

    for line in tool_calls(find_run(run), follow):
        typer.echo(line)


@app.command()
def demo(
    speed: Annotated[float, typer.Option(help="Clock speed-up: recorded minutes per real minute.",
                                         min=1, max=1000)] = 60.0,
) -> None:
    """The embedded default: two demo-agent runs, one healthy and one spiraling.

    Builds a sample repo, launches the built-in demo agent on two tickets
    (re-enacting recorded corpus runs on a 60x clock), shows status live and
    ends, within 3 minutes, with which run would have paged and why. Needs no
    agent, no API key and no network.
    """
    from orchestrator.config import BucketsFile
    from orchestrator.demo import run_demo, summary_lines
    from orchestrator.home import runs_dir
    from orchestrator.notifier import Notifier, Target
    from orchestrator.sink import Sink
    from orchestrator.render import status_table
    from orchestrator.userconfig import load

    console = _out()
    last = [-10.0]

    def show(views: list, t: float) -> None:
        if t - last[0] >= 10 or all(v.state.get("state") not in ("running", "launching") for v in views):
            last[0] = t
            console.print(f"[bold]t+{t:.0f}s[/]")
            console.print(status_table([v.to_dict() for v in views]))

    console.print(f"demo: two recorded runs re-enacted at {speed:g}x; runs land in {runs_dir()}")
    with Sink() as sink:
        # the demo's pages go to a receiver it runs itself on 127.0.0.1, not to your phone
        notifier = Notifier(targets=[Target(sink.url())], events=("spiral", "stalled"))
        console.print(f"notifications go to a local sink: {sink.url()}")
        views = run_demo(BucketsFile(), load(), show, speed, notifier)
        received = sink.messages()
    console.print("[bold]summary[/]")
    for line in summary_lines(views):
        console.print(line, markup=False)
    console.print(f"[bold]delivered to the local sink ({len(received)} notification(s))[/]")
    for msg in received:
        body = msg["body"]
        console.print(f"--- {body.get('title', '')}", markup=False)
        console.print(str(body.get("message", body)), markup=False)


def main() -> None:
    try:
        app()
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
