"""One attempt's apprise deliveries in a child process, killed at the attempt's deadline.

A read timeout does not bound a request: an endpoint that drips a byte every few
seconds restarts it with each byte, and apprise leaves a request it stopped waiting
for running in a worker thread that the interpreter joins at exit. In a child
process neither can hold up the watcher or a short-lived command: the parent reads
what the child reports, line by line, and kills its process group at the deadline.

The parent writes one JSON job on the child's stdin; the child writes one JSON line
per event on stdout: `{"trying": LABEL}` before each request, `{"ok": CHANNEL}` the
moment a target took the notice (the caller records it at once), then
`{"wanted": N, "errors": [...]}` at the end.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.infra.redaction import redact

if TYPE_CHECKING:
    from orchestrator.notify.channels import Notifier

GRACE_S = 1.0  # past the deadline, for the child to report what it finished before it is killed


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
) -> int:
    """`n.deliver_apprise` in a child process; returns how many targets want `event` (as it reports)."""
    job = {
        "targets": [[t.url, sorted(t.tags)] for t in n.targets],
        "apprise_config": str(n.apprise_config) if n.apprise_config is not None else None,
        "event": event,
        "title": title,
        "body": body,
        "done": sorted(done),
        "key": key,
        "until": time.time() + max(0.0, deadline - time.monotonic()),  # the same deadline, on the wall clock
    }
    wanted = len(n.targets) + (1 if n.apprise_config is not None else 0)  # unless the child says otherwise
    with tempfile.TemporaryFile() as err:
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "orchestrator.notify.sender"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,  # its own group: killed whole at the deadline
            )
        except OSError as exc:
            errors.append(f"the notification sender could not start: {exc.strerror or exc}")
            return wanted
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(job).encode())
            child.stdin.close()
        except OSError:
            pass  # it died at once: said below
        reported, on = False, "a target"
        for line in _lines(child.stdout.fileno(), deadline + GRACE_S):
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "ok" in msg:
                succeeded(str(msg["ok"]))
            elif "trying" in msg:
                on = str(msg["trying"])
            elif "wanted" in msg:
                wanted, reported = int(msg["wanted"]), True
                errors.extend(str(e) for e in msg.get("errors", []))
        if child.poll() is None:
            _kill(child)
            if not reported:
                errors.append(f"delivery to {on} did not finish within the attempt's {n.timeout_s:g} s deadline")
        child.stdout.close()
        rc = child.wait()
        if not reported and rc != 0 and rc != -signal.SIGKILL:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
            errors.append(f"the notification sender failed (exit {rc}): {redact(tail[0])[:200]}")
    return wanted


def _lines(fd: int, until: float) -> Any:
    """Whole lines read from `fd` until it closes or the monotonic time `until` passes."""
    buf = b""
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        buf += chunk
        *whole, buf = buf.split(b"\n")
        yield from whole


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        child.kill()


def main() -> None:
    from orchestrator.notify.channels import Notifier, Target

    job = json.loads(sys.stdin.buffer.read())
    conf = job.get("apprise_config")
    n = Notifier(targets=[Target(u, frozenset(tags)) for u, tags in job["targets"]])
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
        lambda label: emit({"trying": label}),
    )
    emit({"wanted": wanted, "errors": errors})
    os._exit(0)  # not the interpreter's exit: it would join a worker thread apprise left on a request


if __name__ == "__main__":
    main()
