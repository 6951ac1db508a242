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

RULE_NAMES = (
    "outcomes",
    "same_error",
    "subagents",
    "drift",
    "poll_progress",
    "stuck_check",
    "shell_edits",
    "sustained",
    "wake",
    "batches",
)
# the rules that are signals of their own (they add weight; the others change what the five count)
RULE_SIGNALS = ("same_error", "drift", "stuck_check")


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
    stuck_check: bool = False  # the same check back with a failure it gave before (spiral/attempts.py)
    stuck_weight: float = 0.0
    stuck_window: int = 1
    stuck_repeats: int = 0
    stuck_max_outcomes: int = 0
    shell_edits: bool = False  # edits made through the shell are file changes (spiral/shellwrites.py)
    made_debris: bool = False  # files the run made, then ran or compiled, are debris whatever their names
    sustained: bool = False  # loop evidence held long enough pages before the soft band (spiral/detector.py)
    sustained_threshold: float = 0.0
    sustained_min_minutes: float = 0.0
    sustained_min_calls: int = 0
    sustained_min_attempts: int = 0  # ...or this many tries of one stuck check (0: calls only)
    sustained_min_pace: float = 0.0  # tool calls a minute the loop must keep up while it holds
    wake: bool = False  # replay evaluates as the waking watcher does: also just after each arrival (spiral/walk.py)
    batches: bool = False  # calls of one tool issued together that fail alike are one attempt
    batch_s: float = 0.0  # ...issued at most this many seconds apart (0: the same timestamp)

    @property
    def needs_results(self) -> bool:
        """Whether a call must wait for its result before the windows take it."""
        return self.outcomes or self.same_error or self.poll_progress or self.stuck_check

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
    "stuck_check": {
        "enabled": "bool",
        "weight": "number",
        "window": "integer",
        "repeats": "integer",
        "max_outcomes": "integer",
    },
    "shell_edits": {"enabled": "bool", "made_debris": "bool"},
    "sustained": {
        "enabled": "bool",
        "threshold": "number",
        "min_minutes": "number",
        "min_calls": "integer",
        "min_attempts": "integer",
        "min_calls_per_min": "number",
    },
    "wake": {"enabled": "bool"},
    "batches": {"enabled": "bool", "within_seconds": "number"},
}
# keys a block written before them may leave out, with the value that keeps what the file meant then
OPTIONAL_KEYS: dict[str, dict[str, Any]] = {"sustained": {"min_attempts": 0}}
# blocks a buckets.yaml written before them may leave out: each is then off, as it was
OPTIONAL_BLOCKS = frozenset({"stuck_check", "shell_edits", "sustained", "wake", "batches"})
_OFF: dict[str, dict[str, Any]] = {
    "stuck_check": {"enabled": False, "weight": 0.0, "window": 1, "repeats": 0, "max_outcomes": 0},
    "shell_edits": {"enabled": False, "made_debris": False},
    "sustained": {
        "enabled": False,
        "threshold": 0.0,
        "min_minutes": 0.0,
        "min_calls": 0,
        "min_attempts": 0,
        "min_calls_per_min": 0.0,
    },
    "wake": {"enabled": False},
    "batches": {"enabled": False, "within_seconds": 0.0},
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
    vals = {**_OFF, **vals}
    fp, se, dr, sc = vals["fingerprint"], vals["same_error"], vals["drift"], vals["stuck_check"]
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
        stuck_check=sc["enabled"],
        stuck_weight=sc["weight"],
        stuck_window=max(1, sc["window"]),
        stuck_repeats=sc["repeats"],
        stuck_max_outcomes=sc["max_outcomes"],
        shell_edits=vals["shell_edits"]["enabled"],
        made_debris=vals["shell_edits"]["enabled"] and vals["shell_edits"]["made_debris"],
        sustained=vals["sustained"]["enabled"] and vals["sustained"]["threshold"] > 0,
        sustained_threshold=vals["sustained"]["threshold"],
        sustained_min_minutes=vals["sustained"]["min_minutes"],
        sustained_min_calls=vals["sustained"]["min_calls"],
        sustained_min_attempts=vals["sustained"]["min_attempts"],
        sustained_min_pace=vals["sustained"]["min_calls_per_min"],
        wake=vals["wake"]["enabled"],
        batches=vals["batches"]["enabled"],
        batch_s=max(0.0, vals["batches"]["within_seconds"]),
    )
