"""Tokens and dollars of a run, read from the agent's own log (pure).

Claude Code repeats a message's `usage` on every line of that message, so
usage is counted once per message id; the final `result` line's
`total_cost_usd`, when present, is the agent's own bill and wins. Codex
reports usage per turn (`turn.completed`). Dollars come from a price table
(per million tokens, overridable); a model missing from it is reported as
unpriced, never as $0.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

# USD per million tokens: input, output, cache read, cache write. Defaults at
# the time of writing; override them in config.yaml under `prices:`.
DEFAULT_PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4": (15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": (5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": (3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": (1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": (0.8, 4.0, 0.08, 1.0),
    "gpt-5": (1.25, 10.0, 0.125, 0.0),
    "gpt-5-codex": (1.25, 10.0, 0.125, 0.0),
    "gpt-5-mini": (0.25, 2.0, 0.025, 0.0),
}


def price_for(model: str | None, prices: dict[str, tuple[float, float, float, float]]) -> tuple[float, ...] | None:
    """The longest table key that prefixes the model name (dated variants share a price)."""
    if not model:
        return None
    best = None
    for key in prices:
        if model.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return prices[best] if best else None


@dataclass
class Spend:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reported_cost_usd: float | None = None  # the agent's own total, when it prints one
    by_model: dict[str, list[int]] = field(default_factory=dict)  # model -> [in, out, cache_read, cache_write]

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def cost(self, prices: dict[str, tuple[float, float, float, float]]) -> tuple[float | None, list[str]]:
        """(dollars or None when some usage is unpriced, the unpriced models)."""
        if self.reported_cost_usd is not None:
            return self.reported_cost_usd, []
        total = 0.0
        unpriced = []
        for model, (i, o, cr, cw) in self.by_model.items():
            p = price_for(model, prices)
            if p is None:
                if i or o or cr or cw:
                    unpriced.append(model)
                continue
            total += (i * p[0] + o * p[1] + cr * p[2] + cw * p[3]) / 1e6
        return (None if unpriced else round(total, 8)), unpriced

    def _add(self, model: str, i: int, o: int, cr: int, cw: int) -> None:
        self.input_tokens += i
        self.output_tokens += o
        self.cache_read_tokens += cr
        self.cache_write_tokens += cw
        row = self.by_model.setdefault(model, [0, 0, 0, 0])
        row[0] += i
        row[1] += o
        row[2] += cr
        row[3] += cw


def _int(d: dict[str, Any], key: str) -> int:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


class SpendCounter:
    """Fed native log payloads one at a time; keeps a running Spend."""

    def __init__(self, fmt: str, default_model: str | None = None) -> None:
        self.fmt = fmt
        self.spend = Spend()
        self.model = default_model or "unknown"
        self._seen: OrderedDict[str, None] = OrderedDict()

    def feed(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if self.fmt.startswith("claude"):
            self._claude(kind, data)
        elif self.fmt == "codex-json":
            self._codex(kind, data)

    def _claude(self, kind: Any, data: dict[str, Any]) -> None:
        if kind == "assistant":
            msg = data.get("message")
            if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
                return
            mid = msg.get("id")
            if isinstance(mid, str):
                if mid in self._seen:
                    return  # the same message's usage, repeated on its next content block
                self._seen[mid] = None
                if len(self._seen) > 4096:
                    self._seen.popitem(last=False)
            u = msg["usage"]
            model = msg.get("model") if isinstance(msg.get("model"), str) else self.model
            self.spend._add(model, _int(u, "input_tokens"), _int(u, "output_tokens"),
                            _int(u, "cache_read_input_tokens"), _int(u, "cache_creation_input_tokens"))
        elif kind == "result":
            cost = data.get("total_cost_usd")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                self.spend.reported_cost_usd = (self.spend.reported_cost_usd or 0.0) + float(cost)
        elif kind == "system" and isinstance(data.get("model"), str):
            self.model = data["model"]

    def _codex(self, kind: Any, data: dict[str, Any]) -> None:
        if kind == "turn.completed" and isinstance(data.get("usage"), dict):
            u = data["usage"]
            cached = _int(u, "cached_input_tokens")
            self.spend._add(self.model, _int(u, "input_tokens") - cached, _int(u, "output_tokens"), cached, 0)
        elif kind == "turn_context" and isinstance(data.get("payload"), dict):
            model = data["payload"].get("model")
            if isinstance(model, str):
                self.model = model
        elif kind == "event_msg" and isinstance(data.get("payload"), dict):
            p = data["payload"]
            if p.get("type") == "token_count" and isinstance(p.get("info"), dict):
                last = p["info"].get("last_token_usage")
                if isinstance(last, dict):
                    cached = _int(last, "cached_input_tokens")
                    self.spend._add(self.model, _int(last, "input_tokens") - cached,
                                    _int(last, "output_tokens"), cached, 0)
