"""A run's pages, as its record has them, and the verdict that counts on each (pure).

Read by `feedback` (runs/feedback.py), the run page (serve/) and the ledger (ledger/rows.py), so
that all three count the same pages.
"""

from __future__ import annotations

from orchestrator.record.model import PageFeedback, RunRecord


def pages(record: RunRecord) -> list[tuple[int, float | None, list[str]]]:
    """(episode, run minute it tripped, the signals it named, each once) of every page the run tripped:
    the first, then each later episode's."""
    s = record.spiral
    out: list[tuple[int, float | None, list[str]]] = []
    if s.tripped_in_soft_band:
        out.append((1, s.tripped_at_min, _unique(s.page_signals or s.signals)))
    out += [
        (e.n, e.tripped_at_min, _unique(e.signals)) for e in s.episodes if e.tripped_at_min is not None and e.n != 1
    ]
    return out


def verdicts(record: RunRecord) -> dict[int, PageFeedback]:
    """The verdict that counts for each judged page: the latest given."""
    return {f.episode: f for f in record.feedback}


def _unique(signals: list[str]) -> list[str]:
    """A page's signals, each once, in the order it named them: a page counts once per rule."""
    return list(dict.fromkeys(signals))
