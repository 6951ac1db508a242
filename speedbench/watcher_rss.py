"""The watcher's memory per live run (issue 37): what a long-lived watcher holds for each run.

Run:  .venv/bin/python speedbench/watcher_rss.py [--runs 40] [--calls 2000] [--big 100000]

For each history size (--calls, and --big for flatness), in a fresh child process:
- the home gets --runs live runs written the way launch and the supervisor leave them
  (speedbench/gen.py: Claude stream-json logs from a healthy agent, workspace snapshots), each with
  that many calls, all pointing at two live `sleep` processes;
- the child, with the watcher's kept memory on (`monitor.KEPT.keep`, as `watch` sets it), makes
  two watcher passes over half of those runs and notes its RSS, then two over all of them and
  notes it again;
- memory per run is the slope over the runs added, of what tracemalloc counts after a gc with the
  process-wide parsing caches emptied (they are bounded and shared by every run; their entries are
  printed): what the process holds once (imports, those caches) is not counted per run. The RSS
  slope is printed beside it, caches and allocator included.

Printed per size: RSS before / after, MB per run, the kept detector.pickle size (a proxy of what
the state holds), and the ratio of MB per run between the sizes (flatness). A report, no assertion.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "speedbench"))

SPACING_S = 3.0


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def new_home(base: Path, name: str) -> Path:
    """A state folder for a bench's live runs, its watcher autostart off (the bench drives every pass)."""
    home = base / name
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(json.dumps({"autostart_watcher": False}))
    return home


def make_runs(home: Path, runs: int, calls: int, owner_pids: tuple[int, int]) -> None:
    import gen  # speedbench/gen.py

    from orchestrator.infra.proc import ProcRef

    owner = gen.Owner(ProcRef.of(owner_pids[0]), ProcRef.of(owner_pids[1]))
    for i in range(runs):
        run_id = f"r{i:03d}"
        rd = gen.new_run_dir(home, run_id)
        session = gen.ClaudeSession(str(rd.clone), gen.REAL, seed=zlib.crc32(run_id.encode()))
        span = calls * SPACING_S
        start = time.time() - span * 1.1 - 60
        gen.write_log(rd.path, session, start=start, spacing=SPACING_S, calls=calls, target_bytes=None, workspace=True)
        gen.write_live_record(rd, start, owner, gen.long_run_settings(span * 1.2 / 60))


def process_caches(clear: bool = False) -> int:
    """Entries in the process-wide parsing caches (functools caches of spiral/, and the masked-output
    memos every run's fingerprinter shares: spiral/fingerprint.py), emptied with `clear`."""
    from spiral import fingerprint

    total = 0
    for memos in list(fingerprint._SHARED.values()):
        for memo in memos:
            total += len(memo)
            if clear:
                memo.clear()
    for name, module in list(sys.modules.items()):
        if not name.startswith("spiral"):
            continue
        for value in list(vars(module).values()):
            info = getattr(value, "cache_info", None)
            if callable(info) and callable(getattr(value, "cache_clear", None)):
                total += info().currsize
                if clear:
                    value.cache_clear()
    return total


def reading() -> tuple[float, float, int]:
    """(VmRSS MB, traced MB with the process-wide caches emptied, their entries before) after a gc."""
    import tracemalloc

    gc.collect()
    rss = rss_mb()
    entries = process_caches(clear=True)
    gc.collect()
    return rss, tracemalloc.get_traced_memory()[0] / 1e6, entries


def child(home: str) -> None:
    """In a fresh process: memory with half the runs kept, then with all of them (two passes each)."""
    import tracemalloc

    tracemalloc.start()
    os.environ["ORCHESTRATOR_HOME"] = home
    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load
    from orchestrator.runs import monitor
    from orchestrator.runs.watch import one_pass

    monitor.KEPT.keep = True
    buckets, cfg = BucketsFile(), load()
    runs = sorted((Path(home) / "runs").iterdir())
    parked = Path(home) / "parked"
    parked.mkdir()
    half = len(runs) // 2
    for d in runs[half:]:
        d.rename(parked / d.name)
    for _ in range(2):
        one_pass(buckets, cfg, None)
    one, traced_one, _ = reading()
    for d in runs[half:]:
        (parked / d.name).rename(d)
    for _ in range(2):
        views = one_pass(buckets, cfg, None)
    every, traced_every, entries = reading()
    states = {v.record.state for v in views}
    pickles = [d / "detector.pickle" for d in runs]
    sizes = [p.stat().st_size for p in pickles if p.exists()]
    out = {"one": one, "every": every, "added": len(runs) - half, "states": sorted(states)}
    out |= {"traced_one": traced_one, "traced_every": traced_every, "cache_entries": entries}
    print(json.dumps(out | {"pickle": sum(sizes) / max(1, len(sizes))}))


def measure(base: Path, runs: int, calls: int, pids: tuple[int, int]) -> dict[str, float]:
    home = new_home(base, f"h{calls}")
    t0 = time.perf_counter()
    make_runs(home, runs, calls, pids)
    made = time.perf_counter() - t0
    env = {**os.environ, "ORCHESTRATOR_HOME": str(home), "HOME": str(home)}
    p = subprocess.run(
        [sys.executable, __file__, "--child", str(home)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if p.returncode != 0:
        raise SystemExit(f"child failed: {p.stderr.strip()[-800:]}")
    got: dict[str, float] = json.loads(p.stdout.strip().splitlines()[-1])
    got["made_s"] = made
    return got


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--calls", type=int, default=2000, help="each run's history, for MB per run")
    ap.add_argument("--big", type=int, default=100_000, help="a longer history, for flatness (0: skip)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="rss-", dir=OUT))
    sleepers = [subprocess.Popen(["sleep", "100000"]) for _ in range(2)]
    pids = (sleepers[0].pid, sleepers[1].pid)
    per: dict[int, float] = {}
    try:
        sizes = [args.calls] + ([args.big] if args.big else [])
        runs_for = {args.calls: args.runs, args.big: max(4, args.runs // 8)}
        for calls in sizes:
            n = runs_for[calls]
            got = measure(base, n, calls, pids)
            per[calls] = (got["traced_every"] - got["traced_one"]) / got["added"]
            rss = (got["every"] - got["one"]) / got["added"]
            print(
                f"{calls:>8} calls x {n} runs: {per[calls]:.3f} MB per run (Python objects the watcher keeps, "
                f"slope from {n - got['added']} to {n} runs); RSS {got['one']:.1f} -> {got['every']:.1f} MB, "
                f"{rss:.2f} MB per run with the process-wide parsing caches filling "
                f"({got['cache_entries']} entries at the end); detector.pickle {got['pickle'] / 1e6:.2f} MB a run; "
                f"states {got['states']}; made in {got['made_s']:.0f} s",
                flush=True,
            )
        if len(per) == 2:
            print(f"MB per run, {args.big} / {args.calls} calls: {per[args.big] / per[args.calls]:.2f}x")
    finally:
        for s in sleepers:
            s.kill()
            s.wait()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
