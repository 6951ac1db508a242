"""Options shared by the commands."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

# the --json option every listing has (the command line uses this one too)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (with a version key) instead of a table.")]


def console() -> Console:
    """The console a command prints tables to: a pipe gets a wide table, not rich's 80 columns."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def print_json(obj: Mapping[str, Any]) -> None:
    """One JSON document (with the version key) on stdout."""
    from orchestrator import jsonout

    sys.stdout.write(jsonout.document(obj))
