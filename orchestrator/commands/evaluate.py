"""The `eval` command's options and output (the command line registers it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import jsonout
from orchestrator.commands.options import JsonOpt, console, print_json
from orchestrator.infra.errors import UserError


def eval_command(
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
    real_traces: Annotated[
        Path | None,
        typer.Option(
            "--real-traces",
            envvar="ORCHESTRATOR_REAL_TRACES",
            help="With --bench: also replay the real agent logs in this folder (dev.sh names ../shared/real-traces).",
        ),
    ] = None,
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
        _bench(as_json, markdown, per_family, keep, real_traces)
        return
    if real_sessions:
        _real_sessions(as_json, markdown, headline)
        return
    if not dirs:
        raise UserError("eval needs at least one folder of cases (or --bench)")
    summary = evaluate(dirs, BucketsFile())
    if as_json:
        print_json(summary)
    else:
        eval_summary(summary, console())
    raise typer.Exit(0 if summary["failed"] == 0 else 1)


def _bench(as_json: bool, markdown: bool, per_family: int, keep: Path | None, real_traces: Path | None) -> None:
    from orchestrator.corpus.benchmark.render import markdown as to_markdown
    from orchestrator.corpus.benchmark.runner import run

    def say(msg: str) -> None:
        sys.stderr.write(f"bench: {msg}\n")

    if real_traces is None:
        say("no --real-traces folder: the real-trace table is skipped")
    elif not real_traces.is_dir():
        say(f"no real traces at {real_traces}: the real-trace table is skipped")
        real_traces = None
    report = run(per_family, keep=keep, progress=say, real_traces=real_traces)
    if as_json:
        print_json(report)
    elif markdown:
        sys.stdout.write(to_markdown(report))
    else:
        from rich.markdown import Markdown

        console().print(Markdown(to_markdown(report, with_timing=True)))


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
