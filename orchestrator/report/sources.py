"""The timeline of a recorded case, and of a run folder (a case plus its record: page, guidance, ending)."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact_cut
from orchestrator.ledger import prices
from orchestrator.record import state_file
from orchestrator.record.case import load_case
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import CaseFiles, RunDir
from orchestrator.record.model import Delivered, Notice
from orchestrator.report.timeline import Mark, Timeline
from orchestrator.report.walk import case_settings, walk
from spiral.settings import Settings, SettingsError
from spiral.timestamps import parse_ts


def case_timeline(folder: Path, buckets: BucketsFile | None = None) -> Timeline:
    """A corpus case replayed as `replay` does, walked on past its page to the end of the recording."""
    if not CaseFiles(folder).is_case():
        raise UserError(f"{folder}: not a case folder (no case.yaml)")
    case = load_case(folder)
    w = walk(case, case_settings(case, buckets or BucketsFile()))
    tl = w.timeline
    exp = case.expect
    want = "should not page"
    if exp.spiral:
        window = [f"after {exp.notify_after_min:g} min"] if exp.notify_after_min is not None else []
        window += [f"before {exp.notify_before_min:g} min"] if exp.notify_before_min is not None else []
        want = "should page" + (" " + " and ".join(window) if window else "")
    tl.title = f"case {case.id}"
    tl.facts = [_bucket_fact(tl), f"format {case.format}", f"label: {want}"]
    if case.description:
        tl.facts.append(case.description)
    if w.first_page is not None:
        tl.pages.append(Mark(w.minute(w.first_page.elapsed_min), "page", ", ".join(w.first_page.signals)))
    for at in case.guidance_received:
        tl.guidance.append(Mark(round((at - case.started_at) / 60, 2), "guidance received"))
    tl.ending = Mark(tl.end_min, "recording ends")
    return tl


def run_timeline(
    run_dir: Path, buckets: BucketsFile | None = None, price_overrides: prices.Overrides | None = None
) -> Timeline:
    """A run folder walked up to its ending (now, for a live run), marked with what its record says."""
    rd = RunDir.of(run_dir)
    record = state_file.read(rd)
    if not rd.is_case():
        raise UserError(f"{rd.path}: the run has no case.yaml yet")
    case = load_case(rd.path)
    settings = _settings(record.settings, rd.run_id) or case_settings(case, buckets or BucketsFile())
    clock = RunClock.of(record)
    ended = parse_ts(record.ended_at)
    end = clock.at(ended if ended is not None and record.ended else time.time())
    receipts = [clock.at(g.received_epoch) for g in record.guidance if g.received_epoch is not None]
    w = walk(case, settings, end=max(end, case.started_at), restarts=receipts, price_overrides=price_overrides)
    tl = w.timeline
    spiral = record.spiral
    tl.title = f"run {record.run_id}"
    tl.facts = [f"ticket {record.ticket_id}, agent {record.agent}", _bucket_fact(tl)]
    state = record.state + (f" ({record.reason})" if record.reason else "")
    tl.facts.append(f"state: {state}")
    spend = record.spend or record.ceilings.live
    if spend is not None:
        usd = f", ${spend.cost_usd:.2f}" if spend.cost_usd is not None else " (unpriced)"
        tl.facts.append(f"spend: {spend.tokens:,} tokens{usd}")
    if spiral.tripped_in_soft_band and spiral.tripped_at_min is not None:
        label, why = _page_label("page", record.notices.get("spiral"), spiral.notified)
        tl.pages.append(Mark(w.minute(spiral.tripped_at_min), label, ", ".join(spiral.page_signals) + why))
        if spiral.page_evidence:  # what the page itself said (redacted when it was recorded)
            tl.evidence, tl.evidence_at_min = list(spiral.page_evidence), tl.pages[0].at_min
    elif w.first_page is not None:  # the record has no page (an older run, or it ended first): replay's
        tl.pages.append(Mark(w.minute(w.first_page.elapsed_min), "would page", ", ".join(w.first_page.signals)))
    for ep in spiral.episodes:
        if ep.tripped_at_min is not None:
            label, why = _page_label(f"page {ep.n}", record.notices.get(f"spiral-{ep.n}"), False)
            tl.pages.append(Mark(w.minute(ep.tripped_at_min), label, ", ".join(ep.signals) + why))
    for g in record.guidance:
        if g.received_at_min is not None:
            tl.guidance.append(Mark(w.minute(g.received_at_min), f"guidance {g.kind}", f"{g.id} by {g.by}: {g.text}"))
        elif g.undelivered and g.queued_at_min is not None:
            tl.guidance.append(Mark(g.queued_at_min, "guidance not received", f"{g.id}: {g.undelivered}"))
    tl.ending = Mark(tl.end_min, record.state if record.ended else f"{record.state} (now)", record.reason or "")
    if record.delivered is not None:
        tl.facts.append(delivery_fact(record.delivered))
    for f in record.feedback:  # a person's verdicts on the pages, and the taps of `serve --actions`
        tl.facts.append(f"page {f.episode} judged {f.verdict} ({f.via}, {f.at})")
    for a in record.actions:
        tl.facts.append(f"action {a.action} at {a.at} from {a.remote or '?'}: {a.result}")
    return tl


def _page_label(name: str, notice: Notice | None, notified: bool) -> tuple[str, str]:
    """(label, what to add to its detail) of a page as it went out: only a sent page is plain `page`;
    one that could not be sent says so, and why."""
    if notified or (notice is not None and notice.delivered):
        return name, ""
    if notice is not None and (notice.gave_up or notice.last_error):
        return f"{name} (undelivered)", f" | not delivered: {redact_cut(notice.last_error or 'given up')[:200]}"
    return f"{name} (not sent)", " | not sent: due, or no notification target"


def delivery_fact(d: Delivered) -> str:
    """The run's work handed back, in one line: the branch pushed (and its PR), or why it was not."""
    if d.pushed_at is None:
        return f"delivery: {d.branch} not pushed: {d.error or 'unknown'}"
    pr = f", PR {d.pr_url}" if d.pr_url else ""
    failed = f" ({d.error})" if d.error else ""
    return f"delivered: {d.branch} at {(d.commit or '')[:12]} pushed {d.pushed_at}{pr}{failed}"


def _settings(frozen: dict[str, object] | None, run_id: str) -> Settings | None:
    """The settings the run was judged by, frozen at launch (None: an older run, judged by buckets.yaml)."""
    if frozen is None:
        return None
    try:
        return Settings.from_mapping(frozen)
    except SettingsError as exc:
        raise UserError(f"run {run_id}: its recorded settings are invalid: {exc.message}") from None


def _bucket_fact(tl: Timeline) -> str:
    return (
        f"{tl.bucket} bucket: {tl.expected_min:g} min expected, soft band from {tl.soft_start_min:g} min, "
        f"stuck from {tl.stuck_min:g} min"
    )
