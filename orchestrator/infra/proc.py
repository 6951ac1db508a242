"""Processes: the one subprocess wrapper, liveness by pid + create time, tree kill."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
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


def run_to_file(
    argv: Sequence[str],
    out: IO[bytes],
    *,
    cwd: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    timeout: float,
) -> tuple[int, bytes]:
    """Run a command with its stdout written to `out` (output too big to hold); (rc, stderr)."""
    p = subprocess.run(
        list(argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.PIPE,
        env=clean_env(env),
        timeout=timeout,
    )
    return p.returncode, p.stderr


def run_watched(
    argv: Sequence[str], *, env: dict[str, str], stall_s: float, stop: Callable[[], bool] | None = None
) -> tuple[int, bytes, str | None]:
    """Run a command that shows its progress on stderr (`git clone --progress`), ended (its whole
    session killed) when it shows none for `stall_s` or when `stop()` says so, every transport alike.
    (rc, the last 8 KB of stderr, why it was ended or None)."""
    p = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=clean_env(env), start_new_session=True,
    )  # fmt: skip
    assert p.stderr is not None
    fd, last, tail, why, exited_at = p.stderr.fileno(), time.monotonic(), bytearray(), None, None
    try:  # one thread: stderr read as it comes (select), the process polled between reads
        while why is None:
            if select.select([fd], [], [], 0.5)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    p.wait(timeout=stall_s)  # stderr closed: the process is ending
                    break
                last = time.monotonic()
                tail.extend(chunk)
                del tail[:-8192]
            elif p.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > 2:
                    break  # it exited and something it started still holds stderr open
            elif stop is not None and stop():
                why = "stopped"
            elif time.monotonic() - last > stall_s:
                why = f"no progress for {stall_s:g} s"
    except subprocess.TimeoutExpired:
        why = f"no progress for {stall_s:g} s"
    finally:
        if p.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)  # it leads its own session: the transport's helpers too
            p.wait()
        p.stderr.close()
    return p.returncode, bytes(tail), why


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
    """SIGINT, then SIGTERM, then SIGKILL to the process and everything it started.

    "Everything it started" is looked for again before each signal, because the tree changes while it
    is stopped: its descendants, every process of its session (when it leads one of its own, as an
    agent or a supervisor does: a child orphaned by its parent's death stays in the session), and the
    whole process group of each of them (an agent may start its tools in groups of their own). A last
    look after the tree is gone catches a process born while the signals were on their way.

    Returns True when nothing of the tree is left alive.
    """
    root = ref.process()
    if root is not None:
        session = _own_session(root.pid)
        procs = _family([root], session)
    else:  # gone, or a zombie nobody reaped yet, whose session may still have members
        session = _own_session(ref.pid) if _is_zombie(ref) else None
        procs = _family([], session)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if not procs:
            break
        _signal_all(procs, sig)
        alive = _wait_gone(procs, grace_s if sig != signal.SIGKILL else 5.0)
        procs = _family(alive, session)
        if not procs:
            break
    for _ in range(3):  # born while the last signal was on its way (its parent dead by now)
        if not procs:
            procs = _family([], session)
        if not procs:
            return True
        _signal_all(procs, signal.SIGKILL)
        procs = _wait_gone(procs, 5.0)
    return not procs


def _is_zombie(ref: ProcRef) -> bool:
    try:
        p = psutil.Process(ref.pid)
        return abs(p.create_time() - ref.create_time) <= _CREATE_TIME_SLACK_S and p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


_PR_SET_CHILD_SUBREAPER = 36  # prctl(2) option, Linux 3.4+


def become_subreaper() -> bool:
    """Make the calling process the one that adopts its orphaned descendants (Linux only).

    Without it, a process the agent started and then abandoned (its parent died, or it started a
    session of its own) is adopted by init, and nothing of ours can find it again. True when set.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def reap_adopted(keep: set[int]) -> int:
    """Wait for the dead children we did not start ourselves (adopted orphans), so they leave no zombie.

    Only the pids asked about are waited for, never "any child": a Popen elsewhere in this process
    keeps its own child's exit status (pass that pid in `keep`). How many were reaped.
    """
    reaped = 0
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return 0
    for c in children:
        if c.pid in keep:
            continue
        try:
            if c.status() != psutil.STATUS_ZOMBIE:
                continue
            if os.waitpid(c.pid, os.WNOHANG)[0] == c.pid:
                reaped += 1
        except (psutil.Error, ChildProcessError):
            pass
    return reaped


def end_descendants(keep: set[int], within: Path, *, grace_s: float = 2.0) -> tuple[list[str], list[str]]:
    """SIGTERM, then SIGKILL, to each live descendant of ours outside `keep` whose working directory
    is in `within`; adopted orphans are descendants too (see `become_subreaper`).

    Returns what was stopped and what was spared, as `pid command` lines for a note. A process whose
    working directory is elsewhere is spared: that is how a shared daemon looks (gpg-agent, an ssh
    master, a build server chdir away from where they were started), and other runs may be using it.
    """
    try:
        found = [p for p in psutil.Process().children(recursive=True) if p.pid not in keep and _running(p)]
    except psutil.Error:
        return [], []
    procs: list[psutil.Process] = []
    stopped: list[str] = []
    spared: list[str] = []
    for p in found:
        try:
            line = f"{p.pid} {' '.join(' '.join(p.cmdline()).split())[:120]}"
            inside = _is_within(p.cwd(), within)
        except psutil.Error:
            continue  # gone meanwhile
        (stopped if inside else spared).append(line)
        if inside:
            procs.append(p)
    if procs:
        _signal_all(procs, signal.SIGTERM, groups=False)  # one by one: a group may hold a spared daemon
        alive = _wait_gone(procs, grace_s)
        if alive:
            _signal_all(alive, signal.SIGKILL, groups=False)
            _wait_gone(alive, 5.0)
        reap_adopted(keep)
    return stopped, spared


def _is_within(path: str, folder: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top + os.sep)


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until none of `procs` runs (a zombie counts as gone: its adopter reaps it later), at most
    `timeout` seconds; the ones still running."""
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _running(p)]
    return alive


def _own_session(pid: int) -> int | None:
    """The session `pid` leads, unless it is ours (nothing of a session we share is the tree's alone)."""
    try:
        sid = os.getsid(pid)
        return sid if sid == pid and sid != os.getsid(0) else None
    except OSError:
        return None


def _family(procs: list[psutil.Process], session: int | None) -> list[psutil.Process]:
    """The live processes among `procs`, their descendants and the members of `session`."""
    found: dict[int, psutil.Process] = {}
    for p in procs:
        found.setdefault(p.pid, p)
        try:
            for c in p.children(recursive=True):
                found.setdefault(c.pid, c)
        except psutil.Error:
            pass
    if session is not None:
        for p in psutil.process_iter():
            try:
                if p.pid not in found and os.getsid(p.pid) == session:
                    found[p.pid] = p
            except OSError:
                pass
    return [p for p in found.values() if _running(p)]


def _signal_all(procs: list[psutil.Process], sig: signal.Signals, *, groups: bool = True) -> None:
    """`sig` to each process and (unless `groups` is False) to each of their process groups, never
    to our own group."""
    ours = os.getpgid(0)
    pgids: set[int] = set()
    for p in procs if groups else ():
        try:
            pgids.add(os.getpgid(p.pid))
        except OSError:
            pass
    for pgid in pgids - {ours}:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs:
        try:
            p.send_signal(sig)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


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
