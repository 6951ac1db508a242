"""The forms the clone's steps take in config.yaml and in tickets: a command (`setup:`, `verify:`) and
the files `copy:` brings into a clone from outside the repository. Pure: paths are resolved, never
read (whether a source exists is for `launch` to say, when it matters)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from orchestrator.infra.yamlfile import Complaints

_COMMAND_FORMS = "must be a command: a list of strings (an argv, run without a shell) or one string (run by sh -c)"
_COPY_FORMS = "must be a list of paths, or of {from: PATH, to: PATH IN THE CLONE}"


def command_argv(value: Any, fail: Complaints, where: tuple[Any, ...], name: str) -> list[str]:
    """A command as an argv: a list of strings as is, a string as `sh -c TEXT`; [] for none given."""
    if value is None:
        return []
    if isinstance(value, str):
        if not value.strip() or "\x00" in value:
            raise fail(where, f"{name} must be a non-empty command with no NUL bytes (leave the key out for none)")
        return ["sh", "-c", value]
    if not isinstance(value, list) or not value:
        raise fail(where, f"{name} {_COMMAND_FORMS}")
    for i, word in enumerate(value):
        if not isinstance(word, str) or not word or "\x00" in word:
            raise fail((*where, i), f"{name}[{i}] must be a non-empty string ({name} {_COMMAND_FORMS})")
    return list(value)


def copy_items(value: Any, fail: Complaints, where: tuple[Any, ...], name: str, base: Path) -> list[tuple[str, str]]:
    """`copy:` as (absolute source, destination relative to the clone's root) pairs; [] for none given.

    A source is `~`-expanded and, when relative, taken from `base` (the folder of the file that names
    it). The destination defaults to the source's name at the clone's root; it must stay inside the
    clone and out of `.git`."""
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        raise fail(where, f"{name} {_COPY_FORMS}")
    items: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            source, dest = item, None
        elif isinstance(item, dict) and set(item) <= {"from", "to"} and "from" in item:
            source, dest = item["from"], item.get("to")
        else:
            raise fail((*where, i), f"{name}[{i}] {_COPY_FORMS}")
        if not isinstance(source, str) or not source.strip() or "\x00" in source:
            raise fail((*where, i), f"{name}[{i}]: the source must be a path")
        path = Path(os.path.expanduser(source.strip()))
        path = path if path.is_absolute() else base / path
        if dest is None:
            dest = path.name
        problem = dest_problem(dest)
        if problem is not None:
            raise fail((*where, i), f"{name}[{i}]: {problem}")
        items.append((os.path.normpath(path), str(PurePosixPath(dest.strip()))))
    return items


def dest_problem(dest: Any) -> str | None:
    """Why `dest` cannot be where a copied file lands in the clone, or None."""
    if not isinstance(dest, str) or not dest.strip() or "\x00" in dest or dest.strip() in (".", "/"):
        return "the destination must be a path in the clone"
    parts = PurePosixPath(dest.strip()).parts
    if PurePosixPath(dest.strip()).is_absolute() or ".." in parts:
        return f"the destination {dest!r} must be a relative path inside the clone"
    if parts and parts[0] == ".git":
        return f"the destination {dest!r} is inside .git"
    return None
