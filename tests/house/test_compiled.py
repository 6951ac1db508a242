"""spiral/ compiled (setup.py: mypyc) gives what its sources give, and is used only when built from them.

Each comparison runs the same code twice in fresh interpreters, once compiled and once with
SPIRAL_PURE=1 (every spiral module from its .py file), and compares their output whole.
Without a compiled build (no C compiler when it was installed) there is nothing to compare:
those tests skip and say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import spiral
from tests.helpers import ROOT

COMPILED = spiral.MODE == "compiled"
needs_build = pytest.mark.skipif(not COMPILED, reason=f"spiral is not compiled in this checkout: {spiral.MODE}")

REPLAY_ALL = """
import json, sys
from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import replay_case
from orchestrator.record.case import find_cases
import spiral
out = {"mode": spiral.MODE, "cases": {}}
for folder in find_cases([__import__("pathlib").Path("corpus")])[0]:
    r = replay_case(folder, BucketsFile())
    out["cases"][folder.name] = r.to_dict()
print(json.dumps(out, sort_keys=True))
"""

PICKLE_ROUND = """
import pickle, sys
from orchestrator.buckets import BucketsFile
from orchestrator.record.case import load_case
from orchestrator.record.run_files import LineCounter, read_events
from orchestrator.record.layout import CaseFiles
from spiral.adapters import make_adapter
from spiral.detector import Detector
import spiral
folder = __import__("pathlib").Path("corpus/spiral-001-fixture-shim")
case = load_case(folder)
det = Detector(BucketsFile().settings, bucket=case.bucket, started_at=case.started_at)
adapter = make_adapter(case.format, case.workdir)
events = list(read_events(CaseFiles(folder).events, LineCounter()))
half = len(events) // 2
if sys.argv[1] == "dump":
    for ts, data in events[:half]:
        det.add_calls(adapter.feed(ts, data))
    sys.stdout.buffer.write(pickle.dumps((det, adapter), protocol=pickle.HIGHEST_PROTOCOL))
else:
    det, adapter = pickle.loads(sys.stdin.buffer.read())
    for ts, data in events[half:]:
        det.add_calls(adapter.feed(ts, data))
    v = det.evaluate(case.ended_at)
    print(spiral.MODE)
    print(det.calls, v.suspicion, v.region, sorted(v.signals))
"""


def _python(code: str, *args: str, pure: bool, stdin: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "SPIRAL_PURE"}
    if pure:
        env["SPIRAL_PURE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout


@needs_build
def test_every_corpus_case_replays_the_same_compiled_and_from_source() -> None:
    compiled = json.loads(_python(REPLAY_ALL, pure=False))
    pure = json.loads(_python(REPLAY_ALL, pure=True))
    assert compiled["mode"] == "compiled" and pure["mode"].startswith("pure Python (SPIRAL_PURE")
    assert len(compiled["cases"]) >= 40
    assert compiled["cases"] == pure["cases"]


@needs_build
def test_the_detection_benchmark_is_the_same_compiled_and_from_source() -> None:
    def bench(pure: bool) -> dict[str, Any]:
        code = "import sys; from orchestrator.cli import main; sys.argv = ['orchestrator'] + sys.argv[1:]; main()"
        out: dict[str, Any] = json.loads(_python(code, "eval", "--bench", "--json", "--per-family", "3", pure=pure))
        out.pop("timing")
        return out

    assert bench(False) == bench(True)


@needs_build
@pytest.mark.parametrize("dump_pure", [False, True], ids=["compiled-to-pure", "pure-to-compiled"])
def test_a_cached_detector_pickled_one_way_loads_the_other(dump_pure: bool) -> None:
    """After an edit (or `./dev.sh build`) the watcher's cached detector.pickle is read by the other build."""
    blob = _python(PICKLE_ROUND, "dump", pure=dump_pure)
    crossed = _python(PICKLE_ROUND, "load", pure=not dump_pure, stdin=blob).decode().splitlines()
    same = _python(PICKLE_ROUND, "load", pure=dump_pure, stdin=blob).decode().splitlines()
    assert crossed[0].startswith("pure" if not dump_pure else "compiled")
    assert crossed[1] == same[1]


@needs_build
def test_an_edited_source_turns_the_whole_package_back_to_python(tmp_path: Path) -> None:
    """A checkout with spiral/ edited since its build runs every module from source, never a mix."""
    copy = tmp_path / "tree"
    copy.mkdir()
    shutil.copytree(ROOT / "spiral", copy / "spiral", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "spiral_compiled.py", copy)
    for lib in ROOT.glob("*__mypyc*"):
        shutil.copy(lib, copy)
    probe = "import spiral, spiral.window as w, spiral.adapters.claude as c; print(spiral.MODE); print(w.__file__); print(c.__file__)"

    def run() -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "SPIRAL_PURE"}
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=copy, env=env, capture_output=True, text=True, timeout=60, check=True
        )
        return done.stdout.splitlines()

    mode, window, claude = run()
    assert mode == "compiled" and window.endswith(".so") and claude.endswith(".so")
    with (copy / "spiral" / "window.py").open("a") as fh:
        fh.write("# an edit\n")
    mode, window, claude = run()
    assert mode.startswith("pure Python (sources changed") and window.endswith(".py") and claude.endswith(".py")
