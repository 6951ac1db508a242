"""`report`: a run's (or a recorded case's) timeline as one self-contained HTML file.

timeline.py holds the data, walk.py and sources.py extract it from the recording through the real
detector, chart.py and page.py draw it.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.ledger import prices

REPORT_HTML = "report.html"  # in the run folder, unless --out says otherwise


def render_run(
    run_dir: Path, buckets: BucketsFile | None = None, price_overrides: prices.Overrides | None = None
) -> str:
    """The HTML report of the run in `run_dir` (a folder under runs/): the text of the whole file."""
    from orchestrator.report.page import document
    from orchestrator.report.sources import run_timeline

    return document(run_timeline(run_dir, buckets, price_overrides))


def render_case(case_dir: Path, buckets: BucketsFile | None = None) -> str:
    """The HTML report of a recorded case folder (holding case.yaml and events.jsonl)."""
    from orchestrator.report.page import document
    from orchestrator.report.sources import case_timeline

    return document(case_timeline(case_dir, buckets))
