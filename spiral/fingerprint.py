"""What a call's result was, as a comparable fingerprint: volatile parts masked (pure).

Two runs "fail the same way" when their fingerprints are equal: same
failure flag and exit code, same output once timestamps, durations, hex ids,
temporary paths, line numbers and pids (the masks in buckets.yaml) are
replaced. A loop repeats the same outputs, so fingerprints are memoised per
output text.
"""

from __future__ import annotations

import re

from spiral.model import ToolCall

_MEMO = 4096
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

    def of(self, call: ToolCall) -> str | None:
        """The call's outcome fingerprint; None while its result is unknown."""
        if not call.result_seen:
            return None
        head = "E" if call.is_error else "O"
        if call.exit_code is not None:
            head += str(call.exit_code)
        ends = call.output_ends
        return head + "|" + (self.masked(ends) if ends else "")


def error_text(call: ToolCall, fingerprint: str | None) -> str | None:
    """The masked error output of a failed call that printed one (the same-error rule's key)."""
    if fingerprint is None or not call.is_error:
        return None
    body = fingerprint.split("|", 1)[1]
    return body or None
