"""Rule signal `stuck_check`: the same check, tried again and again, keeps coming back with a
failure it already gave (pure).

An attempt is a shell call with an intent (spiral/intent.py: the tool and its target, flags and
wrappers aside) whose result is known. Its *outcome key* is what a person would call the result:

- a failure: the line that names the error (spiral/fingerprint.py's same-error key) with every
  number masked, plus the test summary's counts where the output has one (`2 failed, 10 passed`
  against `1 failed, 11 passed` is progress; `attempt 3 failed` against `attempt 4 failed` is not);
- a run of a probe the agent made itself (a script it wrote, inline `python -c` / `python -`) that
  exits 0: its output, masked as the fingerprint masks it, attempt counters masked too;
- a pass of any other check: no key; the check is done, its history starts again.

Two more kinds of attempt count the same way: an edit of a file that the editing tool refused (the
text to replace not found, found twice, the same as its replacement: `edit <path>`, its error the
key; an edit that goes through ends its history), and a search (`grep`, `rg`, `find` ...) that
finds nothing (`search`, keyed `nothing found`; a search that finds something ends its history).

The signal fires when one intent has, within the last `window` calls, come back `repeats` times
with an outcome key it had already given there, and all its attempts there gave at most
`max_outcomes` different keys: the same failure every time, or the same two or three in turn (two
pre-commit hooks failing alternately). When the window holds more keys than that, the outcomes
the check got past early on do not hide where it is now: the latest stretch of attempts with at
most `max_outcomes` keys counts instead, if a key there came back after another one (a cycle, not
a count that gives way to the next and never returns). Edits between the attempts do not matter:
an edit whose check fails the way it failed before changed nothing that counts. A new failure is
information and is not counted, but it is remembered: when it comes back, that is a repeat.
"""

from __future__ import annotations

import re
from collections import deque

from mypy_extensions import mypyc_attr

from spiral.pickling import attrs_of, set_attrs
from spiral.signals._count import short
from spiral.verdict import Finding

NAME = "stuck_check"
EDIT_INTENT = "edit "  # + the file: an edit the tool refused is an attempt
SEARCH_INTENT = "search"  # grep / rg / find ...: one that finds nothing is an attempt
EMPTY = "F:nothing found"
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
# a test run's summary counts: two or more `N word` on one line (pytest, jest, go, cargo, rspec...)
_COUNT = (
    r"\d+ (?:failed|passed|errors?|failures?|skipped|xfailed|xpassed|warnings?|deselected|tests?|examples?|pending)\b"
)
_SUMMARY = re.compile(
    rf"(?i)\b{_COUNT}(?:[ ,;]+(?:and )?{_COUNT})+|FAILED \((?:failures|errors)=\d+[^)]*\)|\bFound \d+ errors?\b|\b\d+ problems?\b"
)
# numbers that count tries, not results: `attempt 3`, `retry #2`, `iteration 14`, `round 2 of 5`
_COUNTERS = re.compile(
    r"(?i)\b(attempt|try|retry|iteration|round|run|pass|trial|step|loop|tick)( ?#? ?)\d+( ?(?:of|/) ?\d+)?"
)


def outcome_key(error_key: str | None, failed: bool, output: str, probe_output: str | None) -> str | None:
    """The attempt's outcome key (see the module), or None for a pass of a check."""
    if failed or error_key is not None:
        key = _DIGITS.sub("#", error_key or "")
        m = _SUMMARY.search(output)
        return "F:" + key + (" | " + m.group(0).lower() if m else "")
    if probe_output is not None:
        return "P:" + _COUNTERS.sub(r"\1\2#", probe_output)
    return None


def _turns(stretch: list[tuple[int, str, str, float]]) -> bool:
    """Whether the stretch's failures come back in turn rather than give way one to the next: one
    key throughout, or a key that returns after another came. `5 failed` twice, then `4 failed`
    twice, then `3 failed` is a check getting somewhere, even though each count came twice."""
    left: set[str] = set()
    last = stretch[0][1]
    for _, key, _, _ in stretch[1:]:
        if key != last:
            if key in left:
                return True
            left.add(last)
            last = key
    return not left


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class Attempts:
    """The recent attempts of each intent, and whether one of them is stuck."""

    def __init__(self, window: int, repeats: int, max_outcomes: int, batch_s: float = -1.0) -> None:
        self.window, self.repeats, self.max_outcomes = window, repeats, max_outcomes
        self.batch_s = batch_s  # attempts this close together, one key, were issued at once: one attempt (<0: off)
        self._tries: dict[str, deque[tuple[int, str, str, float]]] = {}  # intent -> (call no., key, command, ts)
        self.calls = 0

    def __getstate__(self) -> dict[str, object]:
        return attrs_of(self)

    def __setstate__(self, state: dict[str, object]) -> None:
        set_attrs(self, state)

    def tick(self) -> None:
        """One more call into the windows (an attempt or not): old attempts fall out of the window."""
        self.calls += 1
        if self.calls % 64 == 0:
            low = self.calls - self.window
            for name in [k for k, d in self._tries.items() if not d or d[-1][0] < low]:
                del self._tries[name]

    def add(self, intent: str, key: str | None, command: str, ts: float) -> None:
        """An attempt of `intent` with its outcome key (None: the check passed, its history ends)."""
        if key is None:
            self._tries.pop(intent, None)
            return
        tries = self._tries.get(intent)
        if tries is None:
            tries = self._tries[intent] = deque()
        elif tries and tries[-1][1] == key and ts - tries[-1][3] <= self.batch_s:
            return  # a sibling of the last attempt (rules.batches): it could not learn from it
        tries.append((self.calls, key, command, ts))
        low = self.calls - self.window
        while tries and (tries[0][0] < low or len(tries) > self.window):
            tries.popleft()

    def _stretch(self, recent: list[tuple[int, str, str, float]]) -> list[tuple[int, str, str, float]]:
        """The latest attempts that gave at most `max_outcomes` keys: the stretch the check is
        stuck in. An outcome from before it (a failure the agent got past) does not count."""
        keys: set[str] = set()
        first = len(recent)
        while first > 0:
            key = recent[first - 1][1]
            if key not in keys:
                if len(keys) == self.max_outcomes:
                    break
                keys.add(key)
            first -= 1
        return recent[first:]

    def check(self, weight: float) -> Finding | None:
        low = self.calls - self.window
        best: tuple[int, str, list[tuple[int, str, str, float]]] | None = None
        for name, tries in self._tries.items():
            recent = [t for t in tries if t[0] >= low]
            if len(recent) <= self.repeats:
                continue
            outcomes = len({t[1] for t in recent})
            if outcomes > self.max_outcomes:
                # older outcomes the check got past: what counts is the stretch it is in now, when
                # its failures come back in turn there (not when they give way one to the next)
                recent = self._stretch(recent)
                outcomes = len({t[1] for t in recent})
                if not _turns(recent):
                    continue
            again = len(recent) - outcomes
            if again >= self.repeats and (best is None or again > best[0]):
                best = (again, name, recent)
        if best is None:
            return None
        again, name, recent = best
        keys: dict[str, None] = {}
        for _, key, _, _ in recent:
            keys[key] = None
        commands = len({c for _, _, c, _ in recent})
        what = " and ".join(repr(short(k[2:].split(" | ")[0] or "(no output)", 60)) for k in list(keys)[:3])
        turn = "the same failure" if len(keys) == 1 else f"{len(keys)} failures in turn"
        if all(k.startswith("P:") for k in keys):
            turn = "the same output" if len(keys) == 1 else f"{len(keys)} outputs in turn"
        how = f"from {commands} different command lines" if commands > 1 else "from the same command line"
        return Finding(
            NAME,
            weight,
            f"{name} ran {len(recent)} times in the last {self.window} calls, {how}, and came back with {turn} "
            f"({what}) {again} times",
            name,
            (recent[0][3], recent[0][0] - 1),
            len(recent),
        )
