"""The command line: parse, call a plain function, render. Nothing else lives here."""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from orchestrator import jsonout  # json only: cheap enough for every command
from orchestrator.commands.calibrate import calibrate_command
from orchestrator.commands.diff import diff_command
from orchestrator.commands.feedback import feedback_command
from orchestrator.commands.gc import gc_command
from orchestrator.commands.history import history_command
from orchestrator.commands.kill import kill_command
from orchestrator.commands.launch import launch_command
from orchestrator.commands.nudge import nudge_command
from orchestrator.commands.options import JsonOpt
from orchestrator.commands.report import report_command
from orchestrator.commands.serve import serve_command
from orchestrator.commands.snooze import snooze_command
from orchestrator.infra import gc_policy
from orchestrator.infra.errors import UserError

if TYPE_CHECKING:
    from orchestrator.runs.view import RunView

app = typer.Typer(
    help="Run coding agents on tickets in fresh clones; page once when a run spirals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
corpus_app = typer.Typer(help="Recorded runs: turn real agent logs into corpus cases.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
ledger_app = typer.Typer(help="The DuckDB run ledger: an index over the run folders.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


def _out() -> Console:
    # a pipe gets a wide table rather than rich's 80-column default
    width = None if sys.stdout.isatty() else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def _print_json(obj: Mapping[str, Any]) -> None:
    sys.stdout.write(jsonout.document(obj))


@app.command()
def replay(
    case: Annotated[Path, typer.Argument(help="A case folder (holding case.yaml and events.jsonl).")],
    as_json: JsonOpt = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also draw the case's timeline as one HTML file here (as `report`).")
    ] = None,
) -> None:
    """Replay one recorded run through the detector on a 30 s clock.

    Says whether, when and why a page would have been sent, and whether that
    matches the case's `expect:`. Exit 0 when it matches, 1 when not.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.corpus.replay import replay_case
    from orchestrator.record.layout import CaseFiles
    from orchestrator.tables import replay_detail

    if not CaseFiles(case).is_case():
        raise UserError(f"{case}: not a case folder (no case.yaml)")
    result = replay_case(case, BucketsFile()).to_dict()
    if report is not None:
        from orchestrator.commands.report import write_case_report

        sys.stderr.write(f"report: {write_case_report(case, report)}\n")  # stdout keeps the table or JSON
    if as_json:
        _print_json(result)
    else:
        replay_detail(result, _out())
    raise typer.Exit(0 if result["pass"] else 1)


@app.command("eval")
def eval_cmd(
    dirs: Annotated[list[Path] | None, typer.Argument(help="Folders to search for case folders.")] = None,
    as_json: JsonOpt = False,
    bench: Annotated[bool, typer.Option("--bench", help="Run the detection benchmark instead (see above).")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="With --bench / --real-sessions: the Markdown.")] = False,
    per_family: Annotated[
        int, typer.Option(help="With --bench: scenarios per family (1 to 1000).", min=1, max=1000)
    ] = 40,
    keep: Annotated[Path | None, typer.Option(help="With --bench: keep the generated cases in this folder.")] = None,
    real_sessions: Annotated[
        bool,
        typer.Option(
            "--real-sessions",
            help="Replay the labelled real sessions of realsessions/labels.yaml (the cache: realsessions/README.md): "
            "per half (dev / held-back), source and bucket, beside the baselines.",
        ),
    ] = False,
    headline: Annotated[
        bool, typer.Option("--headline", help="With --real-sessions: only the headline tables of docs/detection.md.")
    ] = False,
) -> None:
    """Replay every case found under the folders; print the confusion counts.

    Exit 0 when every case passes, 1 otherwise. With --bench, generate the
    benchmark's labelled scenario families and compare our detector with its
    ablations and simple baselines (exit 0).
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.corpus.replay import evaluate
    from orchestrator.tables import eval_summary

    if bench:
        _bench(as_json, markdown, per_family, keep)
        return
    if real_sessions:
        _real_sessions(as_json, markdown, headline)
        return
    if not dirs:
        raise UserError("eval needs at least one folder of cases (or --bench)")
    summary = evaluate(dirs, BucketsFile())
    if as_json:
        _print_json(summary)
    else:
        eval_summary(summary, _out())
    raise typer.Exit(0 if summary["failed"] == 0 else 1)


def _bench(as_json: bool, markdown: bool, per_family: int, keep: Path | None) -> None:
    from orchestrator.corpus.benchmark.render import markdown as to_markdown
    from orchestrator.corpus.benchmark.runner import run

    def say(msg: str) -> None:
        sys.stderr.write(f"bench: {msg}\n")

    # optional, never shipped: only a source checkout has ../shared/real-traces beside it
    real_traces = Path(__file__).resolve().parent.parent.parent / "shared" / "real-traces"
    if not real_traces.is_dir():
        say(f"no real traces at {real_traces}: the real-trace table is skipped")
    report = run(per_family, keep=keep, progress=say, real_traces=real_traces)
    if as_json:
        _print_json(report)
    elif markdown:
        sys.stdout.write(to_markdown(report))
    else:
        from rich.markdown import Markdown

        _out().print(Markdown(to_markdown(report, with_timing=True)))


def _real_sessions(as_json: bool, markdown: bool, headline: bool = False) -> None:
    from orchestrator.corpus.benchmark import realsessions as rs
    from orchestrator.ledger import prices
    from orchestrator.ledger.calibrate import bucket_from

    report = rs.scan(
        say=lambda msg: sys.stderr.write(f"real-sessions: {msg}\n"),
        price=lambda spend: prices.cost(spend, {})[0],
        calibrate=lambda minutes, calls: bucket_from(minutes, calls, 5),
    )
    if headline:
        sys.stdout.write(rs.headline(report))
        return
    sys.stdout.write(jsonout.document(report) if as_json else rs.markdown(report) if markdown else rs.text(report))


@corpus_app.command("import")
def corpus_import(
    file: Annotated[Path, typer.Argument(help="A native agent log (.jsonl, or .jsonl.gz).")],
    fmt: Annotated[str, typer.Option("--format", help="claude-transcript | claude-stream-json | codex-json | generic")],
    bucket: Annotated[str, typer.Option(help="small | medium | big")],
    out: Annotated[Path, typer.Option(help="The case folder to create (must not exist yet).")],
    case_id: Annotated[str | None, typer.Option("--id", help="Case id; default: from the folder name.")] = None,
    spiral: Annotated[bool, typer.Option("--spiral/--healthy", help="The label: must it page?")] = False,
    spacing: Annotated[float, typer.Option(help="Seconds between lines that carry no timestamp.")] = 5.0,
) -> None:
    """Turn a real recorded log into a corpus case (events only, no snapshots).

    Timestamps come from the log's own lines (transcripts, Codex rollouts);
    lines without one are spaced `--spacing` seconds after the previous line.
    """
    from orchestrator.corpus.importer import import_log
    from orchestrator.tables import import_summary

    summary = import_log(file, fmt=fmt, bucket=bucket, out=out, case_id=case_id, spiral=spiral, spacing=spacing)
    typer.echo(import_summary(out, summary))


app.command("launch")(launch_command)  # orchestrator/commands/launch.py


@app.command()
def status(
    as_json: JsonOpt = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="Every column: ticket, bucket, spend, guidance, reason.")
    ] = False,
) -> None:
    """Every run at a glance: state, elapsed vs expected, region, spiral signals, page, why it ended.

    Also enforces liveness on the way (dead, silent or overdue runs are
    stopped and recorded), so nothing stays `running` without a process. A run
    whose cache must be rebuilt from a long log (an upgrade) is left to the
    watcher: shown as last recorded, `evaluating (N of M runs)`.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.notify.channels import NO_TARGET, from_config
    from orchestrator.runs.watch import one_pass
    from orchestrator.tables import no_runs_yet, status_table, unchecked

    cfg = load()
    notifier = from_config(cfg)
    views = one_pass(BucketsFile(), cfg, notifier, leave_cold=True)  # a cold run: left to the watcher
    sys.stderr.writelines(unchecked(views))
    if not notifier.configured and views and not as_json:
        sys.stderr.write(f"status: {NO_TARGET}\n")
    rows = [v.to_dict() for v in views]
    if as_json:
        _print_json({"runs": rows})
    elif rows:
        _out().print(status_table(rows, wide=wide))
    else:
        typer.echo(no_runs_yet())


@app.command()
def watch(
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit.")] = False,
    tick: Annotated[float, typer.Option(help="Seconds between passes (0.1 to a day).")] = 30.0,
    idle_exit: Annotated[
        float | None,
        typer.Option(
            help="Exit once no run has been active, and no notice waited to be retried, for this many seconds (at least 0.1)."
        ),
    ] = None,
    wake: Annotated[
        bool,
        typer.Option(
            "--wake/--no-wake",
            help="Between ticks, evaluate a live run as soon as its log grows (default), "
            "so a page goes out about a second after the trip; --no-wake evaluates at ticks only.",
        ),
    ] = True,
) -> None:
    """The background watcher: each tick, evaluate every active run, enforce
    liveness, and send due notifications (retrying failed ones with backoff).
    Between ticks, a run whose log grew is evaluated within about a second.

    Detection must not depend on anyone calling `status`: keep one watcher
    running (only one may run at a time; a second one exits with a message).
    `status` sends too; either way a run's page goes out once.
    """
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.notify.channels import check_targets, from_config
    from orchestrator.runs.watch import watch as do_watch
    from orchestrator.tables import unchecked, watch_events

    def report(views: list[RunView]) -> None:
        sys.stderr.writelines(unchecked(views))
        for text in watch_events(views):
            typer.echo(text)

    day = 86400.0  # time.sleep refuses far longer, and nobody means it
    if not 0.1 <= tick <= day:  # NaN fails this too
        raise UserError(f"--tick must be a number of seconds from 0.1 to {day:g}, got {tick}")
    if idle_exit is not None and not 0.1 <= idle_exit < float("inf"):
        raise UserError(f"--idle-exit must be a finite number of seconds (at least 0.1), got {idle_exit}")
    cfg = load()
    notifier = from_config(cfg)
    try:  # a target no page could reach is said now, not found by the first page; liveness goes on regardless
        check_targets(notifier, cfg)
    except UserError as exc:
        sys.stderr.write(f"warning: {exc}; its pages will fail, the rest of the watching goes on\n")
    do_watch(
        BucketsFile(), cfg, once=once, tick_s=tick, report=report, notifier=notifier, idle_exit_s=idle_exit, wake=wake
    )


_COMMANDS: dict[str, Any] = {
    "nudge": nudge_command,
    "snooze": snooze_command,
    "kill": kill_command,
    "feedback": feedback_command,
    "gc": gc_command,
    "report": report_command,
}
for _name, _command in {**_COMMANDS, "diff": diff_command, "serve": serve_command}.items():  # commands/<name>.py
    app.command(_name)(_command)


@app.command()
def logs(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing new calls until the run ends.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object a line (JSON Lines), with a version key.")
    ] = False,
) -> None:
    """A run's tool calls, one line each: time, minute, tool, command or file; failed and denied calls marked."""
    from orchestrator.runs.logs import tool_calls
    from orchestrator.runs.monitor import find_run, refresh_now

    run_dir = find_run(run)
    # while the log is quiet, what a watcher pass does for this run: a dead one is recorded, and -f ends
    for call in tool_calls(run_dir, follow, check=(lambda: refresh_now(run_dir)) if follow else None):
        if as_json:
            sys.stdout.write(jsonout.line(call))
            sys.stdout.flush()
        else:
            typer.echo(call["line"])


@app.command()
def demo(
    speed: Annotated[
        float, typer.Option(help="Clock speed-up: recorded minutes per real minute.", min=1, max=1000)
    ] = 60.0,
) -> None:
    """The embedded default: two demo-agent runs, one healthy and one spiraling.

    Builds a sample repo, launches the built-in demo agent on two tickets
    (re-enacting recorded corpus runs on a 60x clock), shows status live and
    ends, within 3 minutes, with which run would have paged and why. Needs no
    agent, no API key and no network.
    """
    from orchestrator.demo.console import show_demo

    show_demo(_out(), speed)


@ledger_app.command("rebuild")
def ledger_rebuild() -> None:
    """Drop the ledger's rows and re-read every run folder (they are the source of truth)."""
    from orchestrator.config import load
    from orchestrator.ledger.store import ledger_path, refresh
    from orchestrator.tables import rebuild_summary

    def progress(i: int, n: int) -> None:
        sys.stderr.write(f"\r  {i}/{n} run folders...")

    stats = refresh(load().prices, rebuild=True, progress=progress)
    sys.stderr.write("\r" + " " * 40 + "\r")
    typer.echo(rebuild_summary(ledger_path(), stats))


app.command("history")(history_command)  # orchestrator/commands/history.py


app.command("calibrate")(calibrate_command)  # orchestrator/commands/calibrate.py


def main() -> None:
    gc_policy.for_the_process()
    for stream in (sys.stdout, sys.stderr):
        # a terminal or pipe that cannot show a character (LANG=C, PYTHONIOENCODING=ascii) gets a "?"
        # for it, not a traceback halfway through a table
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    try:
        app()
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except OSError as exc:  # the state folder (or a file named on the command line) the system refused
        name = str(exc.filename or "")
        where = f"{name[:60]}{'...' if len(name) > 60 else ''}: " if name else ""
        sys.stderr.write(f"error: {where}{exc.strerror or exc}\n")
        sys.exit(2)
