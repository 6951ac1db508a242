"""Agents' text as a person can read it on a page: what would hide or reorder it is made visible."""

from __future__ import annotations


def printable(line: str) -> str:
    """`line` with a NUL, a terminal escape or a bidi override (which reorders what follows it on screen)
    shown as `?`; a tab is kept."""
    return line if line.isprintable() else "".join(c if c.isprintable() or c == "\t" else "?" for c in line)


def plotly_label(text: str) -> str:
    """`text` shown as it is in a Plotly label or hover: they read a subset of HTML, so `grep '<br>'` or
    `a<b and c>d` in a command would show as something else (Plotly decodes the entities back)."""
    return printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
