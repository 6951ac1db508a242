"""A shell command line as its parts: simple commands with the separator before each and the files
they redirect into (pure, cached per distinct command text).

`spiral/shellcmd.py` reads what a command runs; this keeps what that reading drops, for the
readers that need it: which files a command writes (`spiral/shellwrites.py`) and which command of a
chain is the check the agent ran (`spiral/intent.py`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from spiral import shellcmd

_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_READ_REDIRECTS = frozenset({"<", "<<", "<<<", "<&", ">&"})
_CACHED = 65536  # longer commands are parsed every time (and never kept as a cache key)


class Part(NamedTuple):
    argv: tuple[str, ...]  # the simple command's words, redirections taken out
    sep: str  # the separator before it: "" (first), ";", "&&", "||", "|", "&", "(" ...
    writes_to: tuple[str, ...]  # the targets of its `>` / `>>` / `&>` redirections
    prefix: str  # where `cd` had moved the line before this part ("" where unknown or unmoved)


def parts(command: str) -> tuple[Part, ...]:
    """The simple commands of `command` (wrappers like `bash -lc '...'` unwrapped, here-document
    bodies dropped), each with its separator, its write redirections and the `cd` prefix."""
    if len(command) <= _CACHED:
        return _parts_cached(command)
    return _parts(command[: shellcmd.ANALYSED_CHARS])


def _parts(command: str) -> tuple[Part, ...]:
    inner = shellcmd._drop_heredoc_bodies(shellcmd.unwrap(command))
    tokens = shellcmd._tokens(shellcmd._newlines_to_separators(inner))
    out: list[Part] = []
    cur: list[str] = []
    writes: list[str] = []
    sep = ""
    prefix = ""
    i, n = 0, len(tokens)
    while i <= n:
        tok = tokens[i] if i < n else ";"
        if tok in shellcmd._SEPARATORS or (not cur and tok in shellcmd._KEYWORDS):
            if cur or writes:
                argv = tuple(cur)
                out.append(Part(argv, sep, tuple(writes), prefix))
                prefix = _after_cd(argv, prefix)
            cur, writes = [], []
            if tok in shellcmd._SEPARATORS:
                sep = tok
        elif (
            tok in _WRITE_REDIRECTS
            or tok in _READ_REDIRECTS
            or (set(tok) <= shellcmd._REDIRECT_CHARS and tok.strip("&|"))
        ):
            if i + 1 < n and tok in _WRITE_REDIRECTS:
                writes.append(tokens[i + 1])
            i += 1  # the redirection's target
        elif tok.isdigit() and i + 1 < n and tokens[i + 1] in shellcmd._REDIRECTS:
            pass  # the descriptor number of `2>&1`, `1> out`
        else:
            cur.append(tok)
        i += 1
    return tuple(out)


_parts_cached = lru_cache(maxsize=8192)(_parts)


def _after_cd(argv: tuple[str, ...], prefix: str) -> str:
    if not argv or argv[0] != "cd":
        return prefix
    return shellcmd.after_cd(argv[1] if len(argv) > 1 else "", prefix)
