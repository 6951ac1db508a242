"""The built-in demo agent: re-enacts a recorded corpus case inside the clone.

`python -m orchestrator.demo.agent --case DIR [--speed N]`, run in the clone.
It reads its guidance inbox ($ORCHESTRATOR_GUIDANCE_DIR) at each step.
It prints the case's native log lines at their recorded offsets (divided by
the speed) and makes the clone's files appear, change and vanish as the
case's workspace snapshots say. No model, no network, no API key.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import orjson

from orchestrator.guidance import inbox
from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.record.case import load_case
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import LineCounter, read_events, read_snapshots
from spiral.model import Snapshot


def _timeline(case_dir: Path) -> tuple[list[tuple[float, str, object]], str, float]:
    """(offset seconds, "log" | "fs", payload) in recorded order, the case's workdir, its length."""
    case = load_case(case_dir)
    counter = LineCounter()
    items: list[tuple[float, str, object]] = [
        (ts - case.started_at, "log", data) for ts, data in read_events(CaseFiles(case_dir).events, counter)
    ]
    items += [
        (snap.ts - case.started_at, "fs", snap) for snap in read_snapshots(CaseFiles(case_dir).workspace, counter)
    ]
    items.sort(key=lambda x: (x[0], x[1] == "log"))  # a snapshot before the calls of its moment
    return items, case.workdir or "", case.ended_at - case.started_at


class Workspace:
    """Makes the clone match a snapshot: content per blob id, deletions, reverts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: dict[str, str] = {}
        self.listed: set[str] = set()

    def apply(self, snap: Snapshot) -> None:
        for path, st in snap.status.items():
            target = self.root / path
            if "D" in st:
                target.unlink(missing_ok=True)
                continue
            marker = snap.hashes.get(path, st)
            if self.written.get(path) != marker:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"demo content {marker}\n")
                self.written[path] = marker
        for path in self.listed - set(snap.status):
            self._restore(path)
            self.written.pop(path, None)
        self.listed = set(snap.status)

    def _restore(self, path: str) -> None:
        rc, _, _ = proc.run(["git", "checkout", "--", path], cwd=self.root, check=False)
        if rc != 0:  # not tracked: it was a new file, and now it is gone
            (self.root / path).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="demo_agent", description=__doc__)
    ap.add_argument("--case", required=True, type=Path)
    ap.add_argument("--speed", type=float, default=1.0)
    args = ap.parse_args(argv)
    if not CaseFiles(args.case).is_case():
        sys.stderr.write(f"demo_agent: {args.case}: not a case folder\n")
        return 2
    try:
        items, workdir, duration = _timeline(args.case)
    except UserError as exc:
        sys.stderr.write(f"demo_agent: {exc}\n")
        return 2
    here = str(Path.cwd())
    ws = Workspace(Path.cwd())
    t0 = time.monotonic()
    out = sys.stdout.buffer
    # the inbox protocol (orchestrator/guidance/inbox.py): read at each step, the demo's turn boundary.
    # A recording cannot change course; it takes the message, so the receipt path runs as with any agent
    gdir = Path(os.environ[inbox.ENV]) if os.environ.get(inbox.ENV) else None
    for offset, kind, payload in items:
        delay = offset / args.speed - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        if kind == "fs":
            assert isinstance(payload, Snapshot)
            ws.apply(payload)
            continue
        line = orjson.dumps(payload)
        if workdir:
            line = line.replace(workdir.encode(), here.encode())
        out.write(line + b"\n")
        out.flush()
        if gdir is not None:
            for msg in inbox.claim_all(gdir, "demo agent, after a step"):
                sys.stderr.write(f"demo_agent: received guidance {msg.id}; a recording keeps to its script\n")
    rest = duration / args.speed - (time.monotonic() - t0)
    if rest > 0:
        time.sleep(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
