#!/usr/bin/env bash
# Thin entry point: make sure the local virtualenv exists, then hand over.
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
if [ "$cmd" = "test" ]; then
  shift
  cd "$here"
  exec "$venv/bin/python" -m pytest "$@"
fi
exec "$venv/bin/python" -m orchestrator "$@"
