"""Options shared by the commands."""

from __future__ import annotations

from typing import Annotated

import typer

# the --json option every listing has (the command line uses this one too)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (with a version key) instead of a table.")]
