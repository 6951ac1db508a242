"""The fleet stress benchmark (issue 13), the large version of tests/runs/test_fleet.py's stress test.

Run:  .venv/bin/python speedbench/fleet.py [--tickets 50] [--cap 4] [--kill-every 1.5] [--speed 300]
      .venv/bin/python speedbench/fleet.py --tickets 200 --cap 8 --kill-every 3 --spiral-every 4   # issue 38

From scratch in a fresh folder under speedbench/out/ (gitignored; removed at the end unless
--keep or an invariant failed): its own ORCHESTRATOR_HOME and HOME, a small real git repo, a config.yaml with
max_parallel = --cap, and --tickets tickets for the built-in demo agent re-enacting
corpus/healthy-001-steady-feature at --speed (bucket medium). All are launched with one
`python -m orchestrator launch ... --json` (past the cap they wait in state queued); a watcher
(`watch --tick 0.2`) starts them as slots free and is SIGKILLed and restarted every
--kill-every seconds meanwhile. Progress is printed every few seconds until every run has
ended or --timeout passes (then the runs still active are killed).

With --spiral-every K, every K-th ticket re-enacts corpus/spiral-001-fixture-shim instead (it pages
in its soft band), and a page receiver on 127.0.0.1 (config.yaml `notify:` a json:// URL) counts
every copy of every page by its idempotency key: each spiraling run must page, and a copy beyond the
first is a duplicate (delivery is at least once: a watcher killed between the receiver's answer and
the record sends again). After the end, no process of the fleet may be left (an orphan: a supervisor,
an agent or a tool call still running with the fleet's folder on its command line or as its cwd).

At the end it prints tickets, cap, watcher kills, wall seconds, the most runs at once (from
spawned_at / ended_at in every state.json), runs per ending, the requeues (a run whose admitter
died before its agent started goes back to the queue), and whether every ticket ran exactly
once (one supervisor recorded, the case's whole log in its events.jsonl, exactly once).
Exit 1 if an invariant fails: never more than --cap at once, every ticket ran exactly once,
nothing left queued, launching or running.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
CASE = ROOT / "corpus" / "healthy-001-steady-feature"
SPIRAL = ROOT / "corpus" / "spiral-001-fixture-shim"
ACTIVE = ("queued", "launching", "running")
PY = sys.executable

sys.path.insert(0, str(ROOT))
from orchestrator.demo.sink import Sink  # noqa: E402  (the demo's local json:// receiver)
from orchestrator.runs.fleet import most_at_once  # noqa: E402


def say(text: str = "") -> None:
    print(text, flush=True)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_repo(dest: Path) -> None:
    (dest / "src").mkdir(parents=True)
    (dest / "src" / "app.py").write_text("print('hi')\n")
    git("init", "-q", "-b", "main", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "init", cwd=dest)


def write_tickets(folder: Path, repo: Path, n: int, speed: float, spiral_every: int = 0) -> list[Path]:
    folder.mkdir()
    paths = []
    for i in range(n):
        spiral = spiral_every > 0 and i % spiral_every == spiral_every - 1
        front = {
            "id": f"s{i:03d}",
            "repo": str(repo),
            "bucket": "medium",
            "agent": "demo",
            "demo_case": str(SPIRAL if spiral else CASE),
            "speed": speed,
        }
        path = folder / f"s{i:03d}.md"
        path.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in front.items()) + "---\nre-enact\n")
        paths.append(path)
    return paths


def orphans(base: Path) -> list[str]:
    """Processes still running with the fleet's folder on their command line or as their cwd."""
    import psutil

    out = []
    mine = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            if proc.pid == mine:
                continue
            cmd = " ".join(proc.info["cmdline"] or [])
            if str(base) in cmd or str(proc.info["cwd"] or "").startswith(str(base)):
                out.append(f"{proc.pid} {cmd[:100]}")
        except (psutil.Error, OSError):
            continue
    return out


class Fleet:
    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.home = base / "orchestrator-home"
        self.env = env
        self.log = (base / "watchers.log").open("ab")
        self.watchers: list[subprocess.Popen[bytes]] = []
        self.kills = 0

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "orchestrator", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def start_watcher(self) -> None:
        self.watchers.append(
            subprocess.Popen(
                [PY, "-m", "orchestrator", "watch", "--tick", "0.2"],
                cwd=ROOT,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=self.log,
            )
        )

    def killer(self, every: float, stop: threading.Event) -> None:
        while not stop.wait(every):
            w = self.watchers[-1]
            os.kill(w.pid, signal.SIGKILL)
            w.wait(timeout=20)
            self.kills += 1
            self.start_watcher()

    def stop_watchers(self) -> None:
        for w in self.watchers:
            if w.poll() is None:
                w.terminate()
                try:
                    w.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    w.kill()
                    w.wait()
        self.log.close()

    def record(self, run_id: str) -> dict[str, Any]:
        try:
            out: dict[str, Any] = json.loads((self.home / "runs" / run_id / "state.json").read_text())
            return out
        except (OSError, ValueError):  # mid-rewrite: asked again on the next look
            return {"run_id": run_id, "state": "?"}

    def lines(self, run_id: str) -> int:
        events = self.home / "runs" / run_id / "events.jsonl"
        return len(events.read_text().splitlines()) if events.exists() else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tickets", type=int, default=50)
    ap.add_argument("--cap", type=int, default=4, help="max_parallel")
    ap.add_argument("--kill-every", type=float, default=1.5, help="seconds between watcher SIGKILLs")
    ap.add_argument("--speed", type=float, default=300, help="demo agent speed (the case lasts 56 recorded min)")
    ap.add_argument("--timeout", type=float, default=900, help="give up after this many seconds of waiting")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder even when all is well")
    ap.add_argument("--spiral-every", type=int, default=0, help="every K-th ticket re-enacts a spiral that pages")
    args = ap.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="fleet-", dir=OUT))
    (base / "home").mkdir()
    env = {
        **os.environ,
        "ORCHESTRATOR_HOME": str(base / "orchestrator-home"),
        "HOME": str(base / "home"),
        "ORCHESTRATOR_AUTOSTART_WATCHER": "0",
    }
    fleet = Fleet(base, env)
    fleet.home.mkdir()
    receiver = Sink().start() if args.spiral_every else None
    notify = f"notify: {{urls: ['{receiver.url}'], events: [spiral]}}\n" if receiver else ""
    (fleet.home / "config.yaml").write_text(f"max_parallel: {args.cap}\n" + notify)
    case_lines = len((CASE / "events.jsonl").read_text().splitlines())
    spiral_lines = len((SPIRAL / "events.jsonl").read_text().splitlines())
    problems: list[str] = []
    ids: list[str] = []
    stop = threading.Event()
    killer = threading.Thread(target=fleet.killer, args=(args.kill_every, stop), daemon=True)
    say(f"fleet: {args.tickets} tickets, cap {args.cap}, watcher SIGKILLed every {args.kill_every:g} s")
    say(f"  demo agent on {CASE.name} ({case_lines} lines) at {args.speed:g}x; folder {base}")
    try:
        make_repo(base / "origin")
        paths = write_tickets(base / "tickets", base / "origin", args.tickets, args.speed, args.spiral_every)
        t0 = time.monotonic()
        p = fleet.cli("launch", *map(str, paths), "--json")
        if p.returncode != 0:
            say(f"launch failed (exit {p.returncode}): {p.stderr.strip()}")
            return 1
        ids = [r["run_id"] for r in json.loads(p.stdout)["runs"]]
        launched = Counter(r["state"] for r in json.loads(p.stdout)["runs"])
        say(
            f"  launched in {time.monotonic() - t0:.1f} s: "
            + ", ".join(f"{k} {v}" for k, v in sorted(launched.items()))
        )
        fleet.start_watcher()
        killer.start()
        deadline = time.monotonic() + args.timeout
        last = 0.0
        while True:
            states = Counter(fleet.record(i)["state"] for i in ids)
            done = not any(states[s] for s in (*ACTIVE, "?"))
            now = time.monotonic()
            if done or now - last >= 5 or now >= deadline:
                last = now
                counts = ", ".join(f"{k} {v}" for k, v in sorted(states.items()))
                say(f"  {now - t0:6.1f} s  {counts}  (watcher kills {fleet.kills})")
            if done:
                break
            if now >= deadline:
                problems.append(f"timed out after {args.timeout:g} s with runs still active")
                break
            time.sleep(0.5)
        took = time.monotonic() - t0
    finally:
        stop.set()
        if killer.is_alive():
            killer.join(timeout=30)
        fleet.stop_watchers()
        for i in ids:  # on a timeout or Ctrl-C: leave no agent behind
            if fleet.record(i)["state"] in ACTIVE:
                fleet.cli("kill", i, timeout=60)

    records = [fleet.record(i) for i in ids]
    endings = Counter(r["state"] for r in records)
    peak = most_at_once(records)
    requeues = sum(int(r.get("requeued") or 0) for r in records)
    requeued_runs = sum(1 for r in records if r.get("requeued"))
    by_queue = sum(1 for r in records if r.get("admitted_by") == "queue")
    not_once = []
    spirals = {r["run_id"] for r in records if SPIRAL.name in str(r.get("demo_case") or r.get("argv") or "")}
    for r in records:
        n = fleet.lines(r["run_id"])
        spiral = r["run_id"] in spirals
        want = spiral_lines if spiral else case_lines
        # a spiral outlasts its stuck time (88 recorded min, stuck at 85): stopped `stalled`, its log cut there
        whole = n == want or (spiral and r["state"] == "stalled" and 0 < n <= want)
        if r.get("supervisor") is None or r.get("spawned_at") is None or not whole or not r.get("ended_at"):
            not_once.append(f"{r['run_id']} ({r['state']}, {n} of {want} lines)")
    time.sleep(3)  # the last sends of the last pass, and the supervisors' last second
    left_over = orphans(base)
    if left_over:
        problems.append(f"{len(left_over)} processes left: " + "; ".join(left_over[:5]))
    pages = {}
    if receiver is not None:
        receiver.stop()
        copies = Counter(str(b.get("idempotency_key")) for b in receiver.bodies())
        pages = {i: copies.get(f"{i}/spiral", 0) for i in spirals}
        unpaged = [i for i, n in pages.items() if n == 0]
        if unpaged:
            problems.append(f"{len(unpaged)} spiraling runs never paged: " + ", ".join(unpaged[:10]))
        healthy_paged = [k for k in copies if k.split("/")[0] not in spirals]
        if healthy_paged:
            problems.append(f"pages for runs that do not spiral: {healthy_paged[:5]}")
    left = [f"{r['run_id']} ({r['state']})" for r in records if r["state"] in (*ACTIVE, "?")]
    if len(ids) != args.tickets:
        problems.append(f"{len(ids)} runs launched for {args.tickets} tickets")
    if peak > args.cap:
        problems.append(f"{peak} runs at once, over the cap of {args.cap}")
    if not_once:
        problems.append(f"{len(not_once)} tickets did not run exactly once: " + ", ".join(not_once[:10]))
    if left:
        problems.append(f"{len(left)} runs left active: " + ", ".join(left[:10]))

    say()
    say("== fleet ==")
    for label, value in (
        ("tickets", str(args.tickets)),
        ("cap (max_parallel)", str(args.cap)),
        ("watcher kills", str(fleet.kills)),
        ("wall seconds (launch to last ending)", f"{took:.1f}"),
        ("max concurrent runs observed", f"{peak} (cap {args.cap})"),
        ("runs per ending", ", ".join(f"{k} {v}" for k, v in sorted(endings.items()))),
        ("admitted by a later pass (not by launch)", str(by_queue)),
        ("requeued", f"{requeues} times, {requeued_runs} runs"),
        ("every ticket ran exactly once", "yes" if not not_once and len(ids) == args.tickets else "NO"),
        ("nothing left queued/launching/running", "yes" if not left else "NO"),
        ("processes left after the end", str(len(left_over))),
        *(
            (
                ("spiraling runs / paged", f"{len(spirals)} / {sum(1 for n in pages.values() if n)}"),
                (
                    "page copies (duplicates beyond the first)",
                    f"{sum(pages.values())} ({sum(max(0, n - 1) for n in pages.values())})",
                ),
            )
            if receiver is not None
            else ()
        ),
    ):
        say(f"  {label:<42} {value}")
    odd = [f"{r['run_id']}: {r['state']} ({r.get('reason')})" for r in records if r["state"] != "succeeded"]
    for line in odd[:10]:
        say(f"  not succeeded: {line}")
    if problems:
        say()
        say("problems:")
        for line in problems:
            say(f"  - {line}")
    if args.keep or problems:  # a failure's run folders are the evidence: kept
        say(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    say("PASS" if not problems else "FAIL")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
