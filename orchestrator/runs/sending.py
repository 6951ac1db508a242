"""What a refresh sends once a run is evaluated: its due notices (each attempt in a thread of its own), and
an ended run's trace; and how attempts an earlier pass left in flight ended."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.config import UserConfig
from orchestrator.notify import delivery
from orchestrator.notify.channels import Notifier
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.runs.events import Kind, of
from orchestrator.runs.pipeline import NOTICES
from orchestrator.runs.view import RunView
from orchestrator.telemetry import export as telemetry

# run folder -> this process's notice attempts still in flight when their pass ended (the watcher says how
# each ended at its next pass over the run)
IN_FLIGHT: dict[Path, list[delivery.Sending]] = {}


def deliver(view: RunView, cfg: UserConfig, notifier: Notifier | None = None) -> RunView:
    """What a refresh sends once the run is evaluated: its due notices, an ended run's trace."""
    rd = RunDir.of(view.run_dir)
    late = IN_FLIGHT.pop(rd.path, [])  # attempts an earlier pass left in flight: how they ended, said once
    for s in late:
        if s.outcome:
            view.events.append(of(Kind.NOTICE, f"{s.event} notice {s.outcome[0]} (the attempt left in flight)"))
        else:
            IN_FLIGHT.setdefault(rd.path, []).append(s)
    due = delivery.due(view.record, notifier, NOTICES) if notifier is not None else []
    if notifier is not None and due:
        # each attempt runs in its own thread with its own deadline: a slow endpoint holds up neither
        # this tick's other runs nor their liveness; a quick answer is still seen in this view
        sending = [delivery.start(rd, event, notifier, NOTICES, background=True) for event in due]
        until = time.monotonic() + delivery.WAIT_S
        for s in sending:
            outcome = s.wait(max(0.0, until - time.monotonic()))
            if not outcome.startswith("skipped: "):  # waiting to retry, in flight: nothing happened this pass
                view.events.append(of(Kind.NOTICE, f"{s.event} notice {outcome}"))
            if not s.outcome:
                IN_FLIGHT.setdefault(rd.path, []).append(s)
        view.record = state_file.read(rd)
    # an ended run's trace, once (orchestrator/telemetry)
    view.events += [of(Kind.TRACE, t) for t in telemetry.export_due(rd, view.record, cfg)]
    return view
