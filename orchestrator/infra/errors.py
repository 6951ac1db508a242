"""Errors a user caused: shown as one line, exit code 2."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input: a malformed file, an unknown run, a missing path."""

    exit_code = 2


def read_text(path: Path) -> str:
    """A UTF-8 text file's contents, or a UserError naming the file and what went wrong."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
