"""The `corpus` command's options and output (the command line registers it as `corpus import`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def corpus_import_command(
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
