"""The rules beyond the five signals: the optional `rules:` section of buckets.yaml (pure).

A buckets.yaml without `rules:` runs the five signals alone, exactly as the
contract's floor defines them (`SEED_ONLY`): that is also how a buckets.yaml
written before the rules existed keeps its meaning. docs/detection.md says
what each rule counts and which benchmark family proves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spiral.pickling import by_fields

RULE_NAMES = ("outcomes", "same_error", "subagents", "drift", "poll_progress")
# the rules that are signals of their own (they add weight; the others change what the five count)
RULE_SIGNALS = ("same_error", "drift")


@dataclass(frozen=True, slots=True)
class Rules:
    masks: re.Pattern[str] | None  # the volatile parts of a tool's output, one alternation
    result_wait_s: float  # how long a call waits for its result, once a later call came, before it counts as unknown
    result_wait_alone_s: float  # ...and while nothing came after it (a long build)
    outcomes: bool
    same_error: bool
    same_error_weight: float
    same_error_window: int
    same_error_repeats: int
    subagents: bool  # subagents' calls count as the run's work (off: they are ignored)
    drift: bool
    drift_weight: float
    drift_recent_edits: int
    drift_quiet_min: float
    poll_progress: bool
    poll_done: re.Pattern[str] | None = None  # a poll output that says the task finished
    error_line: re.Pattern[str] | None = None  # same_error: the line of an output that names the error
    error_output: re.Pattern[str] | None = None  # same_error: an error printed by a call that exited 0

    @property
    def needs_results(self) -> bool:
        """Whether a call must wait for its result before the windows take it."""
        return self.outcomes or self.same_error or self.poll_progress

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


SEED_ONLY = Rules(
    masks=None,
    result_wait_s=0.0,
    result_wait_alone_s=0.0,
    outcomes=False,
    same_error=False,
    same_error_weight=0.0,
    same_error_window=1,
    same_error_repeats=0,
    subagents=True,  # the seed detector counts every call the log holds, a subagent's too
    drift=False,
    drift_weight=0.0,
    drift_recent_edits=0,
    drift_quiet_min=0.0,
    poll_progress=False,
)

# key -> kind, per block ("number", "integer", "bool", "regexes"); checked by spiral.settings
SCHEMA: dict[str, dict[str, str]] = {
    "fingerprint": {"result_wait_seconds": "number", "result_wait_alone_seconds": "number", "masks": "regexes"},
    "outcomes": {"enabled": "bool"},
    "same_error": {
        "enabled": "bool",
        "weight": "number",
        "window": "integer",
        "repeats": "integer",
        "error_line": "regex",
        "error_output": "regex",
    },
    "subagents": {"enabled": "bool"},
    "drift": {"enabled": "bool", "weight": "number", "recent_edits": "integer", "quiet_min": "number"},
    "poll_progress": {"enabled": "bool", "done_pattern": "regex"},
}


def _joined(masks: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    """The masks as one alternation; a mask with groups of its own must not refer to them by number."""
    if not masks:
        return None
    for m in masks:
        if re.search(r"\\[1-9]|\(\?P=", m.pattern):
            raise re.error(f"mask {m.pattern!r} uses a backreference")
    return re.compile("|".join(f"(?:{m.pattern})" for m in masks))


def build(vals: dict[str, dict[str, Any]]) -> Rules:
    """Rules from the checked values of every block of `rules:`."""
    fp, se, dr = vals["fingerprint"], vals["same_error"], vals["drift"]
    masks: list[re.Pattern[str]] = fp["masks"]
    return Rules(
        masks=_joined(masks),
        result_wait_s=fp["result_wait_seconds"],
        result_wait_alone_s=max(fp["result_wait_alone_seconds"], fp["result_wait_seconds"]),
        outcomes=vals["outcomes"]["enabled"],
        same_error=se["enabled"],
        same_error_weight=se["weight"],
        same_error_window=max(1, se["window"]),
        same_error_repeats=se["repeats"],
        subagents=vals["subagents"]["enabled"],
        drift=dr["enabled"],
        drift_weight=dr["weight"],
        drift_recent_edits=dr["recent_edits"],
        drift_quiet_min=dr["quiet_min"],
        poll_progress=vals["poll_progress"]["enabled"],
        poll_done=vals["poll_progress"]["done_pattern"],
        error_line=se["error_line"],
        error_output=se["error_output"],
    )
