"""`status` right after a cache-version change (issue 37): does it wait on the rebuild?

Run:  .venv/bin/python speedbench/cold_status.py [--runs 100] [--calls 3200] [--repeats 3]

One home under speedbench/out/ (gitignored, removed at the end unless --keep) with --runs live
runs written the way launch and the supervisor leave them (speedbench/gen.py: Claude stream-json
logs of a healthy agent, with workspace snapshots), each log past the cold threshold
(orchestrator/runs/warmup.py COLD_BYTES, 4 MB), each with a `detector.pickle` of an older cache
version, as an upgrade leaves them. Timed, as whole `status --json` processes, side by side:

  cold, a watcher there: the watcher lock held (a watcher is rebuilding): status shows every run
        as last recorded, `evaluating (N of M runs)`, and returns;
  warm: the same home once every cache is rebuilt (the floor: what status costs every day);
  cold, no watcher (autostart off): status rebuilds every cache itself before it answers, as
        every status did before issue 37 (timed once: minutes).

Printed: the median and range of each, and the ratios. A report, no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
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

OLD_CACHE = b"orchestrator detector cache 17\n\x80\x05N."


def status(env: dict[str, str]) -> tuple[float, list[dict[str, object]]]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "status", "--json"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"status failed: {p.stderr.strip()[-600:]}")
    rows: list[dict[str, object]] = json.loads(p.stdout)["runs"]
    return took, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--calls", type=int, default=3200, help="calls a run (about 1.4 kB each: past 4 MB)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    import watcher_rss  # speedbench/watcher_rss.py: the same live runs

    from orchestrator.infra.lock import held
    from orchestrator.runs import warmup

    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="cold-", dir=OUT))
    home = watcher_rss.new_home(base, "home")
    env = {**os.environ, "ORCHESTRATOR_HOME": str(home), "HOME": str(base), "ORCHESTRATOR_AUTOSTART_WATCHER": "0"}
    sleepers = [subprocess.Popen(["sleep", "100000"]) for _ in range(2)]
    try:
        t0 = time.perf_counter()
        watcher_rss.make_runs(home, args.runs, args.calls, (sleepers[0].pid, sleepers[1].pid))
        runs = sorted((home / "runs").iterdir())
        sizes = [(r / "events.jsonl").stat().st_size for r in runs]
        print(
            f"{args.runs} live runs of {args.calls} calls, logs {min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB "
            f"(cold past {warmup.COLD_BYTES / 1e6:.1f} MB), made in {time.perf_counter() - t0:.0f} s",
            flush=True,
        )

        def stale() -> None:
            for r in runs:
                (r / "detector.pickle").write_bytes(OLD_CACHE)

        stale()
        rebuilt, _ = status(env)  # no watcher, autostart off: rebuilds every cache, then answers
        print(f"cold, no watcher (rebuilds first, as every status did before): {rebuilt:.1f} s", flush=True)
        fresh = {r: (r / "detector.pickle").read_bytes() for r in runs}
        cold: list[float] = []
        warm: list[float] = []
        for _ in range(args.repeats):
            stale()
            with held(home / "watch.lock", timeout=0):  # a watcher is there, rebuilding
                took, rows = status(env)
            cold.append(took)
            shown = sum(1 for r in rows if r.get("evaluating"))
            left = sum(1 for r in runs if (r / "detector.pickle").read_bytes() == OLD_CACHE)
            print(f"cold, a watcher there: {took:.2f} s; {shown} of {len(rows)} shown evaluating, {left} left cold")
            for r, data in fresh.items():
                (r / "detector.pickle").write_bytes(data)
            took, _ = status(env)
            warm.append(took)
        med_c, med_w = statistics.median(cold), statistics.median(warm)
        print(f"cold, a watcher there: median {med_c:.2f} s (range {min(cold):.2f}-{max(cold):.2f}, n {len(cold)})")
        print(f"warm: median {med_w:.2f} s (range {min(warm):.2f}-{max(warm):.2f}, n {len(warm)})")
        print(
            f"cold with a watcher / warm: {med_c / med_w:.2f}x; rebuild-first / cold with a watcher: {rebuilt / med_c:.0f}x"
        )
    finally:
        for s in sleepers:
            s.kill()
            s.wait()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
