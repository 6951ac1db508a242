"""What the agent's own log says about how its run went (pure: native payloads in, facts out).

The exit code alone lies: Claude Code exits 0 with every tool call denied,
and both CLIs spend minutes retrying a model API that is down while looking
busy. This reads the records the CLIs write for themselves:

- Claude Code stream-json: `system`/`api_retry` lines while it backs off, the
  final `result` line (`is_error`, `api_error_status`, `permission_denials`,
  `num_turns`), and the tool results that say a call was refused;
- Codex `exec --json`: `error` lines ("Reconnecting... n/5 (... last status:
  429 ...)"), `turn.failed`, `turn.completed`.

A *provider episode* is a stretch of time the agent spent waiting on its
model API: from its first retry until the API answers again (or the run
ends). Episodes are kept as intervals, so that time blocked on the provider
can be kept out of the spiral signals.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from spiral.pickling import attrs_of, by_fields, set_attrs

_STATUS = re.compile(r"\b(?:status:?\s*|\()([45]\d\d)\b|\b([45]\d\d) (?:Too Many|Unauthorized|Forbidden|Service)")
_ATTEMPT = re.compile(r"Reconnecting\.\.\.\s*(\d{1,9})/(\d{1,9})\b")  # bounded: int() of 5000 digits raises
_IDS = 128  # tool_use ids remembered for de-duplication (a repeat comes on the next lines: adapters/base.py)
_DENIED = 8192  # refused calls remembered (and counted)
_WORDS_KEPT = 2000  # characters of the agent's final message kept (its end: where a give-up is said)
_DENIAL_TEXTS = (
    "This command requires approval",
    "but you haven't granted it yet",
    "For security, Claude Code may only",
    "writing is blocked by read-only sandbox",
)
# Claude Code's `error` words for the statuses it retries
_KINDS = {429: "rate_limit", 529: "overloaded", 401: "authentication_failed", 403: "permission_denied"}
_WORDS = {
    "rate_limit": "rate limited",
    "overloaded": "overloaded",
    "authentication_failed": "authentication failed",
    "permission_denied": "access denied",
    "server_error": "server error",
}


@dataclass
class ProviderEpisode:
    """The agent waiting on its model API: since when, and the latest retry it reported."""

    since: float
    last: float
    status: int | None = None
    error: str | None = None  # Claude's word (rate_limit, overloaded, ...), else derived from the status
    attempt: int | None = None
    max_retries: int | None = None
    ended: float | None = None

    def describe(self) -> str:
        what = _what(self.status, self.error)
        tries = f" (attempt {self.attempt}/{self.max_retries})" if self.attempt and self.max_retries else ""
        return f"retrying {what}{tries}"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


def _what(status: int | None, error: str | None) -> str:
    word = _WORDS.get(error or "") or _WORDS.get(_KINDS.get(status or 0, ""), "")
    if word and status:
        return f"{word} ({status})"
    return word or (f"HTTP {status}" if status else "a model API error")


@dataclass
class Outcome:
    """Facts from one run's log, fed one native payload at a time."""

    tool_calls: int = 0
    denied: int = 0
    final_seen: bool = False  # Claude's result line, Codex's turn.completed / turn.failed
    final_error: bool = False
    final_status: int | None = None
    final_message: str | None = None
    final_in_episode: bool = False  # the final record came while the agent was retrying its model API
    last_words: str | None = None  # the agent's latest message to the user (Codex's agent_message), its end
    episodes: list[ProviderEpisode] = field(default_factory=list)
    # Claude's tool_use ids: the last _IDS for de-duplication (a block repeated on another line of its
    # message comes on the next lines: measured 0 calls back), and how many distinct ids were seen
    _call_ids: set[str] = field(default_factory=set, repr=False)
    _call_order: deque[str] = field(default_factory=deque, repr=False)
    _claude_calls: int = field(default=0, repr=False)
    # ids of calls refused (the result line lists them again at the end): at most _DENIED are
    # remembered and counted; past that a run is long past the "every call denied" ending
    _denied_ids: set[str] = field(default_factory=set, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = attrs_of(self)
        del state["_call_ids"]  # the same ids as _call_order: rebuilt from it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "_call_order" not in state:  # pickled by an older version: a cache to rebuild
            raise TypeError("an Outcome pickled by another version")
        set_attrs(self, state)
        while len(self._call_order) > _IDS:  # pickled with a longer memory: the newest ids are what count
            self._call_order.popleft()
        self._call_ids = set(self._call_order)

    @property
    def provider(self) -> ProviderEpisode | None:
        """The provider episode going on now, if any."""
        if self.episodes and self.episodes[-1].ended is None:
            return self.episodes[-1]
        return None

    def blocked_intervals(self, now: float) -> list[tuple[float, float]]:
        """[start, end) of each provider episode; an open one runs until `now`."""
        return [(e.since, e.ended if e.ended is not None else max(e.since, now)) for e in self.episodes]

    def feed(self, ts: float, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "stream_event" or not isinstance(kind, str):
            return  # stream_event: a token delta (--include-partial-messages), nothing for the outcome
        if kind == "system" and data.get("subtype") == "api_retry":
            self._retry(
                ts,
                _int(data.get("error_status")),
                _text(data.get("error")),
                _int(data.get("attempt")),
                _int(data.get("max_retries")),
            )
        elif kind == "assistant":
            self._claude_assistant(ts, data)
        elif kind == "user":
            self._claude_results(data)
        elif kind == "result":
            self._claude_result(ts, data)
        elif kind == "error":
            self._codex_error(ts, _text(data.get("message")) or "")
        elif kind == "turn.failed":
            err = data.get("error")
            message = _text(err.get("message")) if isinstance(err, dict) else _text(err)
            self._final(ts, True, _status_in(message or ""), message)
        elif kind == "turn.completed":
            self._final(ts, False, None, None)
        elif kind in ("item.started", "item.completed", "turn.started"):
            self._api_answered(ts)
            if kind == "item.completed":
                self._codex_item(data.get("item"))

    # ---- provider episodes -----------------------------------------------------------------

    def _retry(
        self, ts: float, status: int | None, error: str | None, attempt: int | None, max_retries: int | None
    ) -> None:
        ep = self.provider
        if ep is None:
            ep = ProviderEpisode(since=ts, last=ts)
            self.episodes.append(ep)
        ep.last = ts
        ep.status = status if status is not None else ep.status
        ep.error = error or ep.error
        ep.attempt, ep.max_retries = attempt, max_retries

    def _api_answered(self, ts: float) -> None:
        ep = self.provider
        if ep is not None:
            ep.ended = ts

    def _codex_error(self, ts: float, message: str) -> None:
        m = _ATTEMPT.search(message)
        if m:
            self._retry(ts, _status_in(message), None, int(m.group(1)), int(m.group(2)))
        elif self.provider is None and _status_in(message) is not None:
            self._retry(ts, _status_in(message), None, None, None)

    # ---- Claude ----------------------------------------------------------------------------

    def _claude_assistant(self, ts: float, data: dict[str, Any]) -> None:
        message = data.get("message")
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            return  # the CLI's own stand-in when it gave up on the API: not an answer
        self._api_answered(ts)
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                ids = self._call_ids
                if block["id"] not in ids:
                    ids.add(block["id"])
                    self._call_order.append(block["id"])
                    self._claude_calls += 1
                    if len(ids) > _IDS:
                        ids.discard(self._call_order.popleft())
        self.tool_calls = self._claude_calls

    def _claude_results(self, data: dict[str, Any]) -> None:
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result" or block.get("is_error") is not True:
                continue
            text = _flat(block.get("content"))
            if any(t in text for t in _DENIAL_TEXTS) and isinstance(block.get("tool_use_id"), str):
                self._deny(block["tool_use_id"])
        self.denied = len(self._denied_ids)

    def _deny(self, tid: str) -> None:
        if len(self._denied_ids) < _DENIED:
            self._denied_ids.add(tid)

    def _claude_result(self, ts: float, data: dict[str, Any]) -> None:
        denials = data.get("permission_denials")
        for d in denials if isinstance(denials, list) else []:
            if isinstance(d, dict) and isinstance(d.get("tool_use_id"), str):
                self._deny(d["tool_use_id"])
        self.denied = len(self._denied_ids)
        status = _int(data.get("api_error_status"))
        self._final(ts, data.get("is_error") is True, status, _text(data.get("result")))

    # ---- Codex -----------------------------------------------------------------------------

    def _codex_item(self, item: Any) -> None:
        if not isinstance(item, dict):
            return
        if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
            self.last_words = item["text"][-_WORDS_KEPT:]
        if item.get("type") in ("command_execution", "file_change", "mcp_tool_call"):
            self.tool_calls += 1
            if any(t in _flat(item.get("aggregated_output")) for t in _DENIAL_TEXTS):
                self.denied += 1

    def _final(self, ts: float, is_error: bool, status: int | None, message: str | None) -> None:
        self.final_seen, self.final_error = True, is_error
        self.final_status, self.final_message = status, message
        ep = self.provider
        self.final_in_episode = ep is not None
        if ep is not None:
            ep.ended = ts
            if is_error and status is None:
                self.final_status = ep.status

    # ---- the ending ------------------------------------------------------------------------

    @property
    def final_words(self) -> str | None:
        """What the agent said last: Claude's result text, else Codex's latest agent message."""
        return self.final_message[-_WORDS_KEPT:] if self.final_message else self.last_words

    def ending(self, exit_code: int) -> tuple[str, str] | None:
        """(state, reason) when the log tells a truer story than the exit code; None otherwise."""
        last = self.episodes[-1] if self.episodes else None
        # an episode the agent had come through (answers since) has nothing to do with a later error
        provider_failed = self.final_error and (self.final_status is not None or self.final_in_episode)
        open_at_exit = last is not None and last.ended is None
        if provider_failed or (exit_code != 0 and open_at_exit):
            last = last if self.final_in_episode or open_at_exit else None
            status = self.final_status if self.final_status is not None else (last.status if last else None)
            error = last.error if last is not None else None
            what = _what(status, error)
            if status is None and error in (None, "unknown") and self.final_message:
                what = " ".join(self.final_message.split())[:160]  # no status to name: the agent's own words
            reason = f"provider: {what}"
            if last is not None and last.attempt:
                reason += f" after {last.attempt} retr{'y' if last.attempt == 1 else 'ies'}"
            return "failed", reason
        if self.tool_calls and self.denied >= self.tool_calls:
            return "failed", f"tools denied: {self.denied} of {self.tool_calls} calls (the profile allows no tools)"
        if self.final_error:
            return "failed", f"agent reported an error: {(self.final_message or 'no message')[:200]}"
        return None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _flat(content: Any) -> str:
    """A tool result's text, whether a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _status_in(message: str) -> int | None:
    m = _STATUS.search(message)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def blocked_before(intervals: list[tuple[float, float]], ts: float) -> float:
    """Seconds of `intervals` (sorted, disjoint) that lie before `ts`."""
    total = 0.0
    for start, end in intervals:
        if ts <= start:
            break
        total += min(ts, end) - start
    return total
