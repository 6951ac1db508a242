"""`demo`: the embedded default. A sample repo, two demo-agent runs (one healthy,
one spiraling) on a fast clock, live status, and a summary of what paged and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import data
from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra import proc
from orchestrator.infra.cli_name import CLI
from orchestrator.infra.paths import home
from orchestrator.notify.channels import Notifier
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import read_tracked
from orchestrator.runs import monitor
from orchestrator.runs.launch import launch
from orchestrator.runs.view import RunView

HEALTHY_CASE = "healthy-001-steady-feature"
SPIRAL_CASE = "spiral-001-fixture-shim"
SPEED = 60.0  # one recorded minute per real second
TIMEOUT_S = 170.0

_TICKET = """---
id: {id}
repo: {repo}
bucket: medium
outputs: [{outputs}]
agent: demo
demo_case: {case}
speed: {speed}
---
{body}
"""


def make_sample_repo(dest: Path, cases: list[Path]) -> None:
    """A git repo holding every file the recorded runs' clones had tracked."""
    dest.mkdir(parents=True)
    proc.run(["git", "init", "-q", "-b", "main"], cwd=dest)
    for case in cases:
        for rel in read_tracked(CaseFiles(case).tracked):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_text(f"# {rel}\n")
    proc.run(["git", "add", "-A"], cwd=dest)
    proc.run(
        ["git", "-c", "user.name=demo", "-c", "user.email=demo@localhost", "commit", "-q", "-m", "sample project"],
        cwd=dest,
    )


def write_tickets(folder: Path, repo: Path, corpus: Path, speed: float) -> list[Path]:
    specs = [
        (
            "demo-healthy-feature",
            HEALTHY_CASE,
            "src/app/core.py",
            "Add the steady feature (re-enacted from a recorded healthy run).",
        ),
        (
            "demo-fixture-shim",
            SPIRAL_CASE,
            "mergediag/resolve.py",
            "Fix argument quoting in mergediag (re-enacted from a recorded spiral).",
        ),
    ]
    paths = []
    for tid, case, outputs, body in specs:
        path = folder / f"{tid}.md"
        path.write_text(_TICKET.format(id=tid, repo=repo, outputs=outputs, case=corpus / case, speed=speed, body=body))
        paths.append(path)
    return paths


def run_demo(
    buckets: BucketsFile,
    cfg: UserConfig,
    show: Callable[[list[RunView], float], None],
    speed: float = SPEED,
    notifier: Notifier | None = None,
) -> list[RunView]:
    corpus = data.path("demo-cases")  # shipped copies of the two corpus cases (see orchestrator/data)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    folder = home() / "demo" / stamp
    folder.mkdir(parents=True, exist_ok=True)
    repo = folder / "sample-repo"
    make_sample_repo(repo, [corpus / HEALTHY_CASE, corpus / SPIRAL_CASE])
    # the demo watches its own runs (and pages its own sink): no background watcher
    run_dirs = [launch(str(t), cfg, buckets, watcher=False).run_dir for t in write_tickets(folder, repo, corpus, speed)]
    t0 = time.monotonic()
    views: list[RunView] = []
    while True:
        views = [monitor.refresh(d, buckets, cfg, notifier=notifier) for d in run_dirs]
        show(views, time.monotonic() - t0)
        if not any(v.record.active for v in views):
            return views
        if time.monotonic() - t0 > TIMEOUT_S:
            from orchestrator.runs.kill import kill_run

            for v in views:
                if v.record.active:
                    kill_run(v.run_dir, "the demo ran out of time")
            return [monitor.refresh(d, buckets, cfg, notifier=notifier) for d in run_dirs]
        time.sleep(min(0.5, 30.0 / speed))  # at least one look per 30 s of run time


def summary_lines(views: list[RunView], cli: str = CLI) -> list[str]:
    out = []
    for v in views:
        d = v.to_dict()
        spiral = v.record.spiral
        head = f"{d['id']} ({d['ticket']}): {d['state']}"
        if d.get("reason"):
            head += f" ({d['reason']})"
        out.append(head)
        if spiral.tripped_in_soft_band:
            out.append(f"  would have paged at {spiral.tripped_at_min or 0:g} min of {d['expected_min']:g} expected:")
            out.extend(f"    - {e}" for e in spiral.page_evidence)
        else:
            seen = ", ".join(spiral.signals_seen) or "none"
            out.append(f"  no page (signals seen along the way: {seen})")
        delivered = v.record.delivered
        if delivered is not None and delivered.pushed_at is not None:
            out.append(f"  its work is on branch {delivered.branch}")
            out.append(f"    of {v.record.repo}")
            out.append(f"  see it: {cli} diff {d['id']} --stat")
        elif delivered is not None:
            out.append(f"  its work was not delivered: {delivered.error}")
    return out
