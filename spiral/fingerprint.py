"""What a call's result was, as a comparable fingerprint: volatile parts masked (pure).

Two runs "came back the same" when they have the same failure flag and
exit code and the same output once timestamps, durations, hex ids, temporary
paths, line numbers and pids (the masks in buckets.yaml) are replaced.
Masking is the costly part, so it is done only when two outputs differ as
text, and memoised per output text (a loop repeats the same outputs).
"""

from __future__ import annotations

import re

from spiral.model import ToolCall

_MEMO = 4096
_COMPARED = 300  # characters of an output compared
_SPACE = re.compile(r"\s+")


class Fingerprinter:
    def __init__(self, masks: re.Pattern[str] | None) -> None:
        self.masks = masks
        self._memo: dict[str, str] = {}

    def masked(self, text: str) -> str:
        out = self._memo.get(text)
        if out is None:
            out = self.masks.sub("#", text) if self.masks is not None else text
            out = _SPACE.sub(" ", out).strip()
            if len(self._memo) >= _MEMO:
                self._memo.clear()
            self._memo[text] = out
        return out

    def same(self, a: ToolCall, b: ToolCall) -> bool:
        """Whether two calls came back the same, volatile parts aside (both results known)."""
        if not (a.result_seen and b.result_seen) or a.is_error != b.is_error or a.exit_code != b.exit_code:
            return False
        x, y = a.output_ends or "", b.output_ends or ""
        return x == y or self.masked(_ends(x)) == self.masked(_ends(y))

    def error(self, call: ToolCall) -> str | None:
        """The masked error text of a failed call that printed one (the same-error rule's key)."""
        if not (call.result_seen and call.is_error and call.output_ends):
            return None
        return self.masked(_ends(call.output_ends)) or None


def _ends(text: str) -> str:
    """What is compared of an output: its start and its end (where errors and summaries are)."""
    return text if len(text) <= _COMPARED else text[: _COMPARED // 3] + text[-(2 * _COMPARED) // 3 :]
