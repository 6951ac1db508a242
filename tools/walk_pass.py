"""Walk one watcher pass over one live run and say where it went: rooms (modules), packages,
stays, and how often it came back to a room or a package it had already left.

    .venv/bin/python tools/walk_pass.py [--speed 10]

It builds the demo's sample repo in a throwaway state folder, launches the demo agent on the
recorded spiral (slowed down, so the run is live), lets one untraced pass warm the run's cache,
waits for the log to grow, and traces the next pass (`monitor.refresh`) with a profiler hook. A
room is entered by a call into a module of `orchestrator/` from another (a return is not an entry);
other code (the standard library, msgspec, the compiled detector) does not end a stay. Prints the figures,
then the rooms entered more than twice. `--depth N` counts only the calls at most N frames below
the pass (1: what the pass itself calls). The run is killed at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _room(frame: FrameType | None) -> str | None:
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(str(ROOT / "orchestrator")):
            return str(Path(path).relative_to(ROOT))
        frame = frame.f_back
    return None


def _depth(frame: FrameType | None, root: FrameType) -> int:
    n = 0
    while frame is not None and frame is not root:
        n, frame = n + 1, frame.f_back
    return n if frame is root else 1 << 30


def trace(call: Any, depth: int) -> list[str]:
    """The rooms one call went through, in order (consecutive repeats are one stay), counting only
    calls at most `depth` frames below it (0: no limit)."""
    stays: list[str] = []
    root = sys._getframe()

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        at: FrameType | None = frame
        # (+2: the lambda and the traced function itself sit between this frame and the depth counted)
        if depth and at is not None and _depth(at, root) > depth + 2:
            return
        room = _room(at)
        if room is not None and (not stays or stays[-1] != room):
            stays.append(room)

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return stays


def figures(stays: list[str]) -> dict[str, Any]:
    def package(room: str) -> str:
        return str(Path(room).parent)

    rooms: set[str] = set()
    revisits: Counter[str] = Counter()
    entered: Counter[str] = Counter()
    packs: list[str] = []
    pack_entered: Counter[str] = Counter()
    for room in stays:
        entered[room] += 1
        if room in rooms:
            revisits[room] += 1
        rooms.add(room)
        p = package(room)
        if not packs or packs[-1] != p:
            packs.append(p)
            pack_entered[p] += 1
    return {
        "stays": len(stays),
        "rooms": len(rooms),
        "packages": len(pack_entered),
        "package changes": len(packs) - 1,
        "returns to a room left before": sum(revisits.values()),
        "rooms entered more than twice": {r: n for r, n in entered.most_common() if n > 2},
        "packages entered more than twice": {p: n for p, n in pack_entered.most_common() if n > 2},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed", type=float, default=10.0, help="recorded minutes per real minute (default 10)")
    ap.add_argument("--depth", type=int, default=0, help="count calls at most this deep below the pass (0: all)")
    ap.add_argument("--stays", action="store_true", help="also print the stays, in order")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="walk-pass-"))
    os.environ["ORCHESTRATOR_HOME"] = str(home)
    os.environ["ORCHESTRATOR_AUTOSTART_WATCHER"] = "0"
    sys.path.insert(0, str(ROOT))
    from orchestrator import config, data
    from orchestrator.buckets import BucketsFile
    from orchestrator.demo.run import HEALTHY_CASE, SPIRAL_CASE, make_sample_repo, write_tickets
    from orchestrator.runs import monitor
    from orchestrator.runs.kill import kill_run
    from orchestrator.runs.launch import launch

    cfg, buckets = config.load(), BucketsFile()
    corpus = data.path("demo-cases")
    repo = home / "sample-repo"
    make_sample_repo(repo, [corpus / HEALTHY_CASE, corpus / SPIRAL_CASE])
    ticket = write_tickets(home, repo, corpus, args.speed)[1]
    run_dir = launch(str(ticket), cfg, buckets, watcher=False).run_dir
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            view = monitor.refresh(run_dir, buckets, cfg)  # untraced: the cache is warm for the traced pass
            if view.record.state == "running" and view.record.spiral.tool_calls >= 5:
                break
            time.sleep(0.5)
        size = (run_dir / "events.jsonl").stat().st_size
        while (run_dir / "events.jsonl").stat().st_size == size and time.monotonic() < deadline:
            time.sleep(0.1)  # the traced pass has new lines to feed
        stays = trace(lambda: monitor.refresh(run_dir, buckets, cfg), args.depth)
    finally:
        kill_run(run_dir, "walk_pass is done")
    for key, value in figures(stays).items():
        print(f"{key}: {value}")
    if args.stays:
        print("\n".join(f"  {i:3d} {room}" for i, room in enumerate(stays, 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
