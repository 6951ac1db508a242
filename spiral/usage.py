"""A run's tokens and dollars (`Spend`), and the counts of one usage object as each provider writes it (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

# input (uncached), output, cache read, cache write (all), of which written for 1 hour
Counts = tuple[int, int, int, int, int]


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class Spend:
    rows: dict[tuple[str, int], list[int]] = field(default_factory=dict)  # (model, tier) -> Counts
    reported: dict[str, float] = field(default_factory=dict)  # model -> the agent's own dollars for it
    unattributed_usd: float | None = None  # the agent's own dollars that no model is named for
    provider: str | None = None  # "anthropic" / "openai": where a model name is looked up

    def add(self, model: str, counts: Counts | list[int], tier: int = 0) -> None:
        if not any(counts):
            return
        row = self.rows.setdefault((model, tier), [0, 0, 0, 0, 0])
        for i, n in enumerate(counts):
            row[i] += n

    def merge(self, other: Spend) -> None:
        for (model, tier), counts in other.rows.items():
            self.add(model, counts, tier)
        for model, usd in other.reported.items():
            self.reported[model] = self.reported.get(model, 0.0) + usd
        if other.unattributed_usd is not None:
            self.unattributed_usd = (self.unattributed_usd or 0.0) + other.unattributed_usd

    def _sum(self, i: int) -> int:
        return sum(row[i] for row in self.rows.values())

    @property
    def input_tokens(self) -> int:
        return self._sum(0)

    @property
    def output_tokens(self) -> int:
        return self._sum(1)

    @property
    def cache_read_tokens(self) -> int:
        return self._sum(2)

    @property
    def cache_write_tokens(self) -> int:
        return self._sum(3)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def models(self) -> list[str]:
        return list(dict.fromkeys([m for m, _ in self.rows] + list(self.reported)))


def _int(d: Any, key: str) -> int:
    return _pos(d.get(key)) if type(d) is dict else 0


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pos(v: Any) -> int:
    return v if type(v) is int and v > 0 else 0


def anthropic_counts(u: dict[str, Any]) -> Counts:
    """Counts of an Anthropic `usage` object (snake_case, as the API and the transcript write it).

    _pos written out (a first pass counts every assistant line of a long log: 87k on the bench's)."""
    get = u.get
    i, o, cr, cw = (
        get("input_tokens"),
        get("output_tokens"),
        get("cache_read_input_tokens"),
        get("cache_creation_input_tokens"),
    )
    cw = cw if type(cw) is int and cw > 0 else 0
    split = get("cache_creation")
    one_hour = min(_int(split, "ephemeral_1h_input_tokens"), cw) if split is not None else 0
    return (
        i if type(i) is int and i > 0 else 0,
        o if type(o) is int and o > 0 else 0,
        cr if type(cr) is int and cr > 0 else 0,
        cw,
        one_hour,
    )


def openai_counts(u: dict[str, Any]) -> tuple[Counts, int]:
    """(counts, prompt size) of a Codex usage object, whose input_tokens include the cached ones."""
    prompt = _int(u, "input_tokens")
    cached = min(_int(u, "cached_input_tokens"), prompt)
    written = min(_int(u, "cache_write_input_tokens"), prompt - cached)
    return (prompt - cached - written, _int(u, "output_tokens"), cached, written, 0), prompt
