"""The `ray` executor on a real local Ray cluster: a head without the run's resource, one worker with it.

Every run must land on the worker (`agent_slot`), stream its envelopes and snapshots back into the local
run folder, and be judged by the unchanged watcher: the spiral pages once, a healthy run succeeds,
`kill` stops the remote run, and a worker node that disappears ends its run `lost`. Skipped (with the
reason) only when ray is not installed (`pip install -e '.[ray]'`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    ROOT,
    Receiver,
    cli,
    launch,
    orchestrator_home,
    spiral_pages,
    start_watcher,
    state,
    ticket,
    wait,
    write_config,
)

try:
    from ray.cluster_utils import Cluster
except ImportError as exc:  # the optional extra is not installed
    pytest.skip(f"ray is not importable ({exc}): pip install -e '.[ray]'", allow_module_level=True)

# short recorded cases (9 and 14 run minutes, a few seconds at 40x): what a test checks here is where a
# run executes and how it ends, which a short case shows as well as the demo's hour-long pair
CORPUS = ROOT / "corpus"
HEALTHY = "neg-collect-subagent-results-claude-stream-json"  # 101 envelopes, files changed: succeeds
SPIRAL = "spiral-probe-counter-claude-stream-json"  # pages by the sustained-loop rule from minute 4
LONG = ROOT / "orchestrator" / "data" / "demo-cases" / "healthy-001-steady-feature"


class RayCluster:
    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit
        os.environ["RAY_TMPDIR"] = self.temp  # its address file too (the followers inherit it)
        os.makedirs(os.path.join(self.temp, "ray"))
        # every node, driver and follower on the loopback address (Ray would resolve 127.0.0.1 to the host's IP)
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "resources": {},
                "node_ip_address": "127.0.0.1",
                "temp_dir": os.path.join(self.temp, "ray"),
            },
        )
        self.worker = self.add_worker()

    def add_worker(self) -> Any:
        node = self.cluster.add_node(num_cpus=1, resources={"agent_slot": 2}, node_ip_address="127.0.0.1")
        self.cluster.wait_for_nodes(timeout=60)
        return node

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def shutdown(self) -> None:
        try:
            self.cluster.shutdown()
        finally:
            shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    c = RayCluster()
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture
def on_ray(ray_cluster: RayCluster, receiver: Receiver) -> Iterator[Path]:
    """config.yaml with the ray executor and the receiver; a watcher; the stray remote work cleaned up."""
    home = orchestrator_home()
    write_config(home, notify={"urls": [receiver.url]})
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["executor"] = {"kind": "ray", "address": ray_cluster.address, "resources": {"agent_slot": 1}}
    (home / "config.yaml").write_text(json.dumps(cfg))
    watcher = start_watcher(0.2)
    try:
        yield home
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        # only this test's multiplexer and runs (they name its home; their node folders, its run ids) and
        # their children: other processes on the machine are not ours
        mine = [str(home) + os.sep, *(f"orchestrator-{d.name}-" for d in (home / "runs").glob("*"))]
        for p in psutil.process_iter(["cmdline"]):  # a lost node's supervisor outlives it on one machine
            if any(m in a for a in p.info["cmdline"] or [] for m in mine):
                try:
                    for q in [*p.children(recursive=True), p]:
                        q.kill()
                except psutil.Error:
                    pass
        for d in (home / "runs").glob("*"):  # the node folders a lost node or a killed driver left
            for left in Path(tempfile.gettempdir()).glob(f"orchestrator-{d.name}-*"):
                shutil.rmtree(left, ignore_errors=True)


def _demo(tmp_path: Path, repo: Path, case: str | Path, name: str, speed: float = 40.0) -> str:
    """A demo run re-enacting `case` (a corpus case's name, or a case folder): a run to kill or to
    lose is the demo's 56-minute healthy case at 2x, which is still running when the test acts."""
    bucket = "medium" if case == LONG else "small"
    t = ticket(
        tmp_path, repo, "re-enact", name=name, agent="demo", demo_case=str(CORPUS / case), speed=speed, bucket=bucket
    )
    return launch(t)


def _row(run_id: str) -> dict[str, Any]:
    runs = json.loads(cli("status", "--json").stdout)["runs"]
    return next(r for r in runs if r["id"] == run_id)


def _ended(home: Path, run_id: str) -> bool:
    return state(home, run_id)["state"] not in ("queued", "launching", "running")


def test_a_spiral_on_ray_pages_once_and_a_healthy_run_succeeds(
    tmp_path: Path, repo: Path, receiver: Receiver, on_ray: Path
) -> None:
    home = on_ray
    started = time.monotonic()
    # (40x, not faster: the spiral's page window, minutes 4-14, lasts 15 s, and both runs end 21 run
    # minutes or more before their stuck time, so a pass or an exit that a loaded machine or Ray delays by
    # seconds still lands where it should; generous deadlines: a loaded machine starts a worker slowly)
    run_id = _demo(tmp_path, repo, SPIRAL, "spiral")
    healthy = _demo(tmp_path, repo, HEALTHY, "healthy")  # side by side: one wait, not two
    # its loop is a probe the run wrote and reruns: seen only when the log's paths, under the node's
    # clone, are read against that clone and not the run folder's
    wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=300, what="the spiral page")
    wait(lambda: _ended(home, run_id), timeout=300, what="the spiral run's end")
    s = state(home, run_id)
    assert s["executor"]["kind"] == "ray" and s["executor"]["where"] == "127.0.0.1", s["executor"]
    rd = home / "runs" / run_id
    assert s["executor"]["clone"].startswith(tempfile.gettempdir()) and s["executor"]["clone"] != str(rd / "clone")
    assert f"workdir: {s['executor']['clone']}" in (rd / "case.yaml").read_text()  # its replay reads them so too
    assert (rd / "events.jsonl").stat().st_size > 0 and (rd / "workspace.jsonl").stat().st_size > 0
    assert all(json.loads(line) for line in (rd / "events.jsonl").read_text().splitlines())
    assert spiral_pages(receiver, run_id) == 1
    wait(lambda: _ended(home, healthy), timeout=120, what="the healthy run's end")
    assert state(home, healthy)["state"] == "succeeded", state(home, healthy)["reason"]
    assert _row(healthy)["executes_on"] == "ray:127.0.0.1"
    assert spiral_pages(receiver, healthy) == 0
    logs = cli("logs", healthy)
    assert logs.returncode == 0 and logs.stdout.strip()
    print(f"spiral + healthy on ray: {time.monotonic() - started:.1f} s")


def test_kill_stops_a_remote_run(tmp_path: Path, repo: Path, on_ray: Path) -> None:
    home = on_ray
    run_id = _demo(tmp_path, repo, LONG, "killme", speed=2.0)
    wait(lambda: state(home, run_id)["state"] == "running", timeout=120, what="the remote agent's start")
    p = cli("kill", run_id)
    assert p.returncode == 0, p.stderr
    s = state(home, run_id)
    assert s["state"] == "killed", s
    assert not any(f"orchestrator-{run_id}-" in " ".join(q.info["cmdline"] or []) for q in _procs())


def test_two_runs_share_one_multiplexer_and_kill_stops_only_the_one_killed(
    tmp_path: Path, repo: Path, on_ray: Path
) -> None:
    home = on_ray
    started = time.monotonic()
    killed = _demo(tmp_path, repo, LONG, "shared-killed", speed=2.0)
    kept = _demo(tmp_path, repo, HEALTHY, "shared-kept", speed=40.0)
    for run_id in (killed, kept):
        wait(lambda r=run_id: state(home, r)["state"] == "running", timeout=120, what="the remote agent's start")
    sup = state(home, killed)["supervisor"]
    assert sup == state(home, kept)["supervisor"], "both runs are followed by one process"
    muxes = [q for q in _procs() if "orchestrator.runs.executors.mux" in (q.info["cmdline"] or [])]
    assert [q.pid for q in muxes if str(home) in " ".join(q.info["cmdline"])] == [sup["pid"]]
    p = cli("kill", killed)
    assert p.returncode == 0, p.stderr
    assert state(home, killed)["state"] == "killed", state(home, killed)
    remote = [" ".join(q.info["cmdline"] or []) for q in _procs()]
    assert not any(f"orchestrator-{killed}-" in c for c in remote), "the killed run's remote supervisor is gone"
    assert any(f"orchestrator-{kept}-" in c for c in remote), "the other run's remote supervisor still runs"
    assert state(home, kept)["state"] == "running" and psutil.pid_exists(sup["pid"])
    wait(lambda: _ended(home, kept), timeout=180, what="the kept run's end")
    assert state(home, kept)["state"] == "succeeded", state(home, kept)["reason"]
    assert (home / "runs" / kept / "events.jsonl").read_text().count("\n") >= 101  # every envelope of the case
    print(f"two runs on one multiplexer, one killed: {time.monotonic() - started:.1f} s")


def test_kill_of_a_run_still_waiting_for_a_node_ends_it_at_once(tmp_path: Path, repo: Path, on_ray: Path) -> None:
    home = on_ray
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["executor"]["resources"] = {"no_such_slot": 1}  # no node has it: the actor waits to be placed
    (home / "config.yaml").write_text(json.dumps(cfg))
    run_id = _demo(tmp_path, repo, LONG, "unplaced", speed=2.0)
    # the hand-over is asynchronous: the multiplexer registers as supervisor when it takes the run
    wait(lambda: state(home, run_id)["supervisor"] is not None, timeout=120, what="the multiplexer's take-over")
    assert state(home, run_id)["state"] == "launching"
    started = time.monotonic()
    p = cli("kill", run_id)
    assert p.returncode == 0, p.stderr
    s = state(home, run_id)
    assert s["state"] == "killed" and "before it started on Ray" in s["reason"], s
    assert time.monotonic() - started < 20


def test_a_multiplexer_that_dies_ends_its_runs_lost_and_the_next_launch_starts_another(
    tmp_path: Path, repo: Path, on_ray: Path
) -> None:
    home = on_ray
    first = _demo(tmp_path, repo, LONG, "muxdies", speed=2.0)
    wait(lambda: state(home, first)["state"] == "running", timeout=120, what="the remote agent's start")
    sup = state(home, first)["supervisor"]
    mux = psutil.Process(sup["pid"])
    assert str(home) in " ".join(mux.cmdline())  # this test's own multiplexer, nobody else's
    mux.kill()
    wait(lambda: _ended(home, first), timeout=60, what="the orphaned run's end")
    s = state(home, first)
    assert s["state"] == "lost" and "vanished" in s["reason"], s
    # 40x, not faster: it ends 25 run minutes before its stuck time, and a loaded machine's pause of a
    # few seconds is a few run minutes, far from the heartbeat
    second = _demo(tmp_path, repo, HEALTHY, "after", speed=40.0)
    wait(lambda: _ended(home, second), timeout=300, what="the next run's end")
    assert state(home, second)["state"] == "succeeded", state(home, second)["reason"]
    assert state(home, second)["supervisor"]["pid"] != sup["pid"]


def test_a_worker_node_that_disappears_ends_its_run_lost(
    tmp_path: Path, repo: Path, on_ray: Path, ray_cluster: RayCluster
) -> None:
    home = on_ray
    run_id = _demo(tmp_path, repo, LONG, "lostnode", speed=2.0)
    wait(lambda: state(home, run_id)["state"] == "running", timeout=120, what="the remote agent's start")
    ray_cluster.cluster.remove_node(ray_cluster.worker, allow_graceful=False)
    wait(lambda: _ended(home, run_id), timeout=120, what="the lost run's end")
    s = state(home, run_id)
    assert s["state"] == "lost" and "disappeared" in s["reason"], s


def _procs() -> list[psutil.Process]:
    return list(psutil.process_iter(["cmdline"]))


def test_an_unreachable_cluster_ends_its_runs_lost_and_kill_still_works(tmp_path: Path, repo: Path) -> None:
    import subprocess
    import sys

    from tests.helpers import ROOT

    home = orchestrator_home()
    write_config(home)
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["executor"] = {"kind": "ray", "address": "127.0.0.1:1", "resources": {"agent_slot": 1}}  # nobody there
    (home / "config.yaml").write_text(json.dumps(cfg))
    ray_tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    env = {**os.environ, "ORCHESTRATOR_RAY_CONNECT_SECONDS": "20", "RAY_TMPDIR": ray_tmp}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    tickets = [str(ticket(tmp_path, repo, "exit 0", name=n)) for n in ("ua", "ub")]
    t0 = time.monotonic()
    launcher = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "launch", *tickets], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait(lambda: len(list((home / "runs").glob("*/state.json"))) == 2, timeout=30, what="two runs")
        ua, ub = sorted(p.name for p in (home / "runs").iterdir())
        wait(lambda: state(home, ua)["state"] == "launching", timeout=30, what="ua handed over")
        k = cli("kill", ua)  # while the driver still waits for the cluster
        assert k.returncode == 0, k.stderr
        # ended by the driver's watch ("...; stopped before it started on Ray") or by kill itself, when the
        # driver had not registered the run yet: either way killed, at once, with the person's reason
        assert state(home, ua)["state"] == "killed" and "stopped by a person" in state(home, ua)["reason"]
        wait(lambda: _ended(home, ub), timeout=60, what="ub to end")
        assert time.monotonic() - t0 < 60  # not Ray's own many minutes of retries
        assert state(home, ub)["state"] == "lost"
        assert "the Ray cluster at 127.0.0.1:1 could not be reached within 20 s" in state(home, ub)["reason"]
        launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_the_connect_watch_outlives_a_run_whose_folder_is_gone(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers import ROOT

    (tmp_path / "mux" / "spool").mkdir(parents=True)
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from orchestrator.infra import proc\n"
        "from orchestrator.record.layout import RunDir\n"
        "from orchestrator.runs.executors import mux\n"
        f"d = Path({str(tmp_path / 'mux')!r})\n"
        f"runs = {{'gone.1': mux.Follow(RunDir(Path({str(tmp_path / 'gone')!r})), 1)}}\n"
        "import threading, time\n"
        "args = (d, proc.ProcRef.of(os.getpid()), runs, '127.0.0.1:1', mux._Guard())\n"
        "threading.Thread(target=mux._while_connecting, args=args, daemon=True).start()  # as serve runs it\n"
        "time.sleep(20)  # (ray.init, waiting)\n"
        "sys.exit(5)  # never: the watch ends the process itself\n"
    )
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "ORCHESTRATOR_RAY_CONNECT_SECONDS": "1"},
    )  # fmt: skip
    assert p.returncode == 1 and time.monotonic() - t0 < 30, p.stderr
