"""`demo` on the terminal: live status tables, the summary, and the pages as they were delivered."""

from __future__ import annotations

from rich.console import Console

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.demo.run import run_demo, summary_lines
from orchestrator.demo.sink import Sink
from orchestrator.infra.paths import runs_dir
from orchestrator.notify.channels import Notifier, Target, from_config
from orchestrator.runs.pipeline import NOTICES
from orchestrator.runs.view import RunView
from orchestrator.tables import status_table


def show_demo(console: Console, speed: float, cfg: UserConfig, cli: str) -> None:
    """The demo on the terminal; `cli` is how the person reaches its runs (`ORCHESTRATOR_HOME=... ./dev.sh`)."""
    last = [-10.0]

    def show(views: list[RunView], t: float) -> None:
        if t - last[0] >= 10 or not any(v.record.active for v in views):
            last[0] = t
            console.print(f"[bold]t+{t:.0f}s[/]")
            console.print(status_table([v.to_dict() for v in views]))

    console.print(f"demo: two recorded runs re-enacted at {speed:g}x; runs land in {runs_dir()}", markup=False)
    with Sink() as sink:
        # the pages go to a receiver the demo runs on 127.0.0.1, and to your own targets if you have any
        yours = from_config(cfg, NOTICES).targets
        notifier = Notifier(targets=[Target(sink.url), *yours], events=("spiral", "stalled"))
        console.print(f"notifications go to a local sink: {sink.url}")
        if yours:
            console.print(
                f"...and to your {len(yours)} configured target(s) (config.yaml notify:, $ORCHESTRATOR_NOTIFY)"
            )
        views = run_demo(BucketsFile(), cfg, show, speed, notifier)
        received = sink.bodies()
    console.print("[bold]summary[/]")
    for line in summary_lines(views, cli):
        console.print(line, markup=False)
    console.print(f"[bold]delivered to the local sink ({len(received)} notification(s))[/]")
    for body in received:
        console.print(f"--- {body.get('title', '')}", markup=False)
        console.print(str(body.get("message", body)), markup=False)
    console.print(f"see the runs: {cli} status", markup=False)
