"""Fill the git-ignored cache .cache/real-sessions from the sources named in labels.yaml.

    .venv/bin/python realsessions/fetch.py            # every entry not cached yet
    .venv/bin/python realsessions/fetch.py --dry-run  # only say what would be fetched

Each file is downloaded from raw.githubusercontent.com at the labelled commit and kept only when
its sha256 is the labelled one. `shared:` entries are not fetched (they are ../shared/real-traces).
The files are other people's: they go to the cache, never into the repository.
"""

from __future__ import annotations

import hashlib
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".cache" / "real-sessions"


def _raw_url(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def _wanted(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(cache file, source path, sha256) of the entry's file and of its subagent files."""
    if str(entry["file"]).startswith("shared:"):
        return []
    out = [(entry["file"], entry["source"]["path"], entry["sha256"])]
    out += [(s["file"], s["path"], s["sha256"]) for s in entry.get("subagents", [])]
    return out


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    entries = yaml.safe_load((HERE / "labels.yaml").read_text())["sessions"]
    fetched = failed = 0
    for entry in entries:
        src = entry["source"]
        for file, path, digest in _wanted(entry):
            dest = CACHE / file
            if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == digest:
                continue
            url = _raw_url(src["repo"], src["commit"], path)
            if dry:
                print(f"would fetch {url} -> {dest}")
                continue
            try:
                with urllib.request.urlopen(url, timeout=60) as resp:
                    data = resp.read()
            except OSError as exc:
                print(f"{entry['id']}: {url}: {exc}", file=sys.stderr)
                failed += 1
                continue
            if hashlib.sha256(data).hexdigest() != digest:
                print(f"{entry['id']}: {url}: sha256 differs from the labelled one; not kept", file=sys.stderr)
                failed += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            fetched += 1
    print(f"fetched {fetched} file(s) into {CACHE}; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
