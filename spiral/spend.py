"""Tokens and dollars of a run, counted from what the agent itself wrote (pure: no I/O; compiled with spiral/, being every line's other reader in a live pass).

Claude Code (claude-stream-json), best source first:

* the `result` line: the CLI's own totals for the session (`modelUsage` per model,
  cache fields and `costUSD` included; else `usage` and `total_cost_usd`): exact;
* the session transcript (`CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl`, found
  and read by `orchestrator/ledger/agent_records.py`, fed here through `feed_transcript`): every
  message's final usage, written while the run goes on;
* the stream's own `assistant` lines: one per content block, carrying the
  *message_start* usage (output not final), so only a last resort.

Messages count once per message id, each figure at the largest value any line
gave it. A session counts its result line when it has one, else its messages.

Codex (codex-json): `turn.completed` usage is exact but comes only when a turn
ends; the rollout (`CODEX_HOME/sessions/.../rollout-...-<thread>.jsonl`, fed
through `feed_rollout`) has per-response usage and the thread's running total as
the run goes, and names the model. Whichever has counted more wins; they agree
once the turn has completed. OpenAI's `input_tokens` include the cached ones.

Usage is kept per (model, prompt-size tier), so that a price that steps up with a
request's prompt size can be applied per request (`ledger/prices.py`); totals from
a result line or `turn.completed` have no request sizes and sit in tier 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from spiral.message_tally import (
    PROMPT_TIERS as PROMPT_TIERS,  # re-exported: prices and tests use spend.PROMPT_TIERS
)
from spiral.message_tally import MessageTally, ResponseTally, StreamTail, tier_key, tier_of
from spiral.usage import Counts, _int, _num, anthropic_counts, openai_counts
from spiral.usage import Spend as Spend  # (re-exported: prices, agent_records and the report read it from here)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class ClaudeSession:
    cwd: str | None = None
    project_dir: str | None = None  # where the CLI said it keeps the session (from its memory path)
    # the session's messages as its stdout showed them, and as its transcript did (message_tally.py)
    stream: MessageTally = field(default_factory=MessageTally)
    transcript: MessageTally = field(default_factory=MessageTally)
    tail: StreamTail = field(default_factory=StreamTail)  # stream messages the transcript has not shown yet

    @property
    def has_messages(self) -> bool:
        return bool(self.stream.n or self.transcript.n)

    result: Spend | None = None


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class Rollout:
    model: str | None = None
    # per response id, the latest figures, summed as they come (message_tally.py: bounded however long the run)
    responses: ResponseTally = field(default_factory=ResponseTally)
    deltas: Spend = field(default_factory=Spend)  # token_count steps (older rollouts), summed
    total: Counts = (0, 0, 0, 0, 0)  # the thread's running total, as the rollout last said it
    _last_total: int = 0


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class SpendCounter:
    """Fed the agent's own lines one at a time (its stdout, its transcript, its rollout)."""

    def __init__(self, fmt: str, default_model: str | None = None) -> None:
        self.fmt = fmt
        self.model = default_model
        self.sessions: dict[str, ClaudeSession] = {}
        self._session = ""  # the last session named: that of lines that name none
        self.threads: list[str] = []
        self.rollouts: dict[str, Rollout] = {}
        self._exec: list[int] = [0, 0, 0, 0, 0]  # summed turn.completed usage
        # the last message line counted: the next content block of the same message repeats it
        self._last: tuple[str, bool, str, Any, Any] | None = None

    # ---- the agent's stdout -------------------------------------------------------------

    def feed(self, data: Any) -> None:
        self.feeder()(data)

    def feeder(self) -> Callable[[Any], None]:
        """`feed` for this counter's format, chosen once (a first pass calls it on every line)."""
        if self.fmt == "claude-transcript":
            return self._transcript_line
        if self.fmt.startswith("claude"):
            return self._claude_line
        if self.fmt == "codex-json":
            return self._codex
        return _ignore

    def _transcript_line(self, data: Any) -> None:
        if isinstance(data, dict):
            self.feed_transcript(str(data.get("sessionId") or ""), data)

    def _claude_line(self, data: Any) -> None:
        """One line of Claude's stdout: an assistant line (nearly every line that counts) first."""
        if not isinstance(data, dict):
            return
        sid = data.get("session_id")
        if isinstance(sid, str):
            self._session = sid
        else:
            sid = self._session
        kind = data.get("type")
        if kind == "assistant":
            self._message(sid, data.get("message"))
        elif kind != "user":
            self._claude(kind, sid, data)

    def _claude(self, kind: Any, sid: str, data: dict[str, Any]) -> None:
        if kind == "system" and data.get("subtype") in ("init", None):
            s = self.sessions.setdefault(sid, ClaudeSession())
            s.cwd = data["cwd"] if isinstance(data.get("cwd"), str) else s.cwd
            memory = data.get("memory_paths")
            auto = memory.get("auto") if isinstance(memory, dict) else None
            if isinstance(auto, str) and auto.rstrip("/").endswith("/memory"):
                s.project_dir = auto.rstrip("/").removesuffix("/memory")
            if isinstance(data.get("model"), str):
                self.model = data["model"]
        elif kind == "result":
            self.sessions.setdefault(sid, ClaudeSession()).result = self._result(data)

    def _result(self, data: dict[str, Any]) -> Spend:
        """The session's totals as the CLI counted them (cumulative: the latest result line wins)."""
        out = Spend(provider="anthropic")
        total = _num(data.get("total_cost_usd"))
        raw_usage, raw_models = data.get("usage"), data.get("modelUsage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        per_model: dict[str, Any] = raw_models if isinstance(raw_models, dict) else {}
        attributed = 0.0
        for model, u in per_model.items():
            if not isinstance(u, dict):
                continue
            cw = _int(u, "cacheCreationInputTokens")
            # the 1-hour share of the cache writes is given for the whole session only
            one_hour = (
                min(_int(usage.get("cache_creation"), "ephemeral_1h_input_tokens"), cw) if len(per_model) == 1 else 0
            )
            out.add(
                model, (_int(u, "inputTokens"), _int(u, "outputTokens"), _int(u, "cacheReadInputTokens"), cw, one_hour)
            )
            usd = _num(u.get("costUSD"))
            if usd is not None:
                out.reported[model] = usd
                attributed += usd
        if not out.rows and any(anthropic_counts(usage)):
            model = self.model or "unknown"
            out.add(model, anthropic_counts(usage))
            if total is not None and not out.reported:
                out.reported[model], attributed = total, total
        if total is not None and (not out.reported or abs(total - attributed) > 1e-9):
            out.unattributed_usd = total - attributed
        return out

    def _codex(self, data: Any) -> None:
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "thread.started" and isinstance(data.get("thread_id"), str):
            if data["thread_id"] not in self.threads:
                self.threads.append(data["thread_id"])
        elif kind == "turn.completed" and isinstance(data.get("usage"), dict):
            counts, _ = openai_counts(data["usage"])
            for i, n in enumerate(counts):
                self._exec[i] += n
        elif kind in ("session_meta", "turn_context", "event_msg", "token_usage_record"):
            self.feed_rollout("", data)  # a rollout recorded as the log itself

    # ---- the agent's own files (read by agent_records.py) --------------------------------

    def feed_transcript(self, session_id: str, data: Any) -> None:
        """One line of a Claude Code session transcript (or of one of its subagents')."""
        if isinstance(data, dict) and data.get("type") == "assistant":
            self._message(session_id, data.get("message"), from_transcript=True)

    def _message(self, sid: str, msg: Any, *, from_transcript: bool = False) -> None:
        if type(msg) is not dict:
            return
        usage, mid, model = msg.get("usage"), msg.get("id"), msg.get("model")
        if type(usage) is not dict:
            return
        if type(mid) is str:
            line = (sid, from_transcript, mid, model, usage)
            if line == self._last:
                return  # another block of the message just counted, with the same figures: nothing changes
            self._last = line
        else:
            mid = None
        if type(model) is not str:
            model = self.model or "unknown"
        elif model == "<synthetic>":
            return  # the CLI's own stand-in for a failed request: nothing was billed
        counts = anthropic_counts(usage)
        key = mid
        session = self.sessions.get(sid)
        if session is None:
            session = self.sessions[sid] = ClaudeSession()
        if from_transcript:
            session.transcript.put(key, model, counts)
            if key is not None:
                session.tail.confirm(key)
            return
        session.stream.put(key, model, counts)
        if key is not None and not session.transcript.seen(key):
            session.tail.put(key, model, counts)

    def feed_rollout(self, thread_id: str, data: Any) -> None:
        """One line of a Codex rollout file."""
        if not isinstance(data, dict) or not isinstance(data.get("payload"), dict):
            return
        kind, p = data.get("type"), data["payload"]
        r = self.rollouts.setdefault(thread_id, Rollout())
        if kind == "turn_context" and isinstance(p.get("model"), str):
            r.model = p["model"]
        elif kind == "token_usage_record" and isinstance(p.get("usage"), dict):
            counts, prompt = openai_counts(p["usage"])
            rid = p.get("response_id")
            r.responses.put(
                rid if isinstance(rid, str) else None, (r.model or self.model or "unknown", counts, tier_of(prompt))
            )
            self._rollout_total(r, p.get("thread_token_usage"))
        elif kind == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            info = p["info"]
            before = r._last_total
            self._rollout_total(r, info.get("total_token_usage"))
            last = info.get("last_token_usage")
            if r._last_total > before and isinstance(last, dict):
                counts, prompt = openai_counts(last)
                r.deltas.add(r.model or self.model or "unknown", counts, tier_of(prompt))

    @staticmethod
    def _rollout_total(r: Rollout, usage: Any) -> None:
        if isinstance(usage, dict):
            counts, _ = openai_counts(usage)
            if sum(counts) > r._last_total:
                r.total, r._last_total = counts, sum(counts)

    # ---- the totals ---------------------------------------------------------------------

    @property
    def spend(self) -> Spend:
        if self.fmt.startswith("claude"):
            return self._claude_spend()
        if self.fmt == "codex-json":
            return self._codex_spend()
        return Spend()

    def _claude_spend(self) -> Spend:
        out = Spend(provider="anthropic")
        for s in self.sessions.values():
            if s.result is not None and (s.result.rows or not s.has_messages):
                out.merge(s.result)
                continue
            for model, tier, counts in _message_rows(s):
                out.add(model, counts, tier)
                if s.result is not None:
                    out.reported.setdefault(model, 0.0)  # a result line with a bill but no usage: its bill
            if s.result is not None:
                out.merge(s.result)
        return out

    def _codex_spend(self) -> Spend:
        rolled = Spend(provider="openai")
        for r in self.rollouts.values():
            one = Spend()
            if r.responses.n:
                for (model, tier), row in r.responses.totals().items():
                    one.add(model, row, tier)
            else:
                one.merge(r.deltas)
            counted = (one.input_tokens, one.output_tokens, one.cache_read_tokens, one.cache_write_tokens, 0)
            # what the running total has that no single response said (a request it did not record)
            missing = [t - c for t, c in zip(r.total, counted, strict=True)]
            if min(missing) >= 0:
                one.add(r.model or self.model or "unknown", missing)
            rolled.merge(one)
        if rolled.tokens >= sum(self._exec[:4]) and rolled.rows:
            return rolled
        out = Spend(provider="openai")
        out.add(self.codex_model() or "unknown", self._exec)
        return out

    def codex_model(self) -> str | None:
        """The model Codex says it used (its rollout), else the profile's."""
        named = [r.model for r in self.rollouts.values() if r.model]
        return named[-1] if named else self.model


def _ignore(data: Any) -> None:
    """A format whose stdout carries no usage."""


def _message_rows(s: ClaudeSession) -> list[tuple[str, int, list[int]]]:
    """(model, tier, counts) of a session's messages: the transcript's, and the stream's it has not reached;
    the stream's alone when no transcript was read."""
    if not s.transcript.n:
        return [(model, tier, row) for (model, tier), row in s.stream.rows.items()]
    out = [(model, tier, row) for (model, tier), row in s.transcript.totals().items()]
    for key, entry in s.tail.entries.items():
        if not s.transcript.seen(key):
            model, tier = tier_key(entry)
            out.append((model, tier, list(entry[1:])))
    return out
