"""Peak RSS of a whole benchmarked process tree (speedbench/goals.py puts this folder on PYTHONPATH).

With $SPEEDBENCH_RSS_OUT set, each Python process writes its own VmHWM (kB, from
/proc/self/status) when it ends: the first one (the benchmarked command) to that file,
any Python it starts (a spawned worker inherits the environment) to `<file>.<pid>`.
A worker ended by SIGTERM (multiprocessing's Pool.terminate, on leaving `with Pool()`)
writes it too, then dies of the signal as it would have. VmHWM belongs to the process's
own address space, unlike wait4's ru_maxrss, which Linux carries over from the parent
at fork+exec.
"""

import atexit
import os
import signal
from types import FrameType

_OUT = os.environ.get("SPEEDBENCH_RSS_OUT")


def _write_hwm() -> None:
    assert _OUT is not None
    pid = os.getpid()
    path = _OUT if os.environ.get("SPEEDBENCH_RSS_MAIN") == str(pid) else f"{_OUT}.{pid}"
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                with open(path, "w", encoding="ascii") as out:
                    out.write(line.split()[1])
                return


def _on_term(signum: int, frame: FrameType | None) -> None:
    _write_hwm()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


if _OUT:
    os.environ.setdefault("SPEEDBENCH_RSS_MAIN", str(os.getpid()))  # the first Python of the tree
    atexit.register(_write_hwm)
    if os.environ["SPEEDBENCH_RSS_MAIN"] != str(os.getpid()) and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_term)
