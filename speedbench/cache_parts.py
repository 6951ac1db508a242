"""What an upgrade costs one long run's cache (issue 37): a whole rebuild, against a rebuild of the
one part whose version changed (runs/evaluator.py PARTS).

Run:  .venv/bin/python speedbench/cache_parts.py [--calls 20000] [--repeats 3]

One live run written the way launch and the supervisor leave it (speedbench/gen.py: a Claude
stream-json log of a healthy agent, with workspace snapshots), its cache built once. Then, side by
side in this process, each repeated:

  walk changed:  the cache's walk part is of another version: the whole log is read again
                 (parser, detector, outcome and spend), as every version change did before;
  spend changed: only the spend part is of another version: the walk is kept and the log is
                 read again for spend alone;
  warm:          the cache is current: a pass reads nothing new (the floor).

Printed: the median and range of each, and the ratio of the spend rebuild to the whole one.
A report, no assertion.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "speedbench"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import watcher_rss  # speedbench/watcher_rss.py: the same live runs

    from orchestrator.buckets import BucketsFile
    from orchestrator.record import state_file
    from orchestrator.record.layout import RunDir
    from orchestrator.runs import evaluator, monitor
    from orchestrator.runs.steps.context import settings_of
    from orchestrator.runs.steps.feed import catch_up

    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="parts-", dir=OUT))
    home = watcher_rss.new_home(base, "home")
    sleepers = [subprocess.Popen(["sleep", "100000"]) for _ in range(2)]
    try:
        watcher_rss.make_runs(home, 1, args.calls, (sleepers[0].pid, sleepers[1].pid))
        rd = RunDir(next((home / "runs").iterdir()))
        record, buckets = state_file.read(rd), BucketsFile()
        settings = settings_of(record, buckets)
        print(f"one live run of {args.calls} calls, log {rd.events.stat().st_size / 1e6:.1f} MB", flush=True)

        def rebuild() -> float:
            monitor.KEPT.discard(rd.detector_cache)
            t0 = time.perf_counter()
            catch_up(rd, record, settings, time.time())
            took = time.perf_counter() - t0
            monitor.KEPT.drop(rd.detector_cache)  # written, as the watcher's worker leaves it
            return took

        rebuild()  # the cache, built once
        whole: list[float] = []
        spend: list[float] = []
        warm: list[float] = []
        walk_header = evaluator.HEADER.replace(f"walk={evaluator.WALK_VERSION}".encode(), b"walk=0")
        spend_header = evaluator.HEADER.replace(f"spend={evaluator.SPEND_VERSION}".encode(), b"spend=0")
        for _ in range(args.repeats):
            for header, into in ((walk_header, whole), (spend_header, spend), (None, warm)):
                if header is not None:  # the file as an upgrade finds it: one part of another version
                    data = rd.detector_cache.read_bytes()
                    rd.detector_cache.write_bytes(header + data[len(evaluator.HEADER) :])
                into.append(rebuild())
                assert evaluator.current(rd.detector_cache), rd.detector_cache.read_bytes()[:80]
        for name, xs in (("walk changed (whole log)", whole), ("spend changed (spend only)", spend), ("warm", warm)):
            print(f"  {name:28} {statistics.median(xs):8.3f} s  ({min(xs):.3f}-{max(xs):.3f})")
        print(f"  spend rebuild / whole rebuild: {statistics.median(spend) / statistics.median(whole):.3f}x")
    finally:
        for s in sleepers:
            s.kill()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
