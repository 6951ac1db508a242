"""Path helpers: debris names, workdir-relative paths (pure)."""

from __future__ import annotations

import posixpath
import re

# equal path sets as one object: the live runs of one repository share its tracked files (a large
# repository's set is megabytes a run); a process-wide memo of a few sets, like the parsing caches
_SHARED_SETS: dict[frozenset[str], frozenset[str]] = {}


def shared_set(paths: frozenset[str]) -> frozenset[str]:
    """`paths`, or the equal set already held (one object for every run of a repository)."""
    got = _SHARED_SETS.get(paths)
    if got is None:
        if len(_SHARED_SETS) >= 32:
            _SHARED_SETS.clear()
        _SHARED_SETS[paths] = got = paths
    return got


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
            rest = path[len(root) :]
            if rest and rest[0] != "." and rest[-1] != "/" and "//" not in rest and "/." not in rest:
                return rest  # nothing for normpath to fold (the common case, kept cheap)
            return posixpath.normpath(rest)
    return path


def scope_pattern(globs: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for a ticket's `scope:` globs, relative to the clone.

    `*` and `?` stay inside one directory, `**` spans any number of them
    (`src/**` is everything under src/, `**/test_*.py` a test file anywhere),
    `[abc]`, `[a-z]` and `[!abc]` are character classes that never match `/`;
    a glob that names a directory (`docs/`) covers what is under it; a leading
    `./` is dropped, and `.` (or `./`, `/`) is the whole clone. Anything else
    is taken literally (no `{a,b}` alternatives).
    """
    parts = []
    for raw in globs:
        glob = raw.strip()
        while glob.startswith("./"):
            glob = glob[2:]
        if glob in ("", ".", "/"):
            parts.append(".*")  # the whole clone
            continue
        directory = glob.endswith("/")
        glob = glob.strip("/")
        parts.append(_glob_regex(glob + "/**" if directory else glob))
    return re.compile("(?:" + "|".join(parts) + r")\Z") if parts else None


def in_scope(path: str, globs: tuple[str, ...]) -> bool:
    pattern = scope_pattern(globs)
    return bool(pattern and pattern.match(path.strip("/")))


def _glob_regex(glob: str) -> str:
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := _class_end(glob, i)) > 0:
            body = glob[i + 1 : end]
            negated = body.startswith("!")
            if negated:
                body = body[1:]
            # a `]` first in the class is a member; the rest is escaped but for ranges
            members = "".join(
                "-" if ch == "-" and 0 < k < len(body) - 1 else re.escape(ch) for k, ch in enumerate(body)
            )
            out.append("(?!/)[" + ("^/" if negated else "") + members + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    """Where the class opened at `start` closes (its first member may be `]`), or -1 for a literal `[`."""
    j = start + 1
    if j < len(glob) and glob[j] == "!":
        j += 1
    j += 1  # the first member, even a `]`
    end = glob.find("]", j)
    return end
