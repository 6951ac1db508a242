"""An attempt's apprise deliveries in child processes, killed at the attempt's deadline.

A read timeout does not bound a request: an endpoint that drips a byte every few
seconds restarts it with each byte, and apprise leaves a request it stopped waiting
for running in a worker thread that the interpreter joins at exit. In a child
process neither can hold up the watcher or a short-lived command: the parent reads
what the children report, line by line, and kills each process group still running
at the deadline. Each URL target has a sender of its own (and an apprise config file
one for all its targets), all at once, so a target that hangs holds up no other.

The parent writes one JSON job on a child's stdin; the child writes one JSON line per
event on stdout: `{"trying": CHANNEL, "label": LABEL}` before each request, `{"ok":
CHANNEL}` the moment a target took the notice (the caller records it at once), then
`{"wanted": N, "errors": [...]}` at the end. A child also ends when its parent does:
a sender whose watcher died would send a copy nobody records.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from orchestrator.infra import proc as infra_proc
from orchestrator.infra.redaction import redact

if TYPE_CHECKING:
    from orchestrator.notify.channels import Notifier, Target

GRACE_S = 1.0  # past the deadline, for a child to report what it finished before it is killed
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder `orchestrator/` is in


@dataclass
class _Child:
    """One sender: its process, what it has said so far, and the target it is on."""

    proc: subprocess.Popen[bytes]
    err: IO[bytes]
    wanted: int
    buf: bytes = b""
    reported: bool = False
    on: tuple[str, str] | None = None  # (channel, label) of the request in flight
    killed: bool = False
    errors: list[str] = field(default_factory=list)  # what it reported at the end


def in_child(
    n: Notifier,
    event: str,
    title: str,
    body: str,
    done: set[str],
    key: str | None,
    deadline: float,
    succeeded: Callable[[str], None],
    errors: list[str],
    unanswered: set[str] | None = None,
    ntfy: dict[str, str] | None = None,
) -> int:
    """`n.deliver_apprise` in child processes; returns how many targets want `event` (as they report)."""
    until = time.time() + max(0.0, deadline - time.monotonic())  # the same deadline, on the wall clock
    base: dict[str, Any] = {"event": event, "title": title, "body": body, "done": sorted(done), "key": key}
    base |= {"until": until, "timeout": n.timeout_s, "ntfy": ntfy or {}}  # (timeout: for its messages)
    base["endings"] = sorted(n.endings)  # what a target tagged `ends` gets
    jobs: list[tuple[dict[str, Any], int]] = [({**base, "targets": [_target(t)]}, 1) for t in n.targets]
    if n.apprise_config is not None:
        jobs.append(({**base, "targets": [], "apprise_config": str(n.apprise_config)}, 1))
    wanted = 0
    with ExitStack() as stack:
        children: list[_Child] = []
        try:
            for job, guess in jobs:
                child = _start(job, guess, stack, errors)
                if child is None:
                    wanted += guess
                else:
                    children.append(child)
            _read(children, deadline + GRACE_S, succeeded)
        finally:
            for c in children:  # what is still running is stopped, and every child reaped
                if c.proc.poll() is None:
                    _kill(c.proc)
                    c.killed = True
                c.proc.wait()
        for c in children:
            _drain(c, succeeded)  # lines written just before the deadline, or before it was killed
            wanted += c.wanted
            if c.reported:
                errors.extend(c.errors)
            elif c.killed and c.on is not None:
                errors.append(f"delivery to {c.on[1]} did not finish within the attempt's {n.timeout_s:g} s deadline")
                if unanswered is not None:
                    unanswered.add(c.on[0])
            else:
                c.err.seek(0)
                tail = c.err.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
                errors.append(f"the notification sender failed (exit {c.proc.returncode}): {redact(tail[0])[:200]}")
    return wanted


def _target(t: Target) -> list[Any]:
    return [t.url, sorted(t.tags)]


def _start(job: dict[str, Any], guess: int, stack: ExitStack, errors: list[str]) -> _Child | None:
    err = stack.enter_context(tempfile.TemporaryFile())
    env = {"PYTHONPATH": os.pathsep.join(x for x in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if x)}
    try:
        # -P: not the current folder first on the path (a clone's own `orchestrator/` or `json.py`);
        # its own session: killed whole at the deadline
        argv = [sys.executable, "-P", "-m", "orchestrator.notify.sender", str(os.getpid())]
        proc = infra_proc.start_piped(argv, cwd=Path(tempfile.gettempdir()), stderr=err, env=env, stdin_pipe=True)
    except OSError as exc:
        errors.append(f"the notification sender could not start: {exc.strerror or exc}")
        return None
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
    except OSError:
        pass  # it died at once: its exit says why
    return _Child(proc, err, guess)


def _read(children: list[_Child], until: float, succeeded: Callable[[str], None]) -> None:
    """The children's lines as they come, until every one has closed its output or `until` passes."""
    open_ = {c.proc.stdout.fileno(): c for c in children if c.proc.stdout is not None}
    while open_:
        left = until - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select(list(open_), [], [], left)
        for fd in ready:
            chunk = os.read(fd, 65536)
            c = open_[fd]
            if not chunk:
                del open_[fd]
                continue
            c.buf += chunk
            *whole, c.buf = c.buf.split(b"\n")
            for line in whole:
                _take(c, line, succeeded)


def _drain(c: _Child, succeeded: Callable[[str], None]) -> None:
    if c.proc.stdout is None:
        return
    rest = c.buf + c.proc.stdout.read()  # the child has exited: this ends
    c.proc.stdout.close()
    c.buf = b""
    for line in rest.split(b"\n"):
        _take(c, line, succeeded)


def _take(c: _Child, line: bytes, succeeded: Callable[[str], None]) -> None:
    try:
        msg = json.loads(line)
    except ValueError:
        return
    if not isinstance(msg, dict):
        return
    if "ok" in msg:
        succeeded(str(msg["ok"]))
    elif "trying" in msg:
        c.on = (str(msg["trying"]), str(msg.get("label", "a target")))
    elif "wanted" in msg:
        c.wanted, c.reported, c.on = int(msg["wanted"]), True, None
        c.errors.extend(str(e) for e in msg.get("errors", []))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _orphaned(parent: int) -> None:
    """End this sender when its parent is gone (its send would be recorded by nobody, and made again)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def main() -> None:
    from orchestrator.notify.channels import Notifier, Target

    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    threading.Thread(target=_orphaned, args=(parent,), daemon=True).start()
    job = json.loads(sys.stdin.buffer.read())
    conf = job.get("apprise_config")
    n = Notifier(targets=[Target(u, frozenset(tags)) for u, tags in job["targets"]], timeout_s=float(job["timeout"]))
    n.endings = frozenset(job.get("endings") or ())
    n.apprise_config = Path(conf) if conf else None
    deadline = time.monotonic() + max(0.0, float(job["until"]) - time.time())
    out = sys.stdout

    def emit(msg: dict[str, Any]) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    errors: list[str] = []
    wanted = n.deliver_apprise(
        job["event"],
        job["title"],
        job["body"],
        set(job["done"]),
        job["key"],
        deadline,
        lambda c: emit({"ok": c}),
        errors,
        lambda channel, label: emit({"trying": channel, "label": label}),
        job.get("ntfy") or {},
    )
    emit({"wanted": wanted, "errors": errors})
    os._exit(0)  # not the interpreter's exit: it would join a worker thread apprise left on a request


if __name__ == "__main__":
    main()
