"""Trip to page (issue 37): how long after the loop shows in a run's log does its page arrive?

Run:  .venv/bin/python speedbench/wake.py [--runs 50] [--spirals 10] [--tick 30] [--seconds 80]

Side by side in one run, the same fleet twice, each from scratch in its own folder under
speedbench/out/ (gitignored, removed at the end unless --keep): a real watcher (`watch --tick
TICK`, the default tick) started first, then --runs live runs of the test suite's scripted agent
(tests/fake_agent.py), launched with one `launch`. Every run makes a call every 3 s for --seconds;
--spirals of them, at staggered moments, write a burst of 40 identical failing runs of a scratch
script at once (the loop), then go on as before. The small bucket's soft band opens 2 s in, so
the only wait is the watcher's. The pages go to a receiver on 127.0.0.1 that notes when each
arrives.

  mode `tick`: `watch --no-wake`, the watcher before issue 37: runs are evaluated at ticks only;
  mode `wake`: `watch` (its default): a run is evaluated as its log grows (orchestrator/runs/wake.py).

Trip to page is the page's arrival less the time the supervisor stamped on the burst's first
line. Printed per mode: n, p50, p95, max; the watcher's CPU seconds (user + system) over the
fleet's life, and per live run per minute; then the ratio of the p95s. A report, never a timed
assertion: exit 1 only when a healthy run paged, or a spiral did not page with the wake on (the
tick-only watcher can miss one that ends before its next tick: its `missed` count says how many).
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
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
PY = sys.executable
FAKE = ROOT / "tests" / "fake_agent.py"
BURST = 40

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "speedbench"))
from fleet import make_repo, say  # noqa: E402  (speedbench/fleet.py: its small repo and its printing)

from orchestrator.demo.sink import Sink  # noqa: E402


def body(seconds: float, spiral_at: float | None) -> str:
    """A fake-agent script: a call every 3 s for `seconds`; at `spiral_at`, the burst."""
    healthy = ['say {"tool": "Bash", "command": "ls src"}', "sleep 3"]
    loop = json.dumps({"tool": "Bash", "command": "python tmp_loop.py", "output": "Error: boom", "exit_code": 1})
    steps = ["write tmp_loop.py"]
    t = 0.0
    while t < seconds:
        if spiral_at is not None and spiral_at <= t < spiral_at + 3:
            steps += [f"say {loop}"] * BURST
        steps += healthy
        t += 3
    return "\n".join(steps)


def ts_of(line: str) -> float:
    return datetime.fromisoformat(json.loads(line)["ts"].replace("Z", "+00:00")).timestamp()


def one_mode(base: Path, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    home = base / mode / "orchestrator-home"
    home.mkdir(parents=True)
    repo = base / mode / "repo"
    make_repo(repo)
    sink = Sink(path="hook").start()
    cfg = {
        "agents": {"fake": {"command": [PY, str(FAKE)], "format": "generic", "version_command": [PY, "--version"]}},
        "notify": {"urls": [sink.url], "events": ["spiral"]},
        "autostart_watcher": False,
    }
    (home / "config.yaml").write_text(json.dumps(cfg))
    env = {
        **os.environ,
        "ORCHESTRATOR_HOME": str(home),
        "HOME": str(base / mode),
        "ORCHESTRATOR_AUTOSTART_WATCHER": "0",
    }
    overrides = {
        "snapshot_every_seconds": 1,
        "buckets": {"small": {"expected_min": 0.02, "soft_start_min": 0.03, "stuck_min": 30}},
    }
    tickets = base / mode / "tickets"
    tickets.mkdir()
    spirals = {}
    paths = []
    for i in range(args.runs):
        spiral_at = None
        if i < args.spirals:  # staggered through the fleet's life, clear of its start and end
            spiral_at = 9 + (args.seconds - 24) * i / max(1, args.spirals - 1)
        front = {"id": f"w{i:03d}", "repo": str(repo), "bucket": "small", "agent": "fake", "overrides": overrides}
        path = tickets / f"w{i:03d}.md"
        path.write_text(
            "---\n"
            + "".join(f"{k}: {json.dumps(v)}\n" for k, v in front.items())
            + "---\n"
            + body(args.seconds, spiral_at)
            + "\n"
        )
        paths.append(path)
        if spiral_at is not None:
            spirals[f"w{i:03d}"] = spiral_at
    argv = [PY, "-m", "orchestrator", "watch", "--tick", str(args.tick)] + (["--no-wake"] if mode == "tick" else [])
    watcher = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    import psutil

    proc = psutil.Process(watcher.pid)
    try:
        time.sleep(1.5)  # its first pass: no runs yet
        launched = subprocess.run(
            [PY, "-m", "orchestrator", "launch", *map(str, paths), "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if launched.returncode != 0:
            raise SystemExit(f"launch failed: {launched.stderr.strip()[-400:]}")
        doc = json.loads(launched.stdout)
        ids = {r["run_id"].split("-")[0]: r["run_id"] for r in doc.get("runs", [doc])}
        cpu0 = sum(proc.cpu_times()[:2])
        t0 = time.time()
        runs_dir = home / "runs"
        while time.time() - t0 < args.seconds + args.tick + 30:
            states = []
            for rid in ids.values():
                try:
                    states.append(json.loads((runs_dir / rid / "state.json").read_text())["state"])
                except (OSError, ValueError, KeyError):
                    states.append("?")
            if all(s not in ("queued", "launching", "running", "?") for s in states):
                break
            time.sleep(1)
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        wall = time.time() - t0
    finally:
        watcher.terminate()
        watcher.wait(timeout=60)
        sink.stop()
    latencies: list[float] = []
    missed: list[str] = []
    false_pages = 0
    arrivals = sink.arrivals()
    for ticket, rid in ids.items():
        title = f"run {rid} may be spiraling"
        got = [at for at, b in arrivals if b.get("title") == title]
        if ticket not in spirals:
            false_pages += bool(got)
            continue
        events = (runs_dir / rid / "events.jsonl").read_text().splitlines()
        first = next((ts_of(x) for x in events if "tmp_loop.py" in x), None)
        if not got or first is None:
            missed.append(ticket)
            continue
        latencies.append(min(got) - first)
    return {
        "mode": mode,
        "latencies": sorted(latencies),
        "missed": missed,
        "false_pages": false_pages,
        "cpu_s": cpu,
        "wall_s": wall,
        "runs": len(ids),
    }


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50, help="live runs at once")
    ap.add_argument("--spirals", type=int, default=10, help="of them, how many loop (staggered)")
    ap.add_argument("--tick", type=float, default=30.0, help="the watcher's tick (the default: 30)")
    ap.add_argument("--seconds", type=float, default=80.0, help="how long each run lives")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    if not (1 <= args.spirals <= args.runs) or args.seconds < 30:
        raise SystemExit("need 1 <= --spirals <= --runs and --seconds >= 30")
    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="wake-", dir=OUT))
    load = os.getloadavg()
    say(f"trip to page: {args.runs} live runs, {args.spirals} loop, tick {args.tick:g} s, cpus {os.cpu_count()}")
    say(f"load average at start: {load[0]:.2f}")
    results = []
    failed = False
    try:
        for mode in ("tick", "wake"):
            r = one_mode(base, mode, args)
            results.append(r)
            lat = r["latencies"]
            per_run_min = r["cpu_s"] / r["runs"] / (r["wall_s"] / 60.0)
            say(
                f"{mode:5}: n {len(lat)}, p50 {pct(lat, 50):.2f} s, p95 {pct(lat, 95):.2f} s, "
                f"max {max(lat, default=float('nan')):.2f} s; missed {len(r['missed'])}, healthy paged "
                f"{r['false_pages']}; watcher CPU {r['cpu_s']:.1f} s over {r['wall_s']:.0f} s "
                f"({per_run_min * 1000:.1f} ms per run per minute)"
            )
            # the tick-only watcher may miss a loop whose run ends before its next tick: that is its defect
            failed = failed or r["false_pages"] > 0 or (mode == "wake" and bool(r["missed"]))
        tick, wake = results
        if tick["latencies"] and wake["latencies"]:
            say(
                f"trip to page p95, wake / tick: {pct(wake['latencies'], 95):.2f} / {pct(tick['latencies'], 95):.2f} s "
                f"= {pct(wake['latencies'], 95) / pct(tick['latencies'], 95):.3f}x"
            )
            say(f"watcher CPU, wake / tick: {wake['cpu_s'] / max(tick['cpu_s'], 1e-9):.2f}x")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
