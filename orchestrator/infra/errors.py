"""Errors a user caused: shown as one line, exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a malformed file, an unknown run, a missing path."""

    exit_code = 2
