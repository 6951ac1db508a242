"""What a call's result was, as a comparable fingerprint: volatile parts masked (pure).

Two runs "came back the same" when they have the same failure flag and
exit code and the same output once timestamps, durations, hex ids, temporary
paths, line numbers and pids (the masks in buckets.yaml) are replaced.
Masking is the costly part, so it is done only when two outputs differ as
text, the short head first (the whole output only when the heads agree), and
memoised per output text (a loop repeats the same outputs; the memos are shared by every
fingerprinter with the same patterns, so the walks of one recording mask each output once).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mypy_extensions import mypyc_attr

from spiral.model import ToolCall
from spiral.pickling import set_attrs
from spiral.regexfast import required, required_folded, skipping

_MEMO = 4096
_HEAD = 100  # characters of an output's start compared (model.cut keeps as many)
_TAIL = 120  # characters of its (masked) end compared


class Facts(NamedTuple):
    """What `same` reads of a call: its result as it was at one moment (a later result changes the call)."""

    result_seen: bool
    is_error: bool
    exit_code: int | None
    output_ends: str | None


def facts_of(call: ToolCall) -> Facts:
    return _new_facts(Facts, (call.result_seen, call.is_error, call.exit_code, call.output_ends))


_new_facts = tuple.__new__  # Facts(...) without the NamedTuple __new__ frame


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class Fingerprinter:
    def __init__(
        self,
        masks: re.Pattern[str] | None,
        error_line: re.Pattern[str] | None = None,
        error_output: re.Pattern[str] | None = None,
    ) -> None:
        # the same patterns, rewritten to skip where no match can start (spiral/regexfast.py)
        self.masks = skipping(masks) if masks is not None else None
        self.error_line = skipping(error_line) if error_line is not None else None
        self.error_output = skipping(error_output) if error_output is not None else None
        self._output_needs = required(error_output) if error_output is not None else None
        self._line_needs = required_folded(error_line) if error_line is not None else None
        # output -> its masked head, its masked tail, a failure's same-error key: memos shared by every
        # fingerprinter with these patterns (an eval walks each scenario three times or more)
        self._heads, self._tails, self._keys = _memos(self.masks, self.error_line)

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its memo: a cache, rebuilt as outputs come (the live detector is pickled per tick)."""
        return {"masks": self.masks, "error_line": self.error_line, "error_output": self.error_output}

    def __setstate__(self, state: dict[str, object]) -> None:
        set_attrs(self, state)
        self._output_needs = required(self.error_output) if self.error_output is not None else None
        self._line_needs = required_folded(self.error_line) if self.error_line is not None else None
        self._heads, self._tails, self._keys = _memos(self.masks, self.error_line)

    def masked(self, text: str) -> str:
        """What is compared of an output: its first characters and its last, volatile parts masked.

        Every output is compared the same way, cut or not, so nothing changes at the length where
        spiral/model.py starts keeping only an output's two ends: the masked head (where a command
        says what it is) and the masked tail taken from the end (where errors and summaries are,
        and which does not shift with the output's length).
        """
        return self._head(text) + " | " + self._tail(text)

    def _head(self, text: str) -> str:
        out = self._heads.get(text)
        if out is None:
            if len(text) <= _HEAD:
                return self._both(text)[0]
            out = self._mask(text[:_HEAD])
            if len(self._heads) >= _MEMO:
                self._heads.clear()
            self._heads[text] = out
        return out

    def _tail(self, text: str) -> str:
        out = self._tails.get(text)
        if out is None:
            if len(text) <= _HEAD:
                return self._both(text)[1]
            out = self._mask(text)[-_TAIL:]
            if len(self._tails) >= _MEMO:
                self._tails.clear()
            self._tails[text] = out
        return out

    def _both(self, text: str) -> tuple[str, str]:
        """A short output's head is the whole output masked, as its tail is: masked once for both."""
        whole = self._mask(text)
        head, tail = whole, whole[-_TAIL:]
        for memo, out in ((self._heads, head), (self._tails, tail)):
            if len(memo) >= _MEMO:
                memo.clear()
            memo[text] = out
        return head, tail

    def _mask(self, text: str) -> str:
        out = self.masks.sub("#", text) if self.masks is not None else text
        return " ".join(out.split())  # runs of whitespace as one space, none at the ends (as `\s+` -> " ", strip)

    def same(self, a: ToolCall | Facts, b: ToolCall | Facts) -> bool:
        """Whether two calls came back the same, volatile parts aside (both results known)."""
        if not (a.result_seen and b.result_seen) or a.is_error != b.is_error or a.exit_code != b.exit_code:
            return False
        x, y = a.output_ends or "", b.output_ends or ""
        if x == y:
            return True
        # masked(x) == masked(y), the cheap head first: the whole output is masked only when the heads agree
        hx, hy = self._head(x), self._head(y)
        if hx == hy:
            return self._tail(x) == self._tail(y)
        if not (hx.startswith(hy) or hy.startswith(hx)):
            return False  # the joined texts differ at the heads already
        return self.masked(x) == self.masked(y)  # one head a prefix of the other: compare as joined

    def error(self, call: ToolCall, request: bool = False) -> str | None:
        """The same-error rule's key: the masked line naming the error, for a call that failed, or
        that exited 0 but printed an error a request or a script reports that way (an HTTP 401...):
        `request` says the call was a shell command that is not a file viewer or search.

        The line is the last one that looks like an error (`error_line`): ten `python -c`
        variants end in the same `ModuleNotFoundError` line whatever they printed before it.
        """
        text = call.output_ends
        if not (call.result_seen and text):
            return None
        if not call.is_error:
            if not request:
                return None
            needs = self._output_needs  # an output holding none of the strings every match holds: no match
            if needs is not None:
                for s in needs:
                    if s in text:
                        break
                else:
                    return None
            found = self.error_output.search(text) if self.error_output is not None else None
            return self._mask(found.group(0)) if found else None
        key = self._keys.get(text, _UNKNOWN)
        if key is _UNKNOWN:
            key = self._failure_key(text)
            if len(self._keys) >= _MEMO:
                self._keys.clear()
            self._keys[text] = key
        return key

    def error_line_in(self, text: str) -> str | None:
        """The masked line of `text` that names an error (`error_line`), if one does: a probe that
        exits 0 may still print the exception it caught."""
        return self._failure_key(text, whole=False)

    def _failure_key(self, text: str, whole: bool = True) -> str | None:
        if self.error_line is not None:
            # case-insensitive: an ASCII line holding none of these strings, in any case, has no match
            needs = self._line_needs
            if needs is None or not text.isascii() or _holds(text.lower(), needs):
                for line in reversed(text.splitlines()):
                    if needs is not None and line.isascii() and not _holds(line.lower(), needs):
                        continue
                    if self.error_line.search(line):
                        return self._mask(line) or None
        if not whole:
            return None
        key = self.masked(text)
        # ends that are only rules and masks (pytest's wide `=====` lines, its summary cut away) say
        # nothing about which failure it was: no key, or every such run would be "the same error"
        return key if _says_something(key) else None


_UNKNOWN = "\0unknown"  # not in the memo (compared by identity: no key is this very object)
_Memos = tuple[dict[str, str], dict[str, str], dict[str, "str | None"]]
_SHARED: dict[tuple[re.Pattern[str] | None, re.Pattern[str] | None], _Memos] = {}


def _memos(masks: re.Pattern[str] | None, error_line: re.Pattern[str] | None) -> _Memos:
    """The memos of outputs masked with these patterns: one set a process, each capped at _MEMO entries."""
    got = _SHARED.get((masks, error_line))
    if got is None:
        if len(_SHARED) >= 16:  # (a process seldom sees more than one set of patterns)
            _SHARED.clear()
        got = _SHARED[(masks, error_line)] = ({}, {}, {})
    return got


def _says_something(key: str) -> bool:
    """Whether a masked output holds a letter or a digit outside the masks (which are all `#`)."""
    for ch in key:
        if ch.isalnum():
            return True
    return False


def _holds(text: str, needs: tuple[str, ...]) -> bool:
    for s in needs:
        if s in text:
            return True
    return False
