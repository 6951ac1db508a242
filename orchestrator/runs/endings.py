"""Whether an agent's exit 0 is a success (pure: facts in, the ending out).

Without a `verify:` check, a run is `succeeded` only when the agent exited 0, the clone changed what
the ticket asked for, and the agent's final message is not a give-up. Otherwise:

- `gave_up`: the final message says the agent did not finish (orchestrator/data/give_up.yaml); the
  reason quotes the sentence that says so, redacted;
- `no_change`: nothing the ticket asked for changed: its declared outputs or scope, or, when it
  declares neither, any file of the clone (a tracked file changed or committed, or a new one).

With `verify:`, the check decides (runs/supervisor.py), whatever the agent said or changed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from orchestrator.notify.pages import redact
from spiral.paths import scope_pattern

PHRASES_FILE = Path(__file__).resolve().parent.parent / "data" / "give_up.yaml"
NO_CHANGE = "no_change"
GAVE_UP = "gave_up"
_QUOTE = 200  # characters of the agent's sentence kept in the reason


@dataclass(frozen=True)
class GiveUps:
    """The give-up phrasings: one case-insensitive pattern each, with the messages they must not match."""

    patterns: tuple[re.Pattern[str], ...]
    examples: tuple[str, ...] = ()
    finished: tuple[str, ...] = ()  # final messages of finished work (the file's `not:`)

    def said(self, message: str | None) -> str | None:
        """The sentence of `message` that gives up, quoted and redacted; None when none does."""
        if not message:
            return None
        text = message.replace("\u2019", "'").replace("\u2018", "'")
        for pattern in self.patterns:
            m = pattern.search(text)
            if m is not None:
                return _sentence_around(text, m.start(), m.end())
        return None


def load_give_ups(path: Path = PHRASES_FILE) -> GiveUps:
    """The phrasings of `path` (ValueError naming the entry when one does not compile)."""
    doc: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    patterns, examples = [], []
    for i, entry in enumerate(doc.get("phrases") or []):
        try:
            patterns.append(re.compile(entry["pattern"], re.IGNORECASE))
        except (re.error, KeyError, TypeError) as exc:
            raise ValueError(f"{path.name}: phrases[{i}]: {exc}") from None
        examples.append(str(entry.get("example") or ""))
    return GiveUps(tuple(patterns), tuple(examples), tuple(str(t) for t in doc.get("not") or []))


@cache
def give_ups() -> GiveUps:
    """The shipped phrasings; none (and a line in the supervisor's log) when the file cannot be read:
    an ending is still recorded, on the exit and the clone alone."""
    try:
        return load_give_ups()
    except (OSError, ValueError, yaml.YAMLError, AttributeError) as exc:
        sys.stderr.write(f"endings: {PHRASES_FILE}: {exc}; give-ups are not recognised\n")
        return GiveUps(())


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end], one line, at most _QUOTE characters, redacted."""
    left = max(text.rfind(c, 0, start) for c in ".!?\n") + 1
    right = min((i for i in (text.find(c, end) for c in ".!?\n") if i != -1), default=len(text) - 1) + 1
    sentence = " ".join(text[left:right].split())
    if len(sentence) > _QUOTE:
        sentence = sentence[: _QUOTE - 3].rstrip() + "..."
    return redact(sentence)


def asked_for(changed: list[str], outputs: list[str], scope: list[str]) -> bool:
    """Whether a changed path is one the ticket asked for: a declared output, a path in its scope,
    or, with neither declared, any path."""
    if not outputs and not scope:
        return bool(changed)
    wanted = {o.strip("/").removeprefix("./") for o in outputs}
    in_scope = scope_pattern(tuple(scope))
    return any(p in wanted or (in_scope is not None and in_scope.match(p)) for p in changed)


def judge(
    reason: str,
    final_message: str | None,
    changed: list[str] | None,
    outputs: list[str],
    scope: list[str],
    phrases: GiveUps | None = None,
) -> tuple[str, str]:
    """The ending of an agent that exited 0 (its `reason` so far), with no `verify:` to decide.

    `changed` is None when the clone could not be compared with its base: the exit is then taken as it
    was. A give-up outranks no change: the agent's own words say more."""
    quote = (phrases or give_ups()).said(final_message)
    if quote is not None:
        return GAVE_UP, f'agent gave up ({reason}): "{quote}"'
    if changed is not None and not asked_for(changed, outputs, scope):
        what = "its declared outputs or scope" if outputs or scope else "any file in the clone"
        return NO_CHANGE, f"ended without changing anything the ticket asked for ({reason}; {what} unchanged)"
    return "succeeded", reason
