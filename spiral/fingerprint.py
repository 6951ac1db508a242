"""What a call's result was, as a comparable fingerprint: volatile parts masked (pure).

Two runs "came back the same" when they have the same failure flag and
exit code and the same output once timestamps, durations, hex ids, temporary
paths, line numbers and pids (the masks in buckets.yaml) are replaced.
Masking is the costly part, so it is done only when two outputs differ as
text, and memoised per output text (a loop repeats the same outputs). A
long output is kept as its two ends (spiral/model.py `cut`); its tail is
compared from the end, where it does not shift with the output's length.
"""

from __future__ import annotations

import re

from spiral.model import ToolCall

_MEMO = 4096
_TAIL = 120  # characters of a long output's (masked) tail compared
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
            head, cut, tail = out.partition(" ... ")
            if cut:  # a long output keeps its two ends: where its tail starts depends on the length,
                out = head + cut + tail[-_TAIL:]  # ...so the tail is compared from its end
            if len(self._memo) >= _MEMO:
                self._memo.clear()
            self._memo[text] = out
        return out

    def same(self, a: ToolCall, b: ToolCall) -> bool:
        """Whether two calls came back the same, volatile parts aside (both results known)."""
        if not (a.result_seen and b.result_seen) or a.is_error != b.is_error or a.exit_code != b.exit_code:
            return False
        x, y = a.output_ends or "", b.output_ends or ""
        return x == y or self.masked(x) == self.masked(y)

    def error(self, call: ToolCall) -> str | None:
        """The masked error text of a failed call that printed one (the same-error rule's key)."""
        if not (call.result_seen and call.is_error and call.output_ends):
            return None
        return self.masked(call.output_ends) or None
