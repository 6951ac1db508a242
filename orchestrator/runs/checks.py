"""Commands run in a run's clone under its supervisor: the ticket's `verify:` check after the agent
exits 0, and its `setup:` before the agent starts. Each is one process tree, its output in a log of
the run folder, killed past its timeout or when a stop (kill, liveness) is asked for."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.notify.pages import redact
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, VerifyResult

VERIFY_LOG = "verify.log"  # the `verify:` check's stdout and stderr, in the run folder
SETUP_LOG = "setup.log"  # ...and the `setup:` command's
_VERIFY_TAIL_LINES = 20
_VERIFY_POLL_S = 0.25  # how often a running check looks for a stop request


def stop_asked(rd: RunDir) -> bool:
    try:
        return state_file.read(rd).stop_requested is not None
    except UserError:  # an unreadable state is not a stop: the check runs on, and the ending says what it can
        return False


def _note_check(rd: RunDir, ref: proc.ProcRef) -> None:
    def change(r: RunRecord) -> bool:
        r.verify_pid = ref
        return True

    try:
        state_file.update(rd, change)
    except UserError:
        pass  # unrecorded, the check still runs under this supervisor's eye


def verify(rd: RunDir, argv: list[str], timeout_s: float, log_name: str = VERIFY_LOG) -> VerifyResult | None:
    """Run the ticket's check in the clone (no shell unless its argv is one), its output to verify.log;
    past `timeout_s` its whole process tree is killed. None when a stop (kill, liveness) was asked for."""
    if stop_asked(rd):
        return None
    log = rd.path / log_name
    started = time.monotonic()
    try:
        started_check = proc.start_detached(argv, cwd=rd.clone, log=log)  # held: a quick check stays to be waited
        pid = started_check.pid
        child = psutil.Process(pid)
        ref = proc.ProcRef(pid, child.create_time())
        _note_check(rd, ref)  # a stop (kill, liveness, a lost supervisor) stops the check with the run
    except (OSError, psutil.Error) as exc:
        why = f"{argv[0]}: {getattr(exc, 'strerror', None) or exc}"
        return VerifyResult(argv=argv, error=redact(why)[:300], tail=_tail(log))
    code: int | None = None
    timed_out = False
    while True:
        left = started + timeout_s - time.monotonic()
        try:
            code = child.wait(timeout=max(0.0, min(_VERIFY_POLL_S, left)))
            break
        except psutil.TimeoutExpired:
            pass
        except psutil.NoSuchProcess:
            break
        stop = stop_asked(rd)
        if stop or left <= 0:
            proc.kill_tree(ref)
            if stop:
                return None
            timed_out = True
            break
    if not timed_out:  # what it left running in its process group (its own session) goes with it
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if stop_asked(rd):
        return None  # stopped while it ran (the stop may have ended the check itself): never verified
    seconds = round(time.monotonic() - started, 2)
    passed = code == 0 and not timed_out
    return VerifyResult(argv=argv, exit_code=code, passed=passed, timed_out=timed_out, seconds=seconds, tail=_tail(log))


def _tail(log: Path) -> list[str]:
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 64 * 1024))
            text = fh.read().decode(errors="replace")
    except OSError:
        return []
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return [redact(line)[:300] for line in lines[-_VERIFY_TAIL_LINES:]]


def _last_words(checked: VerifyResult) -> str:
    """The end of a command's output, for its reason: `: <its last lines>`, or ` (no output)`."""
    last = " | ".join(line.strip() for line in checked.tail[-3:] if line.strip())[-240:]
    return f": {last}" if last else " (no output)"


def verdict(claim_reason: str, checked: VerifyResult, timeout_s: float) -> tuple[str, str]:
    """The ending once the check has run: succeeded only when it exited 0; the reason names the check."""
    said = _last_words(checked)
    if checked.passed:
        return "succeeded", f"{claim_reason}; verify passed (exit 0, {checked.seconds:.1f} s)"
    if checked.timed_out:
        return "failed", f"verify timed out after {timeout_s:g} s" + said
    if checked.error is not None:
        return "failed", f"verify could not start: {checked.error}"
    code = checked.exit_code
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return "failed", f"verify failed (killed by signal {name})" + said
    return "failed", f"verify failed (exit {'?' if code is None else code})" + said


def setup_failed(checked: VerifyResult, timeout_s: float) -> str | None:
    """Why the ticket's `setup:` failed (the run then ends `failed` and its agent never starts), or None."""
    if checked.passed:
        return None
    said = _last_words(checked)
    if checked.timed_out:
        return f"setup timed out after {timeout_s:g} s" + said
    if checked.error is not None:
        return f"setup could not start: {checked.error}"
    return f"setup exited {'?' if checked.exit_code is None else checked.exit_code}" + said
