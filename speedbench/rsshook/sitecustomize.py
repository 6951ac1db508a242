"""Peak RSS of a whole benchmarked process (speedbench/goals.py puts this folder on PYTHONPATH).

With $SPEEDBENCH_RSS_OUT set, the interpreter writes its own VmHWM (kB, from
/proc/self/status) to that file at exit. VmHWM belongs to the process's own address
space, unlike wait4's ru_maxrss, which Linux carries over from the parent at fork+exec.
"""

import atexit
import os

_OUT = os.environ.get("SPEEDBENCH_RSS_OUT")


def _write_hwm() -> None:
    assert _OUT is not None
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                with open(_OUT, "w", encoding="ascii") as out:
                    out.write(line.split()[1])
                return


if _OUT:
    atexit.register(_write_hwm)
