#!/usr/bin/env bash
# Thin entry point: make sure the local virtualenv exists, then hand over.
#   ./dev.sh test [pytest args]   the test suite
#   ./dev.sh lint                 ruff (lint + format check) and mypy
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
cmd="${1:-}"
case "$cmd" in
  test)
    shift
    cd "$here"
    exec "$venv/bin/python" -m pytest "$@"
    ;;
  lint)
    cd "$here"
    "$venv/bin/ruff" check .
    "$venv/bin/ruff" format --check .
    exec "$venv/bin/mypy"
    ;;
esac
exec "$venv/bin/python" -m orchestrator "$@"
