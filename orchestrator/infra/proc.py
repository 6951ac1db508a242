"""Processes: the one subprocess wrapper, liveness by pid + create time, tree kill."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import msgspec
import psutil

# psutil's create_time() is rounded differently across calls on some systems
_CREATE_TIME_SLACK_S = 1.0


class CommandError(RuntimeError):
    def __init__(self, argv: Sequence[str], rc: int, out: str, err: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {rc}: {err.strip() or out.strip()}")
        self.argv, self.rc, self.out, self.err = list(argv), rc, out, err


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment minus inherited GIT_* variables, which would redirect git."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(extra or {})
    return env


def run(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> tuple[int, bytes, bytes]:
    """Run a command to completion; (rc, stdout, stderr). Raises CommandError when check fails.

    `env` adds to the clean environment; stdin is empty unless `input_bytes` is given.
    A command past `timeout` raises subprocess.TimeoutExpired.
    """
    try:
        p = subprocess.run(
            list(argv),
            cwd=cwd,
            input=input_bytes if input_bytes is not None else b"",
            capture_output=True,
            env=clean_env(env),
            timeout=timeout,
        )
    except FileNotFoundError:
        raise CommandError(argv, 127, "", f"{argv[0]}: command not found") from None
    if check and p.returncode != 0:
        raise CommandError(argv, p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))
    return p.returncode, p.stdout, p.stderr


def spawn_detached(argv: Sequence[str], *, cwd: Path, log: Path) -> int:
    """Start a process in its own session that outlives us; stdout and stderr appended to `log`. Its pid."""
    return start_detached(argv, cwd=cwd, log=log).pid


def start_detached(argv: Sequence[str], *, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """`spawn_detached`, keeping the Popen: while it is held the child is never reaped behind our back, so
    even one that already exited is still there (a zombie) to be looked at and waited for. A dropped Popen
    reaps an exited child at once (its __del__ polls it), which loses the exit code of a quick one."""
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            env=clean_env(),
        )


def start_piped(
    argv: Sequence[str], *, cwd: Path, stderr: IO[bytes], env: dict[str, str] | None = None, stdin_pipe: bool = False
) -> subprocess.Popen[bytes]:
    """Start a child in its own session with stdout piped to us (its output is read line by line)."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=clean_env(env),
        start_new_session=True,
    )


class ProcRef(msgspec.Struct, frozen=True):
    """A process as recorded at launch: pid alone is not an identity (pids are reused).

    Stored as is in the run record (`{"pid": ..., "create_time": ...}`).
    """

    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> ProcRef:
        return cls(pid, psutil.Process(pid).create_time())

    def process(self) -> psutil.Process | None:
        """The live process, or None when gone, a zombie, or a different process on a reused pid."""
        try:
            p = psutil.Process(self.pid)
            if abs(p.create_time() - self.create_time) > _CREATE_TIME_SLACK_S:
                return None
            if p.status() == psutil.STATUS_ZOMBIE:
                return None
            return p
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None

    def alive(self) -> bool:
        return self.process() is not None


def kill_tree(ref: ProcRef, *, grace_s: float = 3.0) -> bool:
    """SIGINT, then SIGTERM, then SIGKILL to the process, its group and every descendant.

    Returns True when nothing of the tree is left alive.
    """
    root = ref.process()
    if root is None:
        return True
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = [root]
    try:
        pgid = os.getpgid(root.pid)
    except ProcessLookupError:
        pgid = None
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if pgid is not None and pgid != os.getpgid(0):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in procs:
            try:
                p.send_signal(sig)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        _, alive = psutil.wait_procs(procs, timeout=grace_s if sig != signal.SIGKILL else 5.0)
        # late-born children of the survivors are part of the tree too
        for p in list(alive):
            try:
                procs.extend(c for c in p.children(recursive=True) if c not in procs)
            except psutil.NoSuchProcess:
                pass
        procs = [p for p in procs if _running(p)]
        if not procs:
            return True
    return not any(_running(p) for p in procs)


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate: object, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(interval)
    return bool(callable(predicate) and predicate())
