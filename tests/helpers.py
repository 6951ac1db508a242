"""Shared test helpers, the only module test files import from one another.

Paths, real git, the CLI in a subprocess, tickets and run folders, detector
inputs, and an HTTP receiver for pages. Fixtures live in conftest.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.demo.sink import Sink
from orchestrator.runs.watch import BEAT
from spiral import model
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.settings import Settings
from spiral.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
SHARED = ROOT.parent / "shared"
REAL_TRACES = SHARED / "real-traces"
FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"


# ---- git, the CLI, the state folder ------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd, check=True, capture_output=True
    )


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ARGS` from the project root; `env` is added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def start_watcher(tick: float = 0.2) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "watch", "--tick", str(tick)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def orchestrator_home() -> Path:
    """$ORCHESTRATOR_HOME (a tmp folder: the autouse fixture sets it), created."""
    h = Path(os.environ["ORCHESTRATOR_HOME"])
    h.mkdir(parents=True, exist_ok=True)
    return h


def write_config(
    h: Path,
    heartbeat: float | None = None,
    command: list[str] | None = None,
    notify: dict[str, Any] | None = None,
) -> None:
    """config.yaml with the `fake` agent (tests/fake_agent.py), and optionally notify targets."""
    cfg: dict[str, Any] = {
        "agents": {
            "fake": {
                "command": command or [sys.executable, str(FAKE_AGENT)],
                "format": "generic",
                "version_command": [sys.executable, "--version"],
            }
        }
    }
    if heartbeat is not None:
        cfg["heartbeat_seconds"] = heartbeat
    if notify is not None:
        cfg["notify"] = notify
    (h / "config.yaml").write_text(json.dumps(cfg))  # JSON is YAML


# ---- tickets and runs ------------------------------------------------------------------------

FAST = {"snapshot_every_seconds": 0.3}
# small bucket in seconds: the soft band from 1.8 s, stuck only at 2 min
TINY = {
    "snapshot_every_seconds": 0.3,
    "buckets": {"small": {"expected_min": 0.01, "soft_start_min": 0.03, "stuck_min": 2.0}},
}


WORK_FILE = "fake-agent-work.txt"


def ticket(tmp_path: Path, repo: Path, body: str, name: str = "t1", work: bool = True, **front: Any) -> Path:
    """A ticket file for the fake agent; `body` is its script (see tests/fake_agent.py).

    With `work` (the default), a script that runs to its end writes WORK_FILE last: the agent did
    some work, so an exit 0 is `succeeded` (runs/endings.py). A script that exits on its own first
    (`exit 0`), or `work=False`, changes only what it says it does: nothing changed is `no_change`."""
    fields = {"id": name, "repo": str(repo), "bucket": "small", "agent": "fake", "overrides": FAST}
    fields.update(front)
    script = body + (f"\nwrite {WORK_FILE} done" if work and body.strip() else "")  # (no body: a bad ticket)
    path = tmp_path / f"{name}.md"
    path.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items()) + "---\n" + script + "\n")
    return path


def launch(path: Path) -> str:
    p = cli("launch", str(path))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]


def state(home: Path, run_id: str) -> dict[str, Any]:
    return json.loads((home / "runs" / run_id / "state.json").read_text())


def watcher_beat(home: Path | None = None) -> tuple[int, int]:
    """(pid, full passes made) of the state folder's watcher (`home`: another state folder than the
    test's), from its `watcher.beat`; (0, 0) before one."""
    try:
        beat = json.loads(((home or orchestrator_home()) / BEAT).read_text())
        return int(beat["pid"]), int(beat["passes"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return 0, 0


def wait_passes(n: int = 3, timeout: float = 120, home: Path | None = None) -> None:
    """Let the running watcher look `n` more times: an event to wait on, not a guess at its tick. A
    watcher started since counts from its own first pass."""
    pid, start = watcher_beat(home)

    def looked() -> bool:
        now_pid, passes = watcher_beat(home)
        return passes >= (start + n if now_pid == pid else n)

    wait(looked, timeout=timeout, what=f"{n} more watcher passes")


def wait(
    pred: Callable[[], bool],
    timeout: float = 30,
    what: str = "condition",
    explain: Callable[[], str] | None = None,
) -> None:
    """Poll `pred` until it holds; on the deadline fail, with `explain()` saying what was seen instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))


def one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> str:
    """`p` failed as bad input should: exit 2, one line on stderr (naming each needle), no traceback."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def status_json() -> dict[str, Any]:
    p = cli("status", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def fake_run(
    run_id: str,
    *,
    bucket: str = "medium",
    state_name: str = "succeeded",
    wall_min: float = 30,
    events: list[Any] | None = None,
    fmt: str = "claude-stream-json",
) -> Path:
    """A finished run folder written directly (no agent): state.json and events.jsonl."""
    from spiral.timestamps import format_ts

    d = orchestrator_home() / "runs" / run_id
    d.mkdir(parents=True)
    start = 1_780_000_000.0
    st = {
        "run_id": run_id,
        "ticket_id": run_id.rsplit("-", 1)[0],
        "bucket": bucket,
        "agent": "claude",
        "format": fmt,
        "state": state_name,
        "reason": "agent exited 0",
        "created_at": format_ts(start),
        "started_at": format_ts(start),
        "ended_at": format_ts(start + wall_min * 60),
        "exit_code": 0,
        "spiral": {"tool_calls": 3},
    }
    (d / "state.json").write_text(json.dumps(st))
    lines = [json.dumps({"ts": format_ts(start + i), "data": e}) for i, e in enumerate(events or [])]
    (d / "events.jsonl").write_text("".join(x + "\n" for x in lines))
    return d


def live_generic_run(
    root: Path, run_id: str, supervisor_pid: int, started_at: float, events: list[tuple[float, Any]]
) -> Path:
    """A live `generic` run folder in `root` as launch leaves it: its clone, its log (time, payload) and a
    `running` record whose supervisor is `supervisor_pid` (a `sleep` the test keeps alive)."""
    from orchestrator.infra.proc import ProcRef
    from orchestrator.record import state_file
    from orchestrator.record.model import RunRecord
    from spiral.envelope import make_envelope
    from spiral.timestamps import format_ts

    run = root / "runs" / run_id
    (run / "clone").mkdir(parents=True)
    (run / "events.jsonl").write_bytes(b"".join(make_envelope(format_ts(ts), data) for ts, data in events))
    record = RunRecord(
        run_id=run_id,
        ticket_id="t",
        bucket="medium",
        agent="any",
        format="generic",
        state="running",
        started_at=format_ts(started_at),
        spawned_at=format_ts(started_at),
        supervisor=ProcRef.of(supervisor_pid),
    )
    state_file.write(run, record)
    return run


def claude_usage(mid: str, model: str, i: int, o: int) -> dict[str, Any]:
    """A Claude stream-json assistant line carrying usage."""
    return {
        "type": "assistant",
        "message": {
            "id": mid,
            "model": model,
            "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "usage": {
                "input_tokens": i,
                "output_tokens": o,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        },
    }


def without_module(tmp_path: Path, module: str) -> dict[str, str]:
    """The environment of a child Python in which `module` (and its submodules) cannot be imported, as
    on a machine without that extra: a sitecustomize.py on its PYTHONPATH."""
    folder = tmp_path / f"no-{module}"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.abc, sys\n\n"
        "class _Without(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r} or name.startswith({module + '.'!r}):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "        return None\n\n"
        "sys.meta_path.insert(0, _Without())\n"
    )
    return {"PYTHONPATH": str(folder)}


def copy_case(name: str, tmp_path: Path) -> Path:
    """A writable copy of corpus/NAME."""
    dst = tmp_path / name
    shutil.copytree(CORPUS / name, dst)
    return dst


def tripped_run(home: Path, run_id: str) -> Path:
    """A run folder whose record says it tripped the detector in the soft band."""
    run_dir = home / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text(
        json.dumps(
            {
                "run_id": run_id,
                "ticket_id": "t",
                "bucket": "small",
                "agent": "fake",
                "state": "running",
                "spiral": {
                    "tripped_in_soft_band": True,
                    "tripped_at_min": 31,
                    "page_signals": ["polling"],
                    "page_evidence": ["6 of the last 20 shell calls polled", "1.5x expected wall-clock"],
                },
            }
        )
    )
    return run_dir


# ---- secrets an agent may print ---------------------------------------------------------------

SECRET = "sk-ant-api03-" + "Q" * 40
BEARER = "abcdefghijklmnop1234567890"


def spiral_body(n: int = 400, secret: bool = False) -> str:
    """A fake-agent script that loops on one debris script (and optionally prints secrets)."""
    cmd = f"python tmp_loop.py --token={SECRET}" if secret else "python tmp_loop.py"
    steps = ["write tmp_loop.py"]
    if secret:
        steps.append(
            json.dumps(
                {
                    "tool": "Bash",
                    "command": f"curl -H 'Authorization: Bearer {BEARER}' https://user:hunter2pass@example.com/x",
                }
            ).join(["say ", ""])
        )
    steps += [f"say {json.dumps({'tool': 'Bash', 'command': cmd})}", "sleep 0.05"] * n
    return "\n".join(steps)


# ---- detector inputs ---------------------------------------------------------------------------

BUCKETS = BucketsFile()
SEED_RAW = {k: v for k, v in BUCKETS.raw.items() if k != "rules"}
# the five signals alone, as the contract defines them: the signal unit tests pin the floor
S = Settings.from_mapping(SEED_RAW)
RULES = BUCKETS.settings  # the shipped detector: the five signals plus the rules of buckets.yaml
T0 = 1_700_000_000.0  # launch
MIN = 60.0
WORKDIR = "/home/dev/runs/r42/clone"
TASK_FILE = "/tmp/claude-0/x/tasks/abc.output"


def bash(cmd: str, ts: float = T0, cwd: str | None = None) -> ToolCall:
    return ToolCall(ts=ts, tool=model.BASH, command=cmd, cwd=cwd)


def on_file(tool: str, path: str, ts: float = T0) -> ToolCall:
    return ToolCall(ts=ts, tool=tool, path=path)


def reads(n: int, prefix: str = "docs/page") -> list[ToolCall]:
    """n Read calls, each on a different file: window filler that matches nothing."""
    return [on_file(model.READ, f"{prefix}{i}.md") for i in range(n)]


def listings(n: int) -> list[ToolCall]:
    """n Bash calls that poll nothing and run no script."""
    return [bash(f"ls -la src/pkg{i}") for i in range(n)]


def script_runs(script_cmd: str, n: int) -> list[ToolCall]:
    """n runs of one script, each with different arguments."""
    return [bash(f"{script_cmd} --case {i}") for i in range(n)]


def polls() -> list[ToolCall]:
    """Six shell calls, each a way of polling a background task."""
    return [
        bash("sleep 5"),
        bash(f"cat {TASK_FILE}"),
        bash("until grep -q PASSED build.log; do sleep 2; done"),
        ToolCall(ts=T0, tool=model.BASH_OUTPUT),
        bash(f"sleep 30 && tail -5 {TASK_FILE}"),
        bash("sleep 60"),
    ]


def detector(
    calls: Iterable[ToolCall] = (),
    snaps: Iterable[Snapshot] = (),
    *,
    bucket: str = "medium",
    settings: Settings = S,
    tracked: Iterable[str] = (),
    outputs: Iterable[str] = (),
    workdir: str | None = WORKDIR,
) -> Detector:
    det = Detector(settings, bucket=bucket, started_at=T0, tracked=tracked, outputs=outputs, workdir=workdir)
    det.add_calls(calls)
    for snap_ in snaps:
        det.add_snapshot(snap_)
    return det


def snap(minute: float, status: dict[str, str], hashes: dict[str, str] | None = None) -> Snapshot:
    return Snapshot(ts=T0 + minute * MIN, status=status, hashes=hashes or {})


def at(minute: float) -> float:
    return T0 + minute * MIN


def interleave(hits: list[ToolCall], filler: list[ToolCall]) -> list[ToolCall]:
    """hits spread through filler (one hit, then filler...), the last call a hit."""
    out: list[ToolCall] = []
    fill = iter(filler)
    per = len(filler) // max(1, len(hits))
    for hit in hits:
        out.extend(next(fill) for _ in range(per))
        out.append(hit)
    rest = list(fill)
    return rest + out


def finding(verdict: Verdict, signal: str) -> str:
    return next(f.evidence for f in verdict.findings if f.signal == signal)


def with_overrides(overrides: dict[str, Any], *, rules: bool = False) -> Settings:
    return Settings.from_mapping(BUCKETS.raw if rules else SEED_RAW, overrides)


# ---- an HTTP receiver for apprise's json:// pages ----------------------------------------------


class Receiver(Sink):
    """The demo's local sink, as the tests' notification receiver (it answers json:// at /hook)."""

    def __init__(self, port: int | None = None) -> None:
        super().__init__(port, path="hook")


def spiral_pages(r: Receiver, run_id: str) -> int:
    return sum(1 for t in r.titles() if t == f"run {run_id} may be spiraling")


# ---- the live page's server, in a thread of the test's process --------------------------------


@contextmanager
def serving_in_thread(port: int = 0, *, actions: bool = False, settings: Any = None) -> Iterator[Any]:
    """The real `serve` server on 127.0.0.1 (any free port unless given), answering in a thread of
    this process; yields it (its URL: `base_url(server)`), shut down afterwards."""
    import threading

    from orchestrator.serve.server import make_server

    server = make_server("127.0.0.1", port, None, actions_on=actions, settings=settings)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def base_url(server: Any) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"
