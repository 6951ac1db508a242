"""Whole lines of a file that is still being appended to, read from a byte offset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

_CHUNK = 4 << 20


def whole_lines(path: Path, offset: int) -> Iterator[tuple[bytes, int]]:
    """(line, offset after it) for whole lines after `offset`, read in chunks.

    A torn last line is left for the next call, once its newline arrives.
    """
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        fh.seek(offset)
        pending = b""
        while chunk := fh.read(_CHUNK):
            data = pending + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                continue
            # split on \n only, as replay does: a \r inside a line does not end it
            start = 0
            find = data.find
            while start <= cut:
                nl = find(b"\n", start)
                yield data[start : nl + 1], offset + nl + 1
                start = nl + 1
            offset += cut + 1
            pending = data[cut + 1 :]
