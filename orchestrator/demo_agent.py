"""The built-in demo agent: re-enacts a recorded corpus case inside the clone.

`python -m orchestrator.demo_agent --case DIR [--speed N]`, run in the clone.
It prints the case's native log lines at their recorded offsets (divided by
the speed) and makes the clone's files appear, change and vanish as the
case's workspace snapshots say. No model, no network, no API key.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import orjson
import yaml

from spiral.clock import parse_ts
from spiral.porcelain import parse_porcelain


def _timeline(case: Path) -> tuple[float, list[tuple[float, str, object]], str, float]:
    meta = yaml.safe_load((case / "case.yaml").read_text())
    started = parse_ts(meta["started_at"]) or 0.0
    ended = parse_ts(meta["ended_at"]) or started
    workdir = str(meta.get("workdir") or "")
    items: list[tuple[float, str, object]] = []
    for name, kind in (("events.jsonl", "log"), ("workspace.jsonl", "fs")):
        path = case / name
        if not path.exists():
            continue
        for line in path.read_bytes().splitlines():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            ts = parse_ts(obj.get("ts")) if isinstance(obj, dict) else None
            if ts is None:
                continue
            items.append((ts - started, kind, obj.get("data") if kind == "log" else obj))
    items.sort(key=lambda x: (x[0], x[1] == "log"))
    return started, items, workdir, ended - started


class Workspace:
    """Makes the clone match a snapshot: content per blob id, deletions, reverts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: dict[str, str] = {}
        self.listed: set[str] = set()

    def apply(self, snap: dict[str, object]) -> None:
        status = parse_porcelain(str(snap.get("porcelain", "")))
        hashes = snap.get("hashes") if isinstance(snap.get("hashes"), dict) else {}
        assert isinstance(hashes, dict)
        for path, st in status.items():
            target = self.root / path
            if "D" in st:
                target.unlink(missing_ok=True)
                continue
            marker = str(hashes.get(path, st))
            if self.written.get(path) != marker:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"demo content {marker}\n")
                self.written[path] = marker
        for path in self.listed - set(status):
            self._restore(path)
            self.written.pop(path, None)
        self.listed = set(status)

    def _restore(self, path: str) -> None:
        rc = subprocess.run(["git", "checkout", "--", path], cwd=self.root, capture_output=True).returncode
        if rc != 0:  # not tracked: it was a new file, and now it is gone
            (self.root / path).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="demo_agent", description=__doc__)
    ap.add_argument("--case", required=True, type=Path)
    ap.add_argument("--speed", type=float, default=1.0)
    args = ap.parse_args(argv)
    if not (args.case / "case.yaml").is_file():
        sys.stderr.write(f"demo_agent: {args.case}: not a case folder\n")
        return 2
    _, items, workdir, duration = _timeline(args.case)
    here = str(Path.cwd())
    ws = Workspace(Path.cwd())
    t0 = time.monotonic()
    out = sys.stdout.buffer
    for offset, kind, payload in items:
        delay = offset / args.speed - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        if kind == "fs":
            assert isinstance(payload, dict)
            ws.apply(payload)
            continue
        line = orjson.dumps(payload)
        if workdir:
            line = line.replace(workdir.encode(), here.encode())
        out.write(line + b"\n")
        out.flush()
    rest = duration / args.speed - (time.monotonic() - t0)
    if rest > 0:
        time.sleep(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
