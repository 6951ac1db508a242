"""What a shell call tries: its intent, the check it runs with flags, selectors and wrappers set
aside (pure, cached per distinct command text).

Real loops vary their command lines: `golangci-lint run --enable X ./...`, `golangci-lint run
--fix` and `golangci-lint cache clean && golangci-lint run` are one check run three times;
`python reproduce_v2.py` after `python reproduce.py` is the same probe again. The intent is the
tool and its subcommand or target, taken from the command of the line that is the check:

- the last simple command of the line that is not navigation, a file viewer or search, an edit
  or housekeeping (`cd`, `echo`, `cat`, `grep`, `sed -n`, `cp`, `git add`, `pip install` ...),
  and not a filter a pipe feeds (`pytest ... | tail -20` is `pytest`);
- an interpreter's script (`python x.py`), its module (`python -m pytest t.py`) or inline code
  (`python -c`, `python -` for a heredoc); a test runner's file, selectors dropped (`pytest
  t.py::case -x` is `pytest t.py`); a compiler's source file; a multi-command tool's subcommand
  (`git commit`, `go test`, `npm run build`, `golangci-lint run`); `curl`'s host;
- file names by their basename, with the decorations agents give their next try taken off:
  `reproduce_issue_v2.py`, `reproduce_issue2.py`, `reproduce_issue_fixed.py` are `reproduce_issue.py`.

A line that runs nothing of that kind (it only reads, edits or navigates) has no intent.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from spiral import shellcmd
from spiral.shellparts import parts

# commands that are not a check: navigation, viewing and searching, editing, housekeeping
_NOT_CHECKS = frozenset(
    """cd pushd popd echo printf export set unset source . true false : sleep clear pwd cat head tail less more
    wc ls ll find fd grep egrep fgrep rg ag ack sed awk gawk nl tree stat file which type whereis hash diff cmp
    cp mv rm rmdir mkdir touch tee chmod chown ln patch perl jq yq xargs read exit wait history alias date
    whoami hostname env printenv basename dirname realpath readlink sort uniq cut tr column od hexdump xxd
    strings du df free top uname id locate man open code vim vi nano emacs kill pkill killall ps pgrep lsof
    trap shopt ulimit umask test [ [[ let declare local return break continue shift getopts bg fg jobs disown
    tar unzip zip gzip gunzip wget2 sha256sum md5sum base64 ssh-add nproc sync watch""".split()
)
_GIT_READS = frozenset(
    """status log show diff branch rev-parse ls-files ls-tree grep blame remote config add checkout restore
    stash reset switch fetch tag describe shortlog reflog cat-file worktree mv rm clean init clone""".split()
)
_PACKAGE_INSTALLS = frozenset({"install", "add", "i", "uninstall", "remove", "ci", "list", "show", "freeze", "view"})
_MULTI = frozenset(
    """git go cargo npm yarn pnpm bun deno docker docker-compose podman kubectl gh pip pip3 uv poetry mix dotnet
    golangci-lint terraform helm rails bundle rake flutter swift mvn gradle gradlew make just task npx bunx
    tox nox conda ruff hatch pdm rye nix bazel buck2 turbo nx lerna composer php artisan dart elixir""".split()
)
_COMPILERS = frozenset({"gcc", "g++", "cc", "c++", "clang", "clang++", "nvcc", "rustc", "javac", "tsc", "gfortran"})
_HTTP = frozenset({"curl", "wget", "http", "https", "httpie", "xh"})
# curl's and wget's options that take a value: a header, a body or a file name is not the address
_HTTP_VALUE_FLAGS = frozenset(
    """-H --header -d --data --data-raw --data-binary --data-urlencode --json -F --form -X --request -o
    --output -O --output-document -u --user -A --user-agent -e --referer -b --cookie -c --cookie-jar -T
    --upload-file -w --write-out -m --max-time --connect-timeout -x --proxy -r --range --resolve -K
    --config --cacert --cert --key -P --directory-prefix --post-data --post-file --retry""".split()
)
_HOSTLIKE = re.compile(r"^(?:localhost|[\w-]+(?:\.[\w-]+)+|\[[0-9a-f:]+\])(?::\d+)?(?:[/?#]\S*)?$", re.IGNORECASE)
_PYTHONS = re.compile(r"^(?:python[0-9.]*|pypy[0-9.]*)$")
_WORD = re.compile(r"^[a-z][a-z0-9:_.-]{0,40}$")
_SOURCE = re.compile(r"\.(?:c|cc|cpp|cxx|cu|rs|java|ts|tsx|go|f90|m|mm|swift|kt|zig)$")
_DECORATION = re.compile(
    r"(?:[_-]?(?:v\d+|\d+|new|fixed|final|simple|simplified|minimal|min|debug|alt|old|copy|tmp|temp|quick"
    r"|more|again|updated))+$",
    re.IGNORECASE,
)
_PREFIX = re.compile(r"^(?:tmp|temp|debug|scratch|my)[_-]", re.IGNORECASE)
_URL_HOST = re.compile(r"^(?:[a-z]+://)?([^/\s:?#'\"]+)", re.IGNORECASE)


class Intent(NamedTuple):
    key: str  # what the call tries, e.g. "golangci-lint run", "python reproduce_issue.py"
    script: str | None  # the file it runs or compiles, as written (the caller decides who made it)
    # the line's exit status is not the check's: a pipe (`go test | tail`), `;` or `||` follows it
    exit_masked: bool = False
    # ...and a pipe picks lines out of its output (`| grep FAIL`): what is left may hold no verdict
    output_picked: bool = False


def intent(command: str) -> Intent | None:
    """The check a shell command line runs, or None when it runs no check (see the module)."""
    if len(command) > 65536:
        return _intent(command[: shellcmd.ANALYSED_CHARS])
    return _intent_cached(command)


def _intent(command: str) -> Intent | None:
    found: Intent | None = None
    line = parts(command)
    for i, part in enumerate(line):
        if part.sep == "|":
            continue  # a filter fed by a pipe: the check is the command before it
        argv = shellcmd._strip_prefix(list(part.argv))
        if not argv:
            continue
        got = _key(argv)
        if got is not None:
            script = got.script
            if script is not None and part.prefix and not script.startswith("/"):
                script = part.prefix + script
            # a failing check ends an `&&` chain with its own status; any other separator after it
            # (a pipe into `tail`, `; echo`, `|| true`) gives the line another command's status, but a
            # pipe does not under `set -o pipefail` (or where the line reads PIPESTATUS)
            after = line[i + 1 :]
            piped_ok = _PIPEFAIL.search(command) is not None
            masked = any(p.sep != "&&" and not (piped_ok and p.sep == "|") for p in after)
            picked = any(p.sep == "|" and p.argv and p.argv[0] in _PICKERS for p in after)
            found = Intent(got.key, script, masked, picked)
    return found


_intent_cached = lru_cache(maxsize=8192)(_intent)


_PIPEFAIL = re.compile(r"\bpipefail\b|\bPIPESTATUS\b")
# filters that keep only some lines of what is piped into them
_PICKERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "awk", "sed", "jq", "cut"})
_SEARCHES = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "locate", "git-grep"})


def searches(command: str) -> bool:
    """Whether the line is a search (`grep`, `rg`, `find` ..., `git grep`) and runs no check."""
    for part in parts(command):
        argv = shellcmd._strip_prefix(list(part.argv))
        if not argv or part.sep == "|":
            continue
        base = argv[0].rsplit("/", 1)[-1]
        if base in _SEARCHES or (base == "git" and len(argv) > 1 and argv[1] == "grep"):
            return True
    return False


def family(path: str) -> str:
    """A file by its basename with the decorations of an agent's next try taken off."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    bare = _PREFIX.sub("", stem)
    bare = _DECORATION.sub("", bare) or bare or stem
    return bare + ("." + ext if ext else "")


def _key(argv: list[str]) -> Intent | None:
    base = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if base in _NOT_CHECKS:
        return None
    if _PYTHONS.match(base) or base in shellcmd._INTERPRETERS:
        return _interpreter(base, argv)
    if base in shellcmd._TEST_RUNNERS:
        target = shellcmd._test_target(args)
        return Intent(base + (" " + family(target) if target else ""), target)
    if base in _COMPILERS:
        src = next((a for a in args if _SOURCE.search(a) and not a.startswith("-")), None)
        return Intent(base + (" " + family(src) if src else ""), src)
    if base in _HTTP:
        url = _url(args)
        m = _URL_HOST.match(url) if url else None
        return Intent(base + (" " + m.group(1).lower() if m else ""), None)
    if base in _MULTI or base.endswith("gradlew"):
        return _multi(base, args)
    if "/" in argv[0] or base.endswith((".sh", ".py", ".js", ".rb", ".pl")):
        return Intent(family(argv[0]), argv[0])
    sub = args[0] if args and not args[0].startswith("-") else None  # (a word after a flag is its value)
    if sub is not None and _WORD.match(sub) and "." not in sub:
        return Intent(f"{base} {sub}", None)
    return Intent(base, None)


def _url(args: list[str]) -> str | None:
    """The address an HTTP client asks: a `scheme://` argument, else the first argument that names
    a host and is no option's value (`-H 'Accept: a/b.json'`, `-o out.tgz`, `-d '{...}'`)."""
    scheme = next((a for a in args if "://" in a and not a.startswith("-")), None)
    if scheme is not None:
        return scheme
    return next((a for a in shellcmd.positionals(args, _HTTP_VALUE_FLAGS) if _HOSTLIKE.match(a)), None)


def _interpreter(base: str, argv: list[str]) -> Intent | None:
    name = "python" if _PYTHONS.match(base) else base
    args = argv[1:]
    if base in shellcmd._SUBCOMMAND_INTERPRETERS:
        return _runtime(name, args)
    if "-m" in args and args.index("-m") + 1 < len(args):
        module = args[args.index("-m") + 1]
        if module in ("pip", "venv", "ensurepip", "http.server", "json.tool"):
            return None if module != "http.server" else Intent(f"{name} -m {module}", None)
        rest = args[args.index("-m") + 2 :]
        target = shellcmd._test_target(rest) if module in ("pytest", "unittest") else None
        return Intent(f"{name} -m {module}" + (" " + family(target) if target else ""), target)
    if any(a in ("-c", "-e", "--eval") for a in args):
        return Intent(f"{name} -c", None)
    script = shellcmd._script_of(argv, base)
    if script:
        return Intent(f"{name} {family(script)}", script)
    if name in shellcmd._SHELLS:
        return None  # a bare shell: what it runs comes on stdin
    return Intent(f"{name} -", None)  # the program comes on stdin (a heredoc)


def _runtime(name: str, args: list[str]) -> Intent | None:
    """bun's and deno's checks: the file it runs (`bun x.ts`, `deno run -A main.ts`), inline code
    (`bun -e`), the program on stdin, or a subcommand (`bun run lint`, `bun test`, `deno task dev`)."""
    if any(a in shellcmd._RUNTIME_INLINE for a in args):
        return Intent(f"{name} -c", None)
    pos = shellcmd.runtime_args(args)
    script = shellcmd._runtime_script(pos) if pos[:1] != ["test"] else None  # (`bun test t.ts`: _multi's)
    if script:
        return Intent(f"{name} {family(script)}", script)
    if not pos or pos[0] == "-" or pos[:2] == ["run", "-"]:
        return Intent(f"{name} -", None)  # the program comes on stdin (a heredoc)
    return _multi(name, pos)


def _multi(base: str, args: list[str]) -> Intent | None:
    words: list[str] = []
    i = 0
    while i < len(args) and len(words) < 2:
        a = args[i]
        if base == "git" and a in ("-C", "-c"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        words.append(a)
        i += 1
    if not words:
        return Intent(base, None)
    sub = words[0]
    if base == "git" and sub in _GIT_READS:
        return None
    if base in ("pip", "pip3", "uv", "poetry", "conda", "npm", "yarn", "pnpm", "bun", "cargo", "go", "gh"):
        if sub in _PACKAGE_INSTALLS or (base == "uv" and sub == "pip") or (base == "go" and sub in ("get", "mod")):
            return None  # setting up, not checking
    if base in ("npx", "bunx"):
        at = next(j for j, a in enumerate(args) if not a.startswith("-"))
        return _key(args[at:]) or Intent(f"{base} {sub}", None)
    if sub == "test" and base in shellcmd._SUBCOMMAND_TEST_RUNNERS:
        target = shellcmd._test_target(args[args.index("test") + 1 :])
        return Intent(f"{base} test" + (" " + family(target) if target else ""), target)
    two = base in ("npm", "yarn", "pnpm", "bun", "deno", "docker", "uv", "poetry", "mix", "dotnet") and sub in (
        "run",
        "exec",
        "compose",
        "task",
    )
    if two and len(words) > 1:
        return Intent(f"{base} {sub} {words[1] if _WORD.match(words[1]) else family(words[1])}", None)
    if not _WORD.match(sub):
        return Intent(f"{base} {family(sub)}", sub)
    return Intent(f"{base} {sub}", None)
