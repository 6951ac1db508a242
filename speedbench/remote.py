"""Watcher cost per tick with N remote runs streaming (the `ray` executor) against N local ones.

Run:  .venv/bin/python speedbench/remote.py [--runs 50] [--speed 40] [--ticks 15]

Starts a local Ray cluster (a head without the run resource, one worker node with `agent_slot: N`,
all on 127.0.0.1), makes two orchestrator homes with the same N demo tickets (the healthy case at
`--speed`), launches them in both (local supervisors in one, Ray actors followed back in the other),
then times `watch.one_pass` on each home alternately, tick by tick, while both sides stream. Prints
the medians and their ratio (remote / local), and the CPU the local side's supervisors and the remote
side's followers spent in the window. Needs the `ray` extra. Reports only: exits 0 whatever the ratio.
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


def cpu_of(home: Path) -> float:
    """User+system seconds of the live supervisors (or followers) of the runs in `home`."""
    total = 0.0
    for d in (home / "runs").glob("*/state.json"):
        sup = json.loads(d.read_text()).get("supervisor")
        if not sup:
            continue
        try:
            t = psutil.Process(sup["pid"]).cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--speed", type=float, default=40.0)
    ap.add_argument("--ticks", type=int, default=15)
    ap.add_argument("--start-timeout", type=float, default=900.0)
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
        for kind, home in homes.items():
            home.mkdir()
            cfg: dict[str, object] = {"heartbeat_seconds": 3600}
            if kind == "ray":
                cfg["executor"] = {"kind": "ray", "address": cluster.address, "resources": {"agent_slot": 1}}
            (home / "config.yaml").write_text(json.dumps(cfg))
            paths = []
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
                paths.append(str(t))
            started = time.monotonic()
            p = cli(home, "launch", *paths)
            print(f"{kind}: launched {a.runs} in {time.monotonic() - started:.1f} s (rc {p.returncode})", flush=True)
        deadline = time.monotonic() + a.start_timeout
        while time.monotonic() < deadline:
            running = {k: sum(s == "running" for s in states(h).values()) for k, h in homes.items()}
            if running["ray"] >= a.runs and running["local"] >= 1:
                break
            time.sleep(1)
        print(f"streaming: {running}", flush=True)
        buckets = BucketsFile()
        took: dict[str, list[float]] = {"local": [], "ray": []}
        cpu0 = {k: cpu_of(h) for k, h in homes.items()}
        t_start = time.monotonic()
        for _ in range(a.ticks):
            for kind, home in homes.items():
                os.environ["ORCHESTRATOR_HOME"] = str(home)
                cfg_loaded = load_config()
                t0 = time.perf_counter()
                one_pass(buckets, cfg_loaded, notifier=None)
                took[kind].append(time.perf_counter() - t0)
            time.sleep(0.5)
        window = time.monotonic() - t_start
        cpu = {k: cpu_of(h) - cpu0[k] for k, h in homes.items()}
        med = {k: statistics.median(v) for k, v in took.items()}
        for kind in homes:
            lines = sum(1 for d in (homes[kind] / "runs").glob("*/events.jsonl") for _ in d.open("rb"))
            print(
                f"{kind}: tick median {med[kind] * 1000:.1f} ms (min {min(took[kind]) * 1000:.1f}, max "
                f"{max(took[kind]) * 1000:.1f}); {lines} envelopes; supervisors/followers CPU "
                f"{cpu[kind]:.1f} s in {window:.0f} s; end states {sorted(set(states(homes[kind]).values()))}"
            )
        print(f"remote/local watcher tick ratio with {a.runs} runs each: {med['ray'] / med['local']:.2f}x")
        return 0
    finally:
        for home in homes.values():
            for run_id, s in states(home).items() if home.exists() else ():
                if s in ACTIVE:
                    cli(home, "kill", run_id)
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
