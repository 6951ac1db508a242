"""Fill the git-ignored cache .cache/real-sessions from the sources named in labels.yaml.

    .venv/bin/python realsessions/fetch.py            # every entry not cached yet
    .venv/bin/python realsessions/fetch.py --dry-run  # only say what would be fetched
    .venv/bin/python realsessions/fetch.py --mirror DIR  # read from git snapshots, not the network

Each file is downloaded from raw.githubusercontent.com at the labelled commit and kept only when
its sha256 is the labelled one. With --mirror, the file is read instead with `git show COMMIT:PATH`
from a bare snapshot of its repository at DIR/<owner>+<name>/repo (or DIR/<owner>+<name>), for a
machine that reaches git snapshots but not GitHub; the same hashes are checked.
`shared:` entries are not fetched (they are ../shared/real-traces).
An entry with `conversion:` (a `generic` log made by tools/convert_trajectory.py) downloads the
original, checks it against `source.sha256` (or, for a folder of `<n>.json` events, `source.tree`,
its git tree id), converts it as labelled and keeps the result only when its sha256 is the labelled one.
The files are other people's: they go to the cache, never into the repository.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".cache" / "real-sessions"
CONVERTER = HERE.parent / "tools" / "convert_trajectory.py"


def _raw_url(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def _wanted(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(cache file, source path, sha256) of the entry's file and of its subagent files."""
    if str(entry["file"]).startswith("shared:"):
        return []
    out = [(entry["file"], entry["source"]["path"], entry["sha256"])]
    out += [(s["file"], s["path"], s["sha256"]) for s in entry.get("subagents", [])]
    return out


MIRROR: Path | None = None  # set by --mirror: read sources from git snapshots instead of GitHub


def _download(url: str) -> bytes:
    if MIRROR is not None:
        return _from_mirror(url)
    with urllib.request.urlopen(url, timeout=60) as resp:
        data: bytes = resp.read()
    return data


def _from_mirror(url: str) -> bytes:
    """The bytes behind a raw.githubusercontent.com URL, read from the repository's git snapshot."""
    assert MIRROR is not None
    owner, name, commit, path = url.removeprefix("https://raw.githubusercontent.com/").split("/", 3)
    for git_dir in (MIRROR / f"{owner}+{name}" / "repo", MIRROR / f"{owner}+{name}"):
        if (git_dir / "HEAD").is_file() or (git_dir / ".git").is_dir():
            break
    else:
        raise OSError(f"no snapshot of {owner}/{name} under {MIRROR}")
    done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode != 0:
        raise OSError(f"{owner}/{name}@{commit[:12]}:{path}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _git_tree_id(files: dict[str, bytes]) -> str:
    """The git tree id of a folder of plain files (name -> content), as `git rev-parse <commit>:<path>` says."""
    entries = b""
    for name in sorted(files, key=str.encode):
        blob = hashlib.sha1(b"blob %d\0" % len(files[name]) + files[name]).digest()
        entries += b"100644 " + name.encode() + b"\0" + blob
    return hashlib.sha1(b"tree %d\0" % len(entries) + entries).hexdigest()


def _fetch_converted(entry: dict[str, Any], dest: Path) -> str | None:
    """Download an entry's original, check it, convert it into `dest`; the reason when that fails."""
    src, conv = entry["source"], entry["conversion"]
    with tempfile.TemporaryDirectory() as tmp:
        original = Path(tmp) / Path(src["path"]).name
        if "tree" in src:  # a folder of <n>.json events, numbered from 0
            files = {
                f"{n}.json": _download(_raw_url(src["repo"], src["commit"], f"{src['path']}/{n}.json"))
                for n in range(int(src["files"]))
            }
            if _git_tree_id(files) != src["tree"]:
                return "the downloaded folder is not the labelled git tree"
            original.mkdir()
            for name, data in files.items():
                (original / name).write_bytes(data)
        else:
            data = _download(_raw_url(src["repo"], src["commit"], src["path"]))
            if hashlib.sha256(data).hexdigest() != src["sha256"]:
                return "the original's sha256 differs from the labelled one"
            original.write_bytes(data)
        out = Path(tmp) / "converted.jsonl"
        cmd = [sys.executable, str(CONVERTER), conv["format"], str(original), str(out), *conv.get("args", [])]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            return f"conversion failed: {done.stderr.strip()}"
        converted = out.read_bytes()
    if hashlib.sha256(converted).hexdigest() != entry["sha256"]:
        return "the converted file's sha256 differs from the labelled one"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(converted)
    return None


def main(argv: list[str]) -> int:
    global MIRROR
    dry = "--dry-run" in argv
    if "--mirror" in argv:
        i = argv.index("--mirror")
        if i + 1 >= len(argv) or not Path(argv[i + 1]).is_dir():
            print("fetch.py: --mirror needs a folder of git snapshots (<owner>+<name>/repo)", file=sys.stderr)
            return 2
        MIRROR = Path(argv[i + 1])
    entries = yaml.safe_load((HERE / "labels.yaml").read_text())["sessions"]
    fetched = failed = 0
    for entry in entries:
        src = entry["source"]
        if "conversion" in entry:
            dest = CACHE / entry["file"]
            if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == entry["sha256"]:
                continue
            if dry:
                print(f"would fetch {src['url']}, convert it ({entry['conversion']['format']}) -> {dest}")
                continue
            try:
                why = _fetch_converted(entry, dest)
            except OSError as exc:
                why = str(exc)
            if why:
                print(f"{entry['id']}: {src['url']}: {why}; not kept", file=sys.stderr)
                failed += 1
            else:
                fetched += 1
            continue
        for file, path, digest in _wanted(entry):
            dest = CACHE / file
            if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == digest:
                continue
            url = _raw_url(src["repo"], src["commit"], path)
            if dry:
                print(f"would fetch {url} -> {dest}")
                continue
            try:
                data = _download(url)
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
