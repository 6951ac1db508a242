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


def main() -> None:
    try:
        app()
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
