"""What a shell command runs: its script, the file it names, whether it polls.

Pure string analysis, cached per distinct command text (agents in a loop
repeat the same commands, so the cache hit rate is high exactly when it matters).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spiral.pickling import by_fields

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_INTERPRETERS = (
    frozenset(
        "python python2 python3 pypy pypy3 node deno bun ruby perl php Rscript tsx ts-node lua julia elixir osascript".split()
    )
    | _SHELLS
)
_TEST_RUNNERS = frozenset({"pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "ava", "tap"})
# `<tool> test FILE` style runners: mix test, go test, bun test, deno test, cargo test ...
_SUBCOMMAND_TEST_RUNNERS = frozenset({"mix", "go", "bun", "deno", "cargo", "npx", "dotnet", "rails"})
# interpreters that run a file or a subcommand (`bun run lint`, `deno task dev`)
_SUBCOMMAND_INTERPRETERS = frozenset({"bun", "deno"})
# ...their options that take a value (`--cwd dir`, deno's `-c deno.json`), and their inline code
_RUNTIME_VALUE_FLAGS = frozenset(
    "--cwd --config -c --env-file --filter --preload -r --tsconfig-override --import-map --lock --cert"
    " --location --seed --v8-flags".split()
)
_RUNTIME_INLINE = frozenset({"-e", "--eval", "-p", "--print"})
_SUITE_RUNNERS = frozenset({"tox", "nox", "ctest", "unittest"})
_PACKAGE_MANAGERS = frozenset({"npm", "yarn", "pnpm", "bun"})
_WRAPPERS = frozenset({"sudo", "time", "nohup", "exec", "command", "nice", "stdbuf", "env", "xargs"})
_RUN_WRAPPERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye", "npx", "pnpm", "yarn"})
_VIEWERS = frozenset({"cat", "head", "tail", "less", "more", "wc", "bat", "nl", "stat", "file", "vim", "vi", "nano"})
_LAST_ARG_VIEWERS = frozenset({"grep", "rg", "sed", "awk", "egrep"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", "(", ")", ";;", "\n"})
_REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|"})
_NEEDS_SHLEX = re.compile(r"['\"\\`]|\$\(")
_PLAIN_TOKENS = re.compile(r"[;&|()<>]+|[^\s;&|()<>]+")
# what shlex (posix, punctuation_chars, whitespace split) makes of a command whose only quoting is
# balanced single quotes: punctuation runs, and words of unquoted runs and '...' segments (quotes dropped)
_NEEDS_LEXER = re.compile(r"[\"\\`]|\$\(")
_QUOTED_TOKENS = re.compile(r"[;&|()<>]+|(?:[^ \t\r\n;&|()<>']+|'[^']*')+")
_KEYWORDS = frozenset({"do", "then", "else", "elif", "done", "fi", "while", "until", "if", "for", "{", "}", "!"})
_REDIRECT_CHARS = frozenset("<>&|")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TASK_OUTPUT = re.compile(r"/tasks/[^/\s'\"]+\.output\b")
_UNTIL = re.compile(r"\buntil\b")
_DO = re.compile(r"\bdo\b")
_WAITS_ON = re.compile(r"\bgrep\b|\[\s+-s\b|\btest\s+-s\b")
_SLEEP_ARG = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$")
_SLEEP_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# interpreter options that take a value as the next word
_VALUE_FLAGS = frozenset({"-W", "-X", "-r", "--require", "-I", "--import", "--loader"})


@dataclass(frozen=True, slots=True)
class ShellFacts:
    script: str | None  # the script or test file the command executes
    file: str | None  # the script, or else the main file the command names
    sleep_s: float | None  # shortest `sleep N` in the command
    task_output: bool  # reads a background task's .output file
    until_wait: bool  # an `until ...grep / [ -s ...; do ... done` wait
    suite: str | None = None  # a test run that names no file: `npm test`, `go test`, `cargo test`, `pytest`

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


@lru_cache(maxsize=16384)  # every call's command is unwrapped twice (observe, is_request); a loop repeats them
def unwrap(command: str) -> str:
    """Strip `/bin/bash -lc '...'` and `sh -c '...'` wrappers, repeatedly."""
    for _ in range(4):
        head = command.lstrip().split(None, 1)[0] if command.strip() else ""
        if head.rsplit("/", 1)[-1] not in _SHELLS:
            return command
        words = _split_words(command)
        if not words or len(words) < 3:
            return command
        head = words[0].rsplit("/", 1)[-1]
        if head not in _SHELLS:
            return command
        i = 1
        while i < len(words) and words[i].startswith("-") and "c" not in words[i]:
            i += 1
        if i >= len(words) - 1 or not (words[i].startswith("-") and "c" in words[i]):
            return command
        command = words[i + 1]
    return command


# what of a command is read for its facts: split into words, a command costs ~18 bytes a character
# (a 50 MB one took 1.8 GB); a command over CACHED_CHARS is not kept in the cache, which holds its key
ANALYSED_CHARS = 4 * 1024 * 1024
CACHED_CHARS = 65536


def analyse(command: str) -> ShellFacts:
    """The facts of `command` (of its first ANALYSED_CHARS characters)."""
    if len(command) <= CACHED_CHARS:
        return _analyse_cached(command)
    return _analyse(command[:ANALYSED_CHARS])


def _analyse(command: str) -> ShellFacts:
    inner = _drop_heredoc_bodies(unwrap(command))
    script = file = suite = None
    sleep_s: float | None = None
    prefix = ""  # where `cd` moved the command before it ran its script
    for argv in _simple_commands(_newlines_to_separators(inner)):
        argv = _strip_prefix(argv)
        if not argv:
            continue
        base = argv[0].rsplit("/", 1)[-1]
        if base == "cd":
            prefix = after_cd(argv[1] if len(argv) > 1 else "", prefix)
            continue
        if base == "sleep" and len(argv) > 1:
            m = _SLEEP_ARG.match(argv[1])
            if m:
                n = float(m.group(1)) * _SLEEP_UNIT[m.group(2)]
                sleep_s = n if sleep_s is None else min(sleep_s, n)
            continue
        if script is None:
            s = _script_of(argv, base)
            if s:
                script = _under(prefix, s)
        if file is None:
            f = _file_of(argv, base)
            file = _under(prefix, f) if f else None
        if suite is None:
            suite = _suite_of(argv, base)
    return ShellFacts(
        script=script,
        file=script or file,
        sleep_s=sleep_s,
        task_output=bool(TASK_OUTPUT.search(inner)),
        until_wait=_until_wait(inner),
        suite=None if script else suite,
    )


_analyse_cached = lru_cache(maxsize=16384)(_analyse)


def after_cd(target: str, prefix: str) -> str:
    """Where `cd target` leaves a command line that was at `prefix` ("" where unknown or unmoved; an
    absolute folder stays absolute: a path under it is made relative to the workdir by the caller)."""
    if not target or target.startswith(("~", "-", "$")):
        return ""  # somewhere we cannot know
    moved = posixpath.normpath(posixpath.join(prefix, target)) + "/"
    return "" if moved in ("./", "../") or moved.startswith("../") else moved


def _until_wait(text: str) -> bool:
    """An `until <grep | [ -s ... ]>; do ... done` loop: linear in the command (a regex was quadratic)."""
    start = 0
    for _ in range(8):  # the first few `until`s: a command that has more is not a plain wait
        m = _UNTIL.search(text, start)
        if m is None:
            return False
        d = _DO.search(text, m.end())
        if d is None:
            return False
        if _WAITS_ON.search(text, m.end(), d.start()):
            return True
        start = m.end()
    return False


def _under(prefix: str, path: str) -> str:
    if not prefix or path.startswith(("/", "~", "$")):
        return path
    return posixpath.normpath(prefix + path)


def _drop_heredoc_bodies(text: str) -> str:
    """Remove here-document bodies: they are data, not commands."""
    if "<<" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    ending: list[str] = []
    for line in lines:
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending.extend(m.group(2) for m in _HEREDOC.finditer(line) if "<<<" not in line[m.start() : m.start() + 3])
    return "\n".join(out)


def _newlines_to_separators(text: str) -> str:
    """Unquoted newlines end a command, as `;` does (shlex would treat them as spaces); a
    backslash before a newline continues the line, and an unquoted `#` starting a word comments
    out the rest of its line (`# look first` above the command is not the command)."""
    if "\n" not in text and "#" not in text:
        return text
    out: list[str] = []
    quote = ""
    escaped = False
    comment = False
    for ch in text:
        if comment:
            if ch != "\n":
                continue
            comment = False
        if escaped:
            escaped = False
            if ch == "\n":
                out[-1] = " "  # a line continuation: the backslash and the newline are one space
                continue
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (not out or out[-1][-1] in _WORD_BREAKS):
            comment = True
            continue
        elif ch == "\n":
            out.append(" ; ")
            continue
        out.append(ch)
    return "".join(out)


_WORD_BREAKS = frozenset(" \t;&|()")  # a `#` after one of these starts a comment (`a#b`, `$#` do not)


# shlex builds each token a character at a time, so its time grows with the square of a token's length
# (a 2 MB quoted `python -c "..."` took a minute). A longer command is split at whitespace, as one
# whose quotes do not balance is: its first words still say what it runs.
_LEX_LIMIT = 65536


def _split_words(text: str) -> list[str]:
    if len(text) > _LEX_LIMIT or not _NEEDS_SHLEX.search(text):
        return text.split()
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _tokens(text: str) -> list[str]:
    """A command line's words and operators, as shlex (posix, punctuation_chars) splits them."""
    if len(text) > _LEX_LIMIT:
        tokens = _PLAIN_TOKENS.findall(text)  # (linear: quotes are not read, separators are)
    elif _NEEDS_SHLEX.search(text) and (_NEEDS_LEXER.search(text) or text.count("'") % 2):
        lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        lex.commenters = ""
        try:
            tokens = list(lex)
        except ValueError:
            tokens = text.split()
    elif "'" in text:  # single quotes only, balanced: the same tokens as the lexer's, by a regex
        tokens = [tok.replace("'", "") if "'" in tok else tok for tok in _QUOTED_TOKENS.findall(text)]
    else:  # no quoting at all: a regex gives the same tokens, much faster
        tokens = _PLAIN_TOKENS.findall(text)
    return _literal_parens(tokens) if "(" in tokens else tokens


def _literal_parens(tokens: list[str]) -> list[str]:
    """A `(` after a word, not `$(` or `<(`, is no subshell: `find . \\( -name a -o -name b \\)` and
    `arr=(a b)` keep their parens as the words `\\(` and `\\)`, so the command stays one."""
    out: list[str] = []
    literal: list[bool] = []  # per open paren: a word (True) or a subshell / substitution (False)
    for tok in tokens:
        if tok == "(":
            prev = out[-1] if out else ""
            word = bool(prev) and prev not in _SEPARATORS and prev not in _KEYWORDS and prev not in _REDIRECTS
            word = word and not prev.endswith("$")
            literal.append(word)
            if word:
                out.append("\\(")
                continue
        elif tok == ")" and literal:
            if literal.pop():
                out.append("\\)")
                continue
        out.append(tok)
    return out


def _simple_commands(text: str) -> list[list[str]]:
    """Split a command line into simple commands, dropping redirections."""
    tokens = _tokens(text)
    out: list[list[str]] = []
    cur: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok in _SEPARATORS or (not cur and tok in _KEYWORDS):
            if cur:
                out.append(cur)
            cur = []
        elif tok in _REDIRECTS or (set(tok) <= _REDIRECT_CHARS and tok.strip("&|")):
            i += 1  # skip the redirect's target too
        elif tok.isdigit() and i + 1 < n and tokens[i + 1] in _REDIRECTS:
            pass  # the file-descriptor number of `2>&1`
        else:
            cur.append(tok)
        i += 1
    if cur:
        out.append(cur)
    return out


def _strip_prefix(argv: list[str]) -> list[str]:
    i = 0
    while i < len(argv):
        word = argv[i]
        base = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word):
            i += 1
        elif base in _WRAPPERS:
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 1
        elif base == "timeout":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 1
            i += 1  # the duration
        elif base in _RUN_WRAPPERS and i + 1 < len(argv) and argv[i + 1] in ("run", "exec"):
            i += 2
        else:
            break
    return argv[i:]


def _first_path_arg(args: list[str]) -> str | None:
    for a in args:
        if a.startswith("-") or _ASSIGNMENT.match(a):
            continue
        return a
    return None


def _clean_target(arg: str) -> str:
    arg = arg.split("::", 1)[0]
    return re.sub(r":\d+$", "", arg)


def _looks_like_file(arg: str) -> bool:
    return "/" in arg or "." in arg.lstrip(".")


def positionals(args: list[str], value_flags: frozenset[str]) -> list[str]:
    """The arguments that are no option, nor the value of one of `value_flags` (`--cwd dir`)."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a.startswith("-") and a != "-":
            skip = a in value_flags
        else:
            out.append(a)
    return out


def runtime_args(args: list[str]) -> list[str]:
    """bun's or deno's arguments with their options, and the values those take, set aside."""
    return positionals(args, _RUNTIME_VALUE_FLAGS)


def _runtime_script(pos: list[str]) -> str | None:
    """The file `bun`/`deno` runs, from its positional arguments (runtime_args): `bun x.ts`, `bun run
    src/x.ts`, `deno run -A main.ts`; none for a subcommand (`bun run lint`, `deno task dev`)."""
    if not pos or pos[0] == "-":
        return None
    if _looks_like_file(pos[0]):
        return pos[0]
    if pos[0] == "test":
        return _test_target(pos[1:])
    if pos[0] == "run" and len(pos) > 1 and pos[1] != "-" and _looks_like_file(pos[1]):
        return pos[1]
    return None  # a subcommand, or a package script (`bun run lint`)


def _script_of(argv: list[str], base: str) -> str | None:
    args = argv[1:]
    if base in _SUBCOMMAND_INTERPRETERS:
        return None if any(a in _RUNTIME_INLINE for a in args) else _runtime_script(runtime_args(args))
    if base in _SHELLS and args and args[0].startswith("-") and "c" in args[0] and len(args) > 1:
        return analyse(args[1]).script
    if re.match(r"^python[0-9.]*$", base) or base in _INTERPRETERS:
        rest = list(args)
        while rest and rest[0].startswith("-") and rest[0] != "-":
            flag = rest.pop(0)
            if flag == "-m" and rest:
                module = rest.pop(0)
                if module in ("pytest", "unittest"):
                    return _test_target(rest)
                return None
            if flag in ("-c", "-e", "--eval"):
                return None  # inline code: there is no script file
            if flag in _VALUE_FLAGS and rest:
                rest.pop(0)
        if not rest or rest[0] == "-":
            return None  # the program comes on stdin
        return rest[0]
    if base in _TEST_RUNNERS:
        return _test_target(args)
    if base in _SUBCOMMAND_TEST_RUNNERS and args and args[0] == "test":
        return _test_target(args[1:])
    if "/" in argv[0]:
        return argv[0]
    if base.endswith((".sh", ".py", ".js", ".rb", ".pl")):
        return argv[0]
    return None


def _test_target(args: list[str]) -> str | None:
    for a in args:
        if a.startswith("-") or "..." in a:  # `go test ./...` names packages, not a file
            continue
        if _looks_like_file(a):
            return _clean_target(a)
    return None


def _suite_of(argv: list[str], base: str) -> str | None:
    """The test command itself, when it runs a whole suite: `npm test`, `go test`, `make check`."""
    if any(a in ("--version", "-V", "--help", "-h", "--collect-only", "--co", "--list") for a in argv[1:]):
        return None  # asks about the runner; runs nothing
    args = [a for a in argv[1:] if not a.startswith("-")]
    if base in _TEST_RUNNERS or base in _SUITE_RUNNERS:
        return base
    if base in ("npx", "bunx") and args and args[0] in _TEST_RUNNERS:
        return args[0]
    if re.match(r"^python[0-9.]*$", base) and "-m" in argv and argv.index("-m") + 1 < len(argv):
        module = argv[argv.index("-m") + 1]
        return module if module in ("pytest", "unittest", "tox", "nox") else None
    if base in _SUBCOMMAND_TEST_RUNNERS and args and args[0] == "test":
        return f"{base} test"
    if base in _PACKAGE_MANAGERS and args:
        if _is_test_script(args[0]):
            return f"{base} {args[0]}"
        if args[0] == "run" and len(args) > 1 and _is_test_script(args[1]):
            return f"{base} run {args[1]}"
    if base in ("make", "mvn", "gradle", "./gradlew", "gradlew", "just", "task") and args and _is_test_script(args[0]):
        return f"{base} {args[0]}"
    if base == "mise" and len(args) > 1 and args[0] == "run" and _is_test_script(args[1]):
        return f"mise run {args[1]}"
    return None


def _is_test_script(name: str) -> bool:
    """`test`, `t`, `check`, `test:unit`, `test-unit`, `test_e2e` (not `test-server` or `testdata`)."""
    if name in ("test", "t", "check", "tests"):
        return True
    head, sep, rest = name.partition(":")
    if sep:
        return head in ("test", "tests", "check")
    return name.startswith(("test-", "test_")) and not name.endswith(("server", "serve", "watch", "data", "db"))


def _file_of(argv: list[str], base: str) -> str | None:
    args = argv[1:]
    if base in _VIEWERS:
        return _first_path_arg([a for a in args if not a.lstrip("+-").isdigit()])
    if base in _LAST_ARG_VIEWERS and len(args) >= 2 and not args[-1].startswith("-"):
        return args[-1] if _looks_like_file(args[-1]) else None
    return None
