"""Superseded by speedbench/goals.py: runs it with the same arguments.

This file used to time narrower things than the real paths: the in-memory detector
alone as a "tick" (no run lock, no state.json, no detector.pickle), a "150 MB" log
of a quarter of the real line density, and throughput over small cases instead of
`eval --bench`. goals.py measures each goal on the real code path, next to its floor;
see docs/speed-method.md. Kept only so that `speedbench/detector.py [--quick]` still works.

Run:  .venv/bin/python speedbench/detector.py [--quick] [--only NAME]   (= speedbench/goals.py)
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.stderr.write("speedbench/detector.py is superseded: running speedbench/goals.py\n")
    runpy.run_path(str(Path(__file__).resolve().parent / "goals.py"), run_name="__main__")
