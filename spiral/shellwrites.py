"""Which files a shell command changes: edits made through the shell are edits (pure).

Agents that edit only through the shell (`sed -i`, `cat > f <<EOF`, `tee`, `patch`, `git apply`,
a `python` heredoc that writes a file) change the tree as surely as an Edit tool does, and a
`git checkout -- f` / `git restore f` puts a file back. Without reading these, a replay of such a
run sees nothing touched, `mutation_stall` becomes a timer, and a page can claim an unchanged tree
while the tree changed.

`writes(command)` says what the command line changes, as written (relative paths under the `cd`
the line made, absolute ones as they are: the caller makes them relative to the workdir):

- `paths`: files it writes or creates (redirections, `sed -i`, `perl -i`, `tee`, `cp`/`mv`
  targets, `touch`, a file a `python` program opens for writing);
- `created`: of those, the ones it makes from nothing (`>` / `tee` / heredoc / `touch` / a copy);
- `reverted`: files put back to their committed content (`git checkout [--] f`, `git restore f`);
- `removed`: files it deletes (`rm f`, the source of `mv`);
- `unknown`: it changes files it does not name (`patch`, `git apply`, `git stash`,
  `git checkout .`, `git reset --hard`);
- `reverts_all`: the unnamed change is a revert (`git checkout .`, `git stash`, `git reset --hard`,
  `patch -R`, `git apply -R`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from spiral import shellcmd
from spiral.shellparts import Part, parts

_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
# a python program that writes a file it names: open('f', 'w'), Path('f').write_text(...)
_PY_OPEN = re.compile(r"""\bopen\(\s*(?:r|f)?(['"])([^'"\n{}]{1,200})\1\s*,\s*(?:mode\s*=\s*)?(['"])[wax]b?\+?\3""")
_PY_PATH_WRITE = re.compile(r"""\bPath\(\s*(['"])([^'"\n{}]{1,200})\1\s*\)\s*\.\s*write_(?:text|bytes)\(""")
_PYTHON = re.compile(r"(?:^|[\s/;&|(])python[0-9.]*\b")


class Writes(NamedTuple):
    paths: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    reverted: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unknown: bool = False
    reverts_all: bool = False

    @property
    def any(self) -> bool:
        return bool(self.paths or self.reverted or self.removed or self.unknown)


NONE = Writes()


def writes(command: str) -> Writes:
    """What `command` changes in the tree (see the module's docstring)."""
    if len(command) > 65536:
        return _writes(command)
    return _writes_cached(command)


def _writes(command: str) -> Writes:
    paths: dict[str, None] = {}
    created: dict[str, None] = {}
    reverted: dict[str, None] = {}
    removed: dict[str, None] = {}
    unknown = reverts_all = False
    for part in parts(command):
        for target in part.writes_to:
            f = _file(part, target)
            if f:
                paths[f] = None
                created[f] = None
        argv = shellcmd._strip_prefix(list(part.argv))  # VAR=value, sudo, timeout N ... before the command
        if not argv:
            continue
        base = argv[0].rsplit("/", 1)[-1]
        args = argv[1:]
        if base in ("sed", "gsed") and any(
            a == "--in-place"
            or (a.startswith("-i") and a[:2] == "-i")
            or (a.startswith("-") and not a.startswith("--") and "i" in a[1:] and set(a[1:]) <= set("nErsui"))
            for a in args
        ):
            for f in _sed_files(args):
                paths[_file(part, f) or f] = None
        elif base == "perl" and any(a.startswith("-") and "i" in a and not a.startswith("--") for a in args):
            for f in _after_program(args, ("-e", "-E")):
                paths[_file(part, f) or f] = None
        elif base == "tee":
            for a in args:
                if not a.startswith("-"):
                    f = _file(part, a)
                    if f:
                        paths[f] = created[f] = None
        elif base in ("cp", "mv", "install", "ln") and len(_plain(args)) >= 2:
            plain = _plain(args)
            f = _file(part, plain[-1])
            if f:
                paths[f] = created[f] = None
            if base == "mv":
                for a in plain[:-1]:
                    g = _file(part, a)
                    if g:
                        removed[g] = None
        elif base == "touch":
            for a in _plain(args):
                f = _file(part, a)
                if f:
                    paths[f] = created[f] = None
        elif base in ("rm", "unlink"):
            for a in _plain(args):
                f = _file(part, a)
                if f:
                    removed[f] = None
        elif base == "patch":
            named = _patch_file(args)
            if named:
                paths[_file(part, named) or named] = None
            else:
                unknown = True
            reverts_all = reverts_all or "-R" in args or "--reverse" in args
        elif base == "git" and args:
            u, r_all, back = _git(args)
            unknown, reverts_all = unknown or u, reverts_all or r_all
            for f in back:
                g = _file(part, f)
                if g:
                    reverted[g] = None
    if "open(" in command or "write_" in command:
        if _PYTHON.search(command):
            for m in _PY_OPEN.finditer(command):
                paths[m.group(2)] = None
                created[m.group(2)] = None
            for m in _PY_PATH_WRITE.finditer(command):
                paths[m.group(2)] = None
                created[m.group(2)] = None
    if not (paths or reverted or removed or unknown):
        return NONE
    return Writes(tuple(paths), tuple(created), tuple(reverted), tuple(removed), unknown, reverts_all)


_writes_cached = lru_cache(maxsize=8192)(_writes)


def _file(part: Part, target: str) -> str | None:
    """A redirection or argument target as a path under the line's `cd`, or None when it is no file."""
    if not target or target in _NOT_FILES or target.startswith(("&", "$", "~", "<(", ">(")) or target.isdigit():
        return None
    if target.startswith("/") or not part.prefix:
        return target
    return part.prefix + target


def _plain(args: list[str]) -> list[str]:
    out, rest = [], False
    for a in args:
        if a == "--":
            rest = True
        elif rest or not a.startswith("-"):
            out.append(a)
    return out


def _sed_files(args: list[str]) -> list[str]:
    """The files of `sed -i ...`: after the script (the first plain word) unless -e/-f gave it."""
    script_given = False
    plain: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-e", "-f", "--expression", "--file"):
            script_given, skip = True, True
        elif a.startswith(("--expression=", "--file=")):
            script_given = True
        elif a.startswith("-") and a != "-":
            continue
        else:
            plain.append(a)
    return plain if script_given else plain[1:]


def _after_program(args: list[str], code_flags: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in code_flags:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def _patch_file(args: list[str]) -> str | None:
    """`patch [options] FILE [PATCHFILE]`: the file it patches, when it names one."""
    plain: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("-i", "--input", "-o", "--output", "-d", "--directory", "-p", "-F", "-B", "-z", "-D"):
            skip = True
        elif not a.startswith("-"):
            plain.append(a)
    return plain[0] if plain else None


def _git(args: list[str]) -> tuple[bool, bool, list[str]]:
    """(changes unnamed files, those changes are a revert, files put back) of a git command."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    if i >= len(args):
        return False, False, []
    sub, rest = args[i], args[i + 1 :]
    if sub == "apply":
        return "--check" not in rest and "--stat" not in rest, "-R" in rest or "--reverse" in rest, []
    if sub == "stash" and (not rest or rest[0] in ("push", "save", "-u", "--include-untracked", "pop", "apply")):
        return True, not rest or rest[0] not in ("pop", "apply"), []
    if sub == "reset" and "--hard" in rest:
        return True, True, []
    if sub in ("checkout", "restore"):
        if "--" in rest:
            files = rest[rest.index("--") + 1 :]
        elif sub == "restore":
            if ("--staged" in rest or "-S" in rest) and not ("--worktree" in rest or "-W" in rest):
                return False, False, []  # only the index: the files keep their content
            files = [a for a in rest if not a.startswith("-")]
        else:
            # `git checkout BRANCH` moves HEAD; only words that look like files are files
            files = [a for a in rest if not a.startswith("-") and ("." in a or "/" in a)]
        if any(f in (".", "./", ":/") for f in files):
            return True, True, []
        return False, False, files
    return False, False, []
