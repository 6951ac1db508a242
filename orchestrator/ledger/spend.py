"""Tokens and dollars of a run, read from the agent's own log (pure).

Claude Code repeats a message's `usage` on every line of that message, so
usage is counted once per message id; the final `result` line's
`total_cost_usd`, when present, is the agent's own bill and wins. Codex
reports usage per turn (`turn.completed`). Dollars come from a price table
(per million tokens, overridable); a model missing from it is reported as
unpriced, never as $0.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

# USD per million tokens: input, output, cache read, cache write. Defaults at
# the time of writing; override them in config.yaml under `prices:`.
DEFAULT_PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4": (15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-1": (15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": (5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": (3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4-5": (3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": (1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": (0.8, 4.0, 0.08, 1.0),
    "gpt-5": (1.25, 10.0, 0.125, 0.0),
    "gpt-5-codex": (1.25, 10.0, 0.125, 0.0),
    "gpt-5-mini": (0.25, 2.0, 0.025, 0.0),
}
# a table name also prices its dated snapshots: claude-sonnet-4-5-20250929, gpt-5-2025-08-07
_DATED = re.compile(r"^(?P<name>.+?)(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def price_for(model: str | None, prices: dict[str, tuple[float, float, float, float]]) -> tuple[float, ...] | None:
    """The model's price: its exact name, or the name its dated snapshot belongs to.

    A model the table does not name is unpriced: a newer model must never
    silently take an older one's price.
    """
    if not model:
        return None
    if model in prices:
        return prices[model]
    m = _DATED.match(model)
    return prices.get(m.group("name")) if m else None


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
        """(dollars, or None when some usage is unpriced or the log reports none; the unpriced models)."""
        if self.reported_cost_usd is not None:
            return self.reported_cost_usd, []
        if not self.by_model:
            return None, []  # no usage in the log at all: unknown, not free
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
        # message id -> the usage counted for it so far (its lines repeat it, growing)
        self._seen: OrderedDict[str, tuple[str, int, int, int, int]] = OrderedDict()

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
            u = msg["usage"]
            model = msg["model"] if isinstance(msg.get("model"), str) else self.model
            now = (
                model,
                _int(u, "input_tokens"),
                _int(u, "output_tokens"),
                _int(u, "cache_read_input_tokens"),
                _int(u, "cache_creation_input_tokens"),
            )
            mid = msg.get("id")
            if isinstance(mid, str):
                # each content block of a message repeats its usage, and the output count
                # grows as the message streams: count the latest figures once
                before = self._seen.get(mid)
                if before == now:
                    return
                if before is not None:
                    self.spend._add(before[0], *(-x for x in before[1:]))
                self._seen[mid] = now
                self._seen.move_to_end(mid)
                if len(self._seen) > 4096:
                    self._seen.popitem(last=False)
            self.spend._add(*now)
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
                    self.spend._add(
                        self.model, _int(last, "input_tokens") - cached, _int(last, "output_tokens"), cached, 0
                    )
