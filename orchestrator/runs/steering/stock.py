"""The built-in wordings: `nudge --redirect`, `nudge --wrap-up`, and the ladder's rungs.

Each names the evidence from the page (or the latest verdict), so the agent is told what the
supervisor saw, not just that something is wrong. The evidence is redacted like the page's.
"""

from __future__ import annotations

from orchestrator.notify.pages import redact_cut
from orchestrator.record.model import RunRecord

KINDS = ("nudge", "redirect", "wrap-up")


def evidence(record: RunRecord) -> str:
    s = record.spiral
    lines = s.episodes[-1].evidence if s.episodes and s.episodes[-1].evidence else (s.page_evidence or s.evidence)
    shown = [redact_cut(e) for e in lines if not e.endswith("expected wall-clock")][:4]
    return "; ".join(shown) if shown else "no signal is firing right now"


def text(kind: str, record: RunRecord) -> str:
    seen = evidence(record)
    if kind == "redirect":
        return (
            f"You may be going in circles. What the supervisor sees: {seen}. "
            "Stop repeating what you just did. Re-read the task, say in one or two sentences what you have "
            "learned so far, and try a different approach."
        )
    if kind == "wrap-up":
        return (
            f"Please wrap up now. What the supervisor sees: {seen}. Keep what works, undo half-made changes, "
            "remove throwaway scripts and temporary files, write down what is left and why, and end your turn."
        )
    return (
        f"A check-in from the person supervising this run. What the supervisor sees: {seen}. "
        "Step back for a moment: what is the next step that would show real progress on the task?"
    )
