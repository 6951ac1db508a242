"""Signal 2: the same agent-made script, or the same file, again and again."""

from __future__ import annotations

from spiral import model
from spiral.observe import Observed
from spiral.signals._count import short
from spiral.verdict import Finding
from spiral.window import SlidingCounter

NAME = "repetition"
FILE_TOOLS = model.FILE_TOOLS | {model.BASH}


def script_key(e: Observed, tracked: frozenset[str]) -> str | None:
    """Bash runs of a script that is not in the repo's tracked files."""
    return e.script if e.tool == model.BASH and e.script not in tracked else None


def file_key(e: Observed) -> str | None:
    return e.file if e.tool in FILE_TOOLS else None


def check(
    scripts: SlidingCounter, files: SlidingCounter, *, same_script: int, same_file: int, weight: float
) -> Finding | None:
    n = len(scripts)
    if scripts.max_count >= same_script:  # cheap test first: most ticks fire nothing
        script, s_count = scripts.top()
        if script is not None:
            return Finding(
                NAME, weight, f"{s_count} of {n} tool calls ran {short(script)} (made during the run)", script
            )
    if files.max_count >= same_file:
        path, f_count = files.top()
        if path is not None:
            return Finding(NAME, weight, f"{f_count} of {n} tool calls hit {short(path)}", path)
    return None
