"""Whole lines of a file that is still being appended to, read from a byte offset."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def open_at(path: Path, offset: int = 0) -> BinaryIO:
    """The file read from byte `offset` (empty when it does not exist yet), buffered; binary
    readline splits on \n only, as replay does: a \r inside a line does not end it."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return io.BytesIO()
    fh.seek(offset)
    return fh


def whole_lines(path: Path, offset: int) -> Iterator[tuple[bytes, int]]:
    """(line, offset after it) for whole lines after `offset`, read buffered.

    A torn last line is left for the next call, once its newline arrives.
    """
    with open_at(path, offset) as fh:
        for line in fh:
            if line[-1:] != b"\n":
                return  # torn: its end is not written yet
            offset += len(line)
            yield line, offset


def lines_upto(path: Path, offset: int, until: int, limit: int) -> list[tuple[bytes, int]]:
    """At most `limit` of `whole_lines` after `offset`, each ending at or before byte `until`, taken in
    one call (a caller working a batch at a time does not resume a generator for each line)."""
    out: list[tuple[bytes, int]] = []
    for line, end in whole_lines(path, offset):
        if end > until:
            break
        out.append((line, end))
        if len(out) >= limit:
            break
    return out
