"""Watcher cost per tick with N remote runs streaming (the `ray` executor) against N local ones.

Run:  .venv/bin/python speedbench/remote.py [--runs 50] [--speed 4] [--ticks 30] [--first ray|local|both]

Starts a local Ray cluster (a head without the run resource, one worker node with `agent_slot: N`,
all on 127.0.0.1), makes two orchestrator homes with the same N demo tickets (the healthy case at
`--speed`: at 4 a run lasts 14 min, longer than both ramp-ups and the window), launches one side and
waits until all N of its runs stream, then the other (`--first ray|local`; `both` launches them at
once, which on 2 cores slows both ramp-ups: one multiplexing follower places N actors, N local
supervisors start), then times `watch.one_pass` on each home alternately, tick by tick, while every
run of both sides streams (the window closes early if one ends). Prints the ramp-ups, the medians and their ratio (remote / local),
and the CPU and memory of the local side's supervisors and of the remote side's follower process in
the window. Needs the `ray` extra. Reports only: exits 0 whatever the ratio.
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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "orchestrator" / "data" / "demo-cases" / "healthy-001-steady-feature"
ACTIVE = ("queued", "launching", "running")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ORCHESTRATOR_HOME": str(home), "ORCHESTRATOR_AUTOSTART_WATCHER": "0"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def states(home: Path) -> dict[str, str]:
    out = {}
    for d in (home / "runs").glob("*/state.json"):
        try:
            out[d.parent.name] = json.loads(d.read_text())["state"]
        except (OSError, ValueError):
            pass
    return out


def followers(home: Path) -> list[psutil.Process]:
    """The distinct live supervisors of the runs in `home` (one per local run; the multiplexer for Ray)."""
    seen: dict[int, psutil.Process] = {}
    for d in (home / "runs").glob("*/state.json"):
        try:
            sup = json.loads(d.read_text()).get("supervisor")
            if sup and sup["pid"] not in seen:
                p = psutil.Process(sup["pid"])
                if abs(p.create_time() - sup["create_time"]) < 1.0:
                    seen[sup["pid"]] = p
        except (OSError, ValueError, psutil.Error):
            pass
    return list(seen.values())


def cpu_of(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def rss_mb(procs: list[psutil.Process]) -> float:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def envelopes(home: Path) -> int:
    return sum(d.read_bytes().count(b"\n") for d in (home / "runs").glob("*/events.jsonl"))


def wait_running(home: Path, n: int, timeout: float) -> tuple[int, float]:
    """Until `n` runs of `home` are running (or the timeout): how many are, and after how long."""
    started = time.monotonic()
    count = 0
    while time.monotonic() - started < timeout:
        now = list(states(home).values())
        count = sum(s == "running" for s in now)
        if count >= n or not any(s in ("queued", "launching") for s in now):  # all streaming, or some ended
            break
        time.sleep(0.5)
    return count, time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--speed", type=float, default=4.0)
    ap.add_argument("--ticks", type=int, default=30)
    ap.add_argument("--start-timeout", type=float, default=900.0)
    ap.add_argument("--first", choices=("ray", "local", "both"), default="ray", help="which side launches first")
    a = ap.parse_args()
    from ray.cluster_utils import Cluster

    from orchestrator.buckets import BucketsFile
    from orchestrator.config import load as load_config
    from orchestrator.runs.watch import one_pass

    root = Path(tempfile.mkdtemp(prefix="rb", dir="/tmp"))
    os.environ["RAY_TMPDIR"] = str(root)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every node on 127.0.0.1
    (root / "ray").mkdir()
    cluster = None
    homes = {"local": root / "home-local", "ray": root / "home-ray"}
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "resources": {},
                "node_ip_address": "127.0.0.1",
                "temp_dir": str(root / "ray"),
            },
        )
        cluster.add_node(num_cpus=1, resources={"agent_slot": a.runs}, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes(timeout=120)
        repo = root / "origin"
        (repo / "src").mkdir(parents=True)
        (repo / "src" / "app.py").write_text("print('hi')\n")
        for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
            subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@localhost", *cmd], cwd=repo, check=True)
        tickets: dict[str, list[str]] = {}
        for kind, home in homes.items():
            home.mkdir()
            cfg: dict[str, object] = {"heartbeat_seconds": 3600}
            if kind == "ray":
                cfg["executor"] = {"kind": "ray", "address": cluster.address, "resources": {"agent_slot": 1}}
            (home / "config.yaml").write_text(json.dumps(cfg))
            tickets[kind] = []
            for i in range(a.runs):
                t = root / f"t-{kind}-{i}.md"
                front = {
                    "id": f"b{i}",
                    "repo": str(repo),
                    "bucket": "medium",
                    "agent": "demo",
                    "demo_case": str(CASE),
                    "speed": a.speed,
                    "overrides": {"snapshot_every_seconds": 2},
                }
                t.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in front.items()) + "---\nbench\n")
                tickets[kind].append(str(t))

        def ramp_up(kind: str) -> tuple[int, float, int, float]:
            started = time.monotonic()
            p = cli(homes[kind], "launch", *tickets[kind])
            launched = time.monotonic() - started
            count, more = wait_running(homes[kind], a.runs, a.start_timeout)
            return p.returncode, launched, count, launched + more

        if a.first == "both":  # their runs about as far along in the window; both ramp-ups slower
            with ThreadPoolExecutor(2) as pool:
                ramps = dict(zip(homes, pool.map(ramp_up, homes), strict=True))
        else:  # one side after the other: the first side's runs are further along in the window
            order = [a.first, *(k for k in homes if k != a.first)]
            ramps = {k: ramp_up(k) for k in order}
        running = {k: r[2] for k, r in ramps.items()}
        for kind, (rc, launched, count, ramp) in ramps.items():
            print(
                f"{kind}: `launch` of {a.runs} returned in {launched:.1f} s (rc {rc}); "
                f"{count} of {a.runs} streaming {ramp:.1f} s after the launch began; {envelopes(homes[kind])} "
                "envelopes so far",
                flush=True,
            )
        print(f"streaming: {running}; end states so far {dict(Counter(states(homes['ray']).values()))}", flush=True)
        buckets = BucketsFile()
        took: dict[str, list[float]] = {"local": [], "ray": []}
        procs = {k: followers(h) for k, h in homes.items()}
        cpu0 = {k: cpu_of(v) for k, v in procs.items()}
        t_start = time.monotonic()
        for i in range(a.ticks):
            live = {k: sum(s == "running" for s in states(h).values()) for k, h in homes.items()}
            if min(live.values()) < a.runs:  # a side's runs began to end: the window is over
                print(f"window closed after {i} ticks: running {live}", flush=True)
                break
            for kind, home in homes.items():
                os.environ["ORCHESTRATOR_HOME"] = str(home)
                cfg_loaded = load_config()
                t0 = time.perf_counter()
                one_pass(buckets, cfg_loaded, notifier=None)
                took[kind].append(time.perf_counter() - t0)
            time.sleep(0.5)
        window = time.monotonic() - t_start
        cpu1 = {k: cpu_of(v) for k, v in procs.items()}
        cpu = {k: sum(cpu1[k].get(pid, t) - t for pid, t in cpu0[k].items()) for k in homes}
        if not took["ray"]:
            print("no tick with every run of both sides streaming: no ratio (try a lower --speed)")
            return 0
        med = {k: statistics.median(v) for k, v in took.items()}
        for kind in homes:
            lines = envelopes(homes[kind])
            print(
                f"{kind}: tick median {med[kind] * 1000:.1f} ms (min {min(took[kind]) * 1000:.1f}, max "
                f"{max(took[kind]) * 1000:.1f}); {lines} envelopes; {len(procs[kind])} supervisor/follower "
                f"process(es), CPU {cpu[kind]:.1f} s in {window:.0f} s, RSS {rss_mb(procs[kind]):.0f} MB; "
                f"states {dict(Counter(states(homes[kind]).values()))}"
            )
        print(
            f"remote/local watcher tick ratio with {a.runs} runs each streaming, over {len(took['ray'])} ticks: "
            f"{med['ray'] / med['local']:.2f}x"
        )
        return 0
    finally:
        for home in homes.values():
            for run_id, s in states(home).items() if home.exists() else ():
                if s in ACTIVE:
                    cli(home, "kill", run_id)
        mine = str(root) + os.sep  # what is left of this bench only (its multiplexer names its home)
        for q in psutil.process_iter(["cmdline"]):
            if q.pid != os.getpid() and any(mine in c for c in q.info["cmdline"] or []):
                q.kill()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
