"""Crash-safe file writes: temp file in the same folder, fsync, rename."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def _mode_for(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual 0666 less the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Readers see the old file or the new one, never a part.

    `durable=False` skips the fsyncs, for a cache its reader rebuilds when unreadable: after a power
    loss the file may hold the old version or nothing readable, which is fine for a cache only.
    """
    target = path.resolve() if path.is_symlink() else path  # replace what a link points at, not the link
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), _mode_for(target))
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))
