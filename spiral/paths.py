"""Path helpers: debris names, workdir-relative paths (pure)."""

from __future__ import annotations

import posixpath
import re


def is_debris(path: str, basename_re: re.Pattern[str], stem_re: re.Pattern[str]) -> bool:
    """True for throwaway files: `tmp_x.py`, `debug_out.txt`, `repro_v2.py`, `case_test3.sh`."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if basename_re.search(name):
        return True
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return bool(stem_re.search(stem))


def relativize(path: str, workdir: str | None, cwd: str | None = None) -> str:
    """`path` relative to `workdir` when it lies inside it, else unchanged.

    A relative path is first resolved against `cwd` (the command's working
    directory) when that is known and lies inside the workdir.
    """
    if not path:
        return path
    if not path.startswith("/"):
        if cwd and workdir and cwd != workdir and cwd.startswith(workdir.rstrip("/") + "/"):
            path = posixpath.join(cwd, path)
        else:
            return posixpath.normpath(path) if "./" in path or "/." in path else path
    if workdir:
        root = workdir.rstrip("/") + "/"
        if path.startswith(root):
            return posixpath.normpath(path[len(root) :])
    return path
