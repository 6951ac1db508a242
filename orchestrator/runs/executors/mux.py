"""The multiplexing follower of Ray runs: `python -m orchestrator.runs.executors.mux MUX_DIR ADDRESS`.

One Ray driver per orchestrator home and cluster follows every Ray run of that home
(`<home>/ray-mux/<key of the address>/`). Hand-over: `RayExecutor.start` writes
`spool/<run>.<admission>.json` atomically under `MUX_DIR/lock`, and starts the multiplexer when
`MUX_DIR/pid` names no live process, under the same lock, so two launches never start two.

The multiplexer registers each handed-over run with the supervisor's `_register` rule (the same
ProcRef is the supervisor of every run it follows, so `kill`, the watcher's liveness and `lost` see a
live supervisor as long as it lives) before it connects, places the run's RunActor, then, in one loop,
keeps one call in flight per actor (start, pull, stop, cleanup) and `ray.wait`s on all of them. A stop
is read from each run's own state and sent to that run's actor only: stopping one run never touches
another. Each call has a deadline (a pull or stop 30 s, a start 300 s), and a failure ends that run
only. It leaves once it has followed nothing for IDLE_EXIT_S, under the lock and with the spool empty.

If it dies, the actors it owns die with it (Ray ends an actor with its owner) and its registered runs
end `lost` by the watcher's usual rule ("the supervising process vanished"); runs handed over but not
yet registered stay in the spool, and the next launch's multiplexer takes them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.infra import atomic, lock, proc
from orchestrator.record import case_file, state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ENDED, RunRecord
from orchestrator.runs.executors import follow as fw
from orchestrator.runs.supervisor import _register

MUX_DIRNAME = "ray-mux"
IDLE_EXIT_S = 30.0  # with nothing to follow this long, the driver leaves (the next launch starts one)
CONNECT_TIMEOUT_S = 60.0  # ray.init's own retries last many minutes ($ORCHESTRATOR_RAY_CONNECT_SECONDS)
LOCK_WAIT_S = 60.0


def mux_dir(home: Path, address: str) -> Path:
    return home / MUX_DIRNAME / hashlib.sha256(address.encode()).hexdigest()[:12]


def running(d: Path) -> proc.ProcRef | None:
    """The live multiplexer of `d`, or None."""
    try:
        ref = msgspec.json.decode((d / "pid").read_bytes(), type=proc.ProcRef)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return ref if ref.alive() else None


def hand_over(rd: RunDir, token: int, address: str) -> None:
    """Give start `token` of the run to the multiplexer of its home and cluster, starting it if needed."""
    d = mux_dir(rd.path.parent.parent, address)
    (d / "spool").mkdir(parents=True, exist_ok=True)
    entry = json.dumps({"run_dir": str(rd.path), "admission": token}).encode()
    with lock.held(d / "lock", timeout=LOCK_WAIT_S):
        atomic.write_bytes_atomic(d / "spool" / f"{rd.run_id}.{token}.json", entry)
        if running(d) is None:
            argv = [sys.executable, "-m", "orchestrator.runs.executors.mux", str(d), address]
            pid = proc.spawn_detached(argv, cwd=d, log=d / "mux.log")
            atomic.write_bytes_atomic(d / "pid", msgspec.json.encode(proc.ProcRef.of(pid)))


@dataclass
class Follow:
    """One run as the multiplexer follows it; `fut` is its one call in flight."""

    rd: RunDir
    admission: int
    actor: Any = None
    handle: str = ""
    where: str = ""
    phase: str = "starting"  # starting | streaming | cleanup | done
    fut: Any = None
    kind: str = ""  # start | pull | stop | cleanup: what `fut` answers
    deadline: float = 0.0
    next_at: float = 0.0
    events_at: int = 0
    workspace_at: int = 0
    stop_by: float | None = None  # the stop was confirmed: the remote ending must come by then
    local: RunRecord | None = None
    local_mtime: int = -1


def _note(text: str) -> None:
    sys.stderr.write(f"{state_file.utcnow()} mux: {text}\n")
    sys.stderr.flush()


def _adopt(d: Path, me: proc.ProcRef, runs: dict[str, Follow]) -> list[Follow]:
    """The runs handed over since the last look, registered with `me` as their supervisor."""
    new = []
    for entry in sorted((d / "spool").glob("*.json")):
        try:
            raw = json.loads(entry.read_text(encoding="utf-8"))
            rd, admission = RunDir.of(Path(raw["run_dir"])), int(raw["admission"])
            key = f"{rd.run_id}.{admission}"
            if key not in runs:
                record = state_file.update(rd, _register(me, admission))
                if record.supervisor == me and record.executor is not None:
                    runs[key] = Follow(rd, admission)
                    new.append(runs[key])
        except Exception as exc:  # a bad entry or a run folder gone: that run only
            _note(f"{entry.name}: not taken: {fw.one_line(exc)}")
        entry.unlink(missing_ok=True)
    return new


def _place(f: Follow, actor_cls: Any, now: float) -> None:
    record = state_file.read(f.rd)
    assert record.executor is not None
    f.handle = f"run-{record.run_id}-{f.admission}"
    remote_record = msgspec.structs.replace(record, env={})  # the secrets go by runtime_env only
    f.actor = actor_cls.options(
        name=f.handle, resources=dict(record.executor.resources), runtime_env={"env_vars": dict(record.env)}
    ).remote()
    ticket = f.rd.ticket.read_text(encoding="utf-8")
    _call(f, "start", f.actor.start.remote(msgspec.json.encode(remote_record), ticket), now + fw.START_TIMEOUT_S)


def _call(f: Follow, kind: str, fut: Any, deadline: float) -> None:
    f.fut, f.kind, f.deadline = fut, kind, deadline


def _kill(f: Follow) -> None:
    import ray

    if f.actor is not None:
        try:
            ray.kill(f.actor)
        except Exception as exc:
            _note(f"{f.handle}: ray.kill: {fw.one_line(exc)}")
    f.phase, f.fut = "done", None


def _cleanup(f: Follow, now: float) -> None:
    f.phase = "cleanup"
    _call(f, "cleanup", f.actor.cleanup.remote(), now + fw.CALL_TIMEOUT_S)


def _local(f: Follow) -> RunRecord:
    """The run's record here, read again only when its file changed."""
    mtime = f.rd.state_json.stat().st_mtime_ns
    if f.local is None or mtime != f.local_mtime:
        f.local, f.local_mtime = state_file.read(f.rd), mtime
    return f.local


def _answer(f: Follow, kind: str, result: Any, exc: BaseException | None, now: float) -> None:
    """What one call's answer (or failure, or missed deadline) does to its run."""
    if kind == "start":
        if exc is not None:
            fw.end_here(f.rd, "failed", f"the run could not start on Ray: {fw.one_line(exc)}")
            _kill(f)
            return
        f.rd.tracked.write_text("".join(p + "\n" for p in result["tracked"]), encoding="utf-8")
        record = state_file.update(f.rd, fw.placed(result["where"], f.handle, result.get("clone")))
        case_file.write_run_case(f.rd, record)
        f.where, f.phase, f.next_at = result["where"], "streaming", now
    elif kind == "pull":
        if exc is not None:
            fw.end_here(f.rd, "lost", f"the Ray node running it ({f.where}) disappeared: {type(exc).__name__}")
            _kill(f)
            return
        ev, ws, state_bytes = result
        fw.append(f.rd.events, ev)
        fw.append(f.rd.workspace, ws)
        f.events_at, f.workspace_at = f.events_at + len(ev), f.workspace_at + len(ws)
        remote = msgspec.json.decode(state_bytes, type=RunRecord)
        if remote.state in ENDED and not ev and not ws:  # every line is here: the ending follows them
            fw.record_ending(f.rd, remote)
            _cleanup(f, now)
            return
        if remote.state == "running" and _local(f).state == "launching":
            state_file.update(f.rd, fw.mirror(remote))
        f.next_at = now if ev or ws else now + fw.PULL_EVERY_S
    elif kind == "stop":
        if exc is not None or result is not None:
            _stop_unconfirmed(f, fw.one_line(exc) if exc is not None else str(result))
            return
        f.stop_by, f.next_at = now + fw.CALL_TIMEOUT_S, now  # its last lines and ending come next
    else:  # cleanup
        _kill(f)


def _stop_unconfirmed(f: Follow, why: str) -> None:
    """The node did not confirm a stop (or its supervisor did not record it): end it here as asked."""
    local = state_file.read(f.rd)
    req = local.stop_requested
    how, reason = (req.end_as, req.reason) if req is not None else ("killed", "stopped")
    fw.end_here(f.rd, how if how in ENDED else "killed", f"{reason}; the Ray node did not confirm the stop: {why}")
    _kill(f)


def _next(f: Follow, now: float) -> None:
    """The run's next call: its stop if one was asked for here, else a pull."""
    local = _local(f)
    wants_stop = local.stop_requested is not None or not local.active
    if wants_stop and f.stop_by is None:
        req = local.stop_requested
        how, why = (req.end_as, req.reason) if req is not None else (local.state, local.reason)
        _call(f, "stop", f.actor.stop.remote(how or "killed", why or "stopped"), now + fw.CALL_TIMEOUT_S)
    elif f.stop_by is not None and now > f.stop_by:
        _stop_unconfirmed(f, f"no ending recorded on the node within {fw.CALL_TIMEOUT_S:g} s of the stop")
    else:
        _call(f, "pull", f.actor.pull.remote(f.events_at, f.workspace_at), now + fw.CALL_TIMEOUT_S)


def _stop_while_starting(f: Follow) -> None:
    """A stop asked for while the actor waits for a node (or clones): no agent runs yet, end it here."""
    local = _local(f)
    req = local.stop_requested
    if req is None and local.active:
        return
    _kill(f)
    how, why = (req.end_as, req.reason) if req is not None else ("killed", "stopped")
    fw.end_here(f.rd, how if how in ENDED else "killed", f"{why}; stopped before it started on Ray")


def _guarded(f: Follow, step: Any, *args: Any) -> None:
    """One run's step; an error in it (a full disk, a folder removed) ends that run, never the loop."""
    try:
        step(f, *args)
    except Exception as exc:
        _note(f"{f.rd.run_id}: {fw.one_line(exc)}")
        try:
            fw.end_here(f.rd, "lost", f"the Ray follower could not keep its folder: {fw.one_line(exc)}")
        except Exception as again:
            _note(f"{f.rd.run_id}: its ending could not be recorded either: {fw.one_line(again)}")
        _kill(f)


def _retire(d: Path, me: proc.ProcRef) -> bool:
    """Leave, unless a run was handed over meanwhile (the lock orders this against hand_over)."""
    with lock.held(d / "lock", timeout=LOCK_WAIT_S):
        if any((d / "spool").glob("*.json")):
            return False
        if running(d) == me:
            (d / "pid").unlink(missing_ok=True)
        return True


def _unreachable(d: Path, me: proc.ProcRef, runs: dict[str, Follow], why: str) -> int:
    """No cluster: every run handed over ends `lost` with the reason, then this driver leaves."""
    while True:
        for f in runs.values():
            try:
                fw.end_here(f.rd, "lost", why)
            except Exception as exc:  # (a folder removed meanwhile: the others still end)
                _note(f"{f.rd.run_id}: its ending could not be recorded: {fw.one_line(exc)}")
        runs.clear()
        _adopt(d, me, runs)
        if not runs and _retire(d, me):
            return 1


def _connect_timeout() -> float:
    try:
        return max(1.0, float(os.environ.get("ORCHESTRATOR_RAY_CONNECT_SECONDS") or CONNECT_TIMEOUT_S))
    except ValueError:
        return CONNECT_TIMEOUT_S


def _while_connecting(d: Path, me: proc.ProcRef, runs: dict[str, Follow], address: str, guard: Any) -> None:
    """While ray.init waits (an address nobody answers at: Ray retries for many minutes), the runs
    handed over are still adopted, a kill still ends its run, and past the deadline every run ends
    `lost` and this driver leaves."""
    deadline = time.monotonic() + _connect_timeout()
    while True:
        time.sleep(0.5)
        with guard:
            if guard.connected:
                return
            try:
                _adopt(d, me, runs)
            except Exception as exc:  # (the spool, next time round)
                _note(f"adopting while connecting: {fw.one_line(exc)}")
            for key, f in list(runs.items()):
                _guarded(f, _stop_while_starting)  # one run's trouble ends that run, never this watch
                if f.phase == "done":
                    del runs[key]
            if time.monotonic() > deadline:
                try:
                    why = f"the Ray cluster at {address} could not be reached within {_connect_timeout():g} s"
                    _unreachable(d, me, runs, why)
                finally:
                    os._exit(1)  # (ray.init is still waiting in the main thread)


class _Guard:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connected = False

    def __enter__(self) -> _Guard:
        self.lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def serve(d: Path, address: str) -> int:
    import ray  # the `ray` extra

    from orchestrator.runs.executors.remote import RunActor

    me = proc.ProcRef.of(os.getpid())
    runs: dict[str, Follow] = {}
    _adopt(d, me, runs)  # registered before connecting: launch and the watcher see a supervisor at once
    guard = _Guard()
    threading.Thread(target=_while_connecting, args=(d, me, runs, address, guard), daemon=True).start()
    try:
        ray.init(address=address or None, log_to_driver=False, logging_level=logging.ERROR, namespace="orchestrator")
    except Exception as exc:
        with guard:
            guard.connected = True  # (the watch stands down: this thread ends the runs)
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        return _unreachable(d, me, runs, f"the Ray cluster at {address} could not be reached: {first}")
    with guard:
        guard.connected = True
    actor_cls = ray.remote(num_cpus=0, max_restarts=0)(RunActor)
    for f in list(runs.values()):
        _guarded(f, _place, actor_cls, time.monotonic())
    idle_since = time.monotonic()
    while True:
        for f in _adopt(d, me, runs):
            _guarded(f, _place, actor_cls, time.monotonic())
        pending = {f.fut: f for f in runs.values() if f.fut is not None}
        ready: list[Any] = []
        if pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=fw.PULL_EVERY_S)
        else:
            time.sleep(fw.PULL_EVERY_S)
        now = time.monotonic()
        for fut in ready:
            f, kind = pending[fut], pending[fut].kind
            f.fut = None
            result: Any = None
            failure: BaseException | None = None
            try:
                result = ray.get(fut)
            except Exception as e:
                failure = e
            _guarded(f, _answer, kind, result, failure, now)
        for f in runs.values():
            if f.fut is not None and now > f.deadline:
                kind, f.fut = f.kind, None
                limit = fw.START_TIMEOUT_S if kind == "start" else fw.CALL_TIMEOUT_S
                _guarded(f, _answer, kind, None, TimeoutError(f"no answer to {kind} within {limit:g} s"), now)
            if f.phase == "streaming" and f.fut is None and now >= f.next_at:
                _guarded(f, _next, now)
            elif f.phase == "starting" and f.fut is not None:
                _guarded(f, _stop_while_starting)
        for key in [k for k, f in runs.items() if f.phase == "done"]:
            del runs[key]
        if runs:
            idle_since = now
        elif now - idle_since > IDLE_EXIT_S and _retire(d, me):
            return 0


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: python -m orchestrator.runs.executors.mux MUX_DIR ADDRESS\n")
        return 2
    return serve(Path(argv[1]), argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
