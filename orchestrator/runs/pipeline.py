"""The watcher pass's steps, in order, and the kinds of notice they make due.

`runs/tick.py` runs each step that runs in the run's phase, in this order. `STEPS` in order is the
contract:

1. liveness: is the run's process there, and is a stop due that nobody carried out;
2. feed: the guidance receipts first (the windows restart there), then what the files gained;
3. provider: the agent's model API retrying, or fine;
4. detection: the verdict, and the page's trip;
5. episodes: since when it is tripped, a later episode's trip; the verdict recorded;
6. answers: what each message of guidance came to (or, once ended, its last word);
7. ladder: the escalation ladder's next rung;
8. spend: tokens and dollars, the ceilings;
9. ending: a run that just ended, accounted once.

`NOTICES` gathers the steps' kinds of notice in the same order: what `notify/delivery.py` sends.
"""

from __future__ import annotations

from orchestrator.notify.kinds import NoticeKind
from orchestrator.runs.steps.answers import Answers
from orchestrator.runs.steps.base import Step
from orchestrator.runs.steps.detection import Detection
from orchestrator.runs.steps.ending import Ending
from orchestrator.runs.steps.episodes import Episodes
from orchestrator.runs.steps.feed import Feed
from orchestrator.runs.steps.ladder import Ladder
from orchestrator.runs.steps.liveness import Liveness
from orchestrator.runs.steps.provider import Provider
from orchestrator.runs.steps.spend import Spend

STEPS: tuple[Step, ...] = (
    Liveness(),
    Feed(),
    Provider(),
    Detection(),
    Episodes(),
    Answers(),
    Ladder(),
    Spend(),
    Ending(),
)

NOTICES: tuple[NoticeKind, ...] = tuple(kind for step in STEPS for kind in step.notices)
