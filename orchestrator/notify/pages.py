"""What a notification says: composed from the run's record, secrets redacted (pure)."""

from __future__ import annotations

from orchestrator.infra.cli_name import CLI
from orchestrator.infra.redaction import redact as redact  # (both importable from here too)
from orchestrator.infra.redaction import redact_cut as redact_cut
from orchestrator.record.model import RunRecord

MAX_LINE = 220
MAX_BODY = 1800

ENDING_TITLES = {
    "stalled": "run {run} stalled",
    "failed": "run {run} failed",
    "succeeded": "run {run} succeeded",
    "killed": "run {run} was killed",
    "lost": "run {run} was lost",
    "over_budget": "run {run} stopped at its spend ceiling",
    "no_change": "run {run} ended without changing what the ticket asked for",
    "gave_up": "run {run}: the agent gave up",
}


def _cut(line: str, limit: int = MAX_LINE) -> str:
    line = " ".join(line.split()) if "\n" in line else line
    return line if len(line) <= limit else line[: limit - 3] + "..."


def finish(lines: list[str]) -> str:
    out: list[str] = []
    total = 0
    for line in lines:
        line = _cut(redact(line))
        if total + len(line) + 1 > MAX_BODY:
            out.append("... (cut)")
            break
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)


def spiral_page(record: RunRecord, cli: str = CLI, episode: int = 1) -> tuple[str, str]:
    """(title, body) of the page for a run that tripped the detector in the soft band (episode 1),
    or tripped again after guidance reached the agent (episode n: what it did since)."""
    run = record.run_id
    spiral = record.spiral
    ep = next((e for e in spiral.episodes if e.n == episode), None) if episode > 1 else None
    if ep is not None:
        evidence, signals, recent, at = list(ep.evidence), list(ep.signals), ep.recent, ep.tripped_at_min
    else:
        evidence = list(spiral.page_evidence or spiral.evidence)
        signals = list(spiral.page_signals or spiral.signals)
        recent, at = spiral.page_recent, spiral.tripped_at_min
    wall = evidence.pop() if evidence and evidence[-1].endswith("expected wall-clock") else ""
    title = f"run {run} may be spiraling" + (f" again (episode {episode})" if ep is not None else "")
    lines = [
        f"Ticket {record.ticket_id} (run {run}, {record.bucket} bucket, agent {record.agent}): "
        f"{at or 0:.0f} min in" + (f", {wall}" if wall else "") + "."
    ]
    if ep is not None:
        lines.append(f"Guidance reached the agent at {ep.since_min:g} min; this is what it did since.")
    lines.append("Signals:")
    lines.extend(f"- {name}: {redact_cut(text)}" for name, text in zip(signals, evidence, strict=False))
    if recent:
        lines.append("Last tool calls:")
        lines.extend(f"  {r}" for r in recent)
    lines.append("Act:")
    lines.append(f"  {cli} logs {run}")
    lines.append(f"  {cli} report {run}   (the run's timeline as an HTML file)")
    if record.guidance_via is not None:
        lines.append(f'  {cli} nudge {run} "what to do instead"   (or --redirect, --wrap-up)')
    lines.append(f"  {cli} kill {run}")
    return redact(title), finish(lines)


def escalation_notice(record: RunRecord, rung: int, cli: str = CLI) -> tuple[str, str]:
    """(title, body) for a rung of the run's escalation ladder."""
    run = record.run_id
    step = next((e for e in record.ladder.climbed if e.rung == rung), None)
    action = step.action if step is not None else "?"
    lines = [
        f"Ticket {record.ticket_id} (run {run}): escalation rung {rung} of {len(record.ladder.rungs)}, "
        f"{action}, at {step.at_min if step is not None else 0:g} min."
    ]
    if step is not None:
        lines.append(f"Why: {step.why}.")
        lines.extend(f"- {name}: {redact_cut(text)}" for name, text in zip(step.signals, step.evidence, strict=False))
        if step.guidance_id:
            lines.append(f"Sent to the agent as guidance {step.guidance_id}; `status` shows its receipt.")
    lines.append(f"  {cli} logs {run}")
    if action != "stop":
        lines.append(f"  {cli} kill {run}")
    return redact(f"run {run}: escalation {rung} ({action})"), finish(lines)


def budget_notice(record: RunRecord, key: str, cli: str = CLI) -> tuple[str, str]:
    """(title, body) for a run at 70 % of its spend ceiling, or a queued run the daily ceiling holds."""
    run = record.run_id
    if key.startswith("budget-held"):
        lines = [f"Ticket {record.ticket_id} (run {run}) waits in the queue: {record.held}.", f"  {cli} status"]
        return redact(f"run {run}: held by the daily spend ceiling"), finish(lines)
    spend = record.ceilings.live or record.spend
    ceilings = []
    if record.ceilings.max_usd is not None:
        cost = "unpriced" if spend is None or spend.cost_usd is None else f"${spend.cost_usd:.2f}"
        ceilings.append(f"{cost} of ${record.ceilings.max_usd:.2f}")
    if record.ceilings.max_tokens is not None:
        ceilings.append(f"{spend.tokens if spend else 0} of {record.ceilings.max_tokens} tokens")
    lines = [
        f"Ticket {record.ticket_id} (run {run}) has spent {record.ceilings.warned_at or 0:.0%} of its ceiling: "
        + "; ".join(ceilings)
        + ". At 100 % it is stopped (ending over_budget).",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return redact(f"run {run}: {record.ceilings.warned_at or 0:.0%} of its spend ceiling"), finish(lines)


def undelivered_notice(record: RunRecord, gid: str, cli: str = CLI) -> tuple[str, str]:
    """(title, body) for guidance that never reached the agent (withdrawn from its inbox)."""
    run = record.run_id
    g = next((g for g in record.guidance if g.id == gid), None)
    why = g.undelivered if g is not None and g.undelivered else "it was not received"
    lines = [
        f"Ticket {record.ticket_id} (run {run}): guidance {gid} never reached the agent: {why}.",
        "It was taken back out of the inbox, so it will not arrive late.",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return redact(f"run {run}: guidance {gid} undelivered"), finish(lines)


def provider_notice(record: RunRecord, cli: str = CLI) -> tuple[str, str]:
    """(title, body) for a run whose agent keeps failing to reach its model API (not a spiral)."""
    run = record.run_id
    p = record.provider
    what = p.text if p is not None else "retrying its model API"
    since = f" since {p.since[11:19]} UTC" if p is not None and p.since else ""
    lines = [
        f"Ticket {record.ticket_id} (run {run}, agent {record.agent}): the agent's model API is failing: "
        f"{what}{since}.",
        "This is the provider, not the agent: the time does not count toward the spiral signals.",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return redact(f"run {run}: model API failing"), finish(lines)


def ending_notice(record: RunRecord, event: str, cli: str = CLI) -> tuple[str, str]:
    run = record.run_id
    title = ENDING_TITLES.get(event, "run {run}: " + event).format(run=run)
    lines = [
        f"Ticket {record.ticket_id} (run {run}, {record.bucket} bucket): {event}"
        + (f": {record.reason}" if record.reason else "")
        + "."
    ]
    hints = record.hints
    if hints:
        lines.append("Spiral signals seen: " + ", ".join(hints))
    d = record.delivered
    if d is not None and d.pushed_at is not None:
        lines.append(
            f"Delivered: branch {d.branch} at {(d.commit or '?')[:12]}" + (f", {d.pr_url}" if d.pr_url else "")
        )
    lines.append(f"  {cli} logs {run}")
    lines.append(f"  {cli} diff {run}")
    return redact(title), finish(lines)
