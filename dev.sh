#!/usr/bin/env bash
# Thin entry point: make sure the local virtualenv exists, then hand over.
#   ./dev.sh test [pytest args]   the test suite
#   ./dev.sh lint                 ruff (lint + format check) and mypy
#   ./dev.sh build                compile spiral/ again (mypyc, setup.py) after editing it
#   ./dev.sh <command> ...        the orchestrator CLI (./dev.sh --help)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.installed-$(cksum < "$here/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  echo "dev.sh: setting up $venv (first run only)..." >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -e "$here[test]" >&2
  rm -f "$venv"/.installed-* && touch "$stamp"
fi
# The real Claude Code and Codex CLIs, pinned in agents/package-lock.json, for the real-agent tests.
# Without node/npm those tests skip and say why in the summary.
agents_ready() {
  local lock="$here/agents/package-lock.json" mark="$here/agents/node_modules/.installed"
  [ -f "$mark" ] && [ "$(cat "$mark")" = "$(cksum < "$lock")" ] && return 0
  command -v npm >/dev/null 2>&1 || { echo "dev.sh: npm not found: the real-agent tests will skip" >&2; return 0; }
  echo "dev.sh: installing the pinned agent CLIs into agents/node_modules (first run only)..." >&2
  (cd "$here/agents" && npm ci --no-audit --no-fund --loglevel=error >&2) && cksum < "$lock" > "$mark"
}
# a source checkout has the shared real agent logs beside it: `eval --bench` replays them too
if [ -z "${ORCHESTRATOR_REAL_TRACES:-}" ] && [ -d "$here/../shared/real-traces" ]; then
  export ORCHESTRATOR_REAL_TRACES="$here/../shared/real-traces"
fi
cmd="${1:-}"
case "$cmd" in
  test)
    shift
    cd "$here"
    agents_ready
    mode="$("$venv/bin/python" -c "import spiral; print(spiral.MODE)")"
    [ "$mode" = compiled ] || echo "dev.sh: spiral is running as $mode" >&2
    # one worker per core (at most 4), each test file on one worker (its servers and fixtures are
    # per file): the suite in about half the time on 2 cores. `-n 0` (or any -n) overrides it.
    par=(-n "$(n=$(nproc 2>/dev/null || echo 2); [ "$n" -gt 4 ] && n=4; echo "$n")" --dist loadfile)
    for a in "$@"; do case "$a" in -n | -n* | --numprocesses*) par=() ;; esac; done
    exec "$venv/bin/python" -m pytest "${par[@]}" "$@"
    ;;
  build)
    # the compiled modules run only while they match spiral/'s sources (spiral_compiled.py)
    cd "$here"
    "$venv/bin/python" -m pip install --quiet --no-deps -e "$here" >&2
    exec "$venv/bin/python" -c "import spiral; print('spiral:', spiral.MODE)"
    ;;
  lint)
    cd "$here"
    "$venv/bin/ruff" check .
    "$venv/bin/ruff" format --check .
    exec "$venv/bin/mypy"
    ;;
esac
exec "$venv/bin/python" -m orchestrator "$@"
