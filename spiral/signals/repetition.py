"""Signal 2: the same agent-made script, or the same file, again and again."""
from __future__ import annotations

from collections.abc import Sequence

from spiral import model
from spiral.observe import Observed
from spiral.signals._count import short, top
from spiral.verdict import Finding

NAME = "repetition"
_FILE_TOOLS = model.FILE_TOOLS | {model.BASH}


def check(window: Sequence[Observed], tracked: frozenset[str], *, same_script: int,
          same_file: int, weight: float) -> Finding | None:
    n = len(window)
    script, s_count = top(e.script for e in window if e.tool == model.BASH and e.script not in tracked)
    if script is not None and s_count >= same_script:
        return Finding(NAME, weight, f"{s_count} of {n} tool calls ran {short(script)} (made during the run)")
    path, f_count = top(e.file for e in window if e.tool in _FILE_TOOLS)
    if path is not None and f_count >= same_file:
        return Finding(NAME, weight, f"{f_count} of {n} tool calls hit {short(path)}")
    return None
