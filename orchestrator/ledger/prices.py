"""Dollars for a run's Spend: config.yaml's `prices:` first, then the agent's own figure, then genai-prices.

For each model a run used, the first of these that knows it sets its price:

1. an override in config.yaml (`prices: {model: {input, output, cache_read, cache_write}}`,
   USD per million tokens), by the exact name, the name without a `[...]` suffix
   (Claude Code writes `claude-opus-4-8[1m]`) or the name a dated snapshot belongs to;
2. the dollars the agent itself reported for it (Claude Code's `costUSD`);
3. genai-prices' bundled database (pydantic/genai-prices, a regularly updated
   package), whose prices may step up with a request's prompt size: each usage tier
   of the Spend is priced at the rates for its prompt size.

A model none of them knows makes the run's cost unknown (None, "unpriced"),
never $0. genai-prices costs ~0.3 s to import (pydantic and httpx2 come with it), so
it is imported here, and only when a model is not priced otherwise; a `memo`
(kept with a run's cached state) and the state folder's price cache (rates_cache.py,
one file for every run, for the day) spare a later process the import.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from spiral.spend import Spend

Overrides = dict[str, tuple[float, float, float, float]]
_SUFFIX = re.compile(r"\[[^\]]*\]$")  # claude-opus-4-8[1m]: the 1M-context variant, priced as the model
_DATED = re.compile(r"^(?P<name>.+?)(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


@dataclass(frozen=True)
class Rates:
    """USD per million tokens; `tiers` are the rates from a prompt size up (each start, its rates)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float
    tiers: tuple[tuple[int, Rates], ...] = ()

    def at(self, tier: int) -> Rates:
        """The rates of a request whose prompt is above `tier` (a spend.PROMPT_TIERS start, or 0)."""
        rates = self
        for start, r in self.tiers:
            if start <= tier:
                rates = r
        return rates

    def dollars(self, counts: list[int], tier: int = 0) -> float:
        r = self.at(tier)
        i, o, cr, cw, cw1h = counts
        return (
            i * r.input + o * r.output + cr * r.cache_read + (cw - cw1h) * r.cache_write + cw1h * r.cache_write_1h
        ) / 1e6


def bare_name(model: str) -> str:
    return _SUFFIX.sub("", model)


def override_for(model: str, overrides: Overrides) -> Rates | None:
    """The config.yaml price of a model: its name, its name without a [...] suffix, its snapshot's name."""
    for name in (model, bare_name(model)):
        if name in overrides:
            i, o, cr, cw = overrides[name]
            return Rates(i, o, cr, cw, cw)
        m = _DATED.match(name)
        if m and m.group("name") in overrides:
            i, o, cr, cw = overrides[m.group("name")]
            return Rates(i, o, cr, cw, cw)
    return None


def database_rates(model: str, provider: str | None = None) -> Rates | None:
    """genai-prices' rates for a model (None: it does not know the model, or is not installed); its
    answers are kept in the state folder for the day (ledger/rates_cache.py), sparing the import."""
    from orchestrator.ledger.rates_cache import looked_up

    key = f"{provider or ''}:{bare_name(model)}"
    return looked_up(key, lambda: _database_rates(model, provider), _encode, _decode)


def _encode(rates: Rates | None) -> list[Any] | None:
    if rates is None:
        return None
    return [rates.input, rates.output, rates.cache_read, rates.cache_write, rates.cache_write_1h] + [
        [start, _encode(r)] for start, r in rates.tiers
    ]


def _decode(raw: Any) -> Rates | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) < 5:
        raise ValueError("not rates")
    i, o, cr, cw, cw1h = (float(x) for x in raw[:5])
    tiers = []
    for start, r in raw[5:]:
        rates = _decode(r)
        if rates is None:
            raise ValueError("a tier without rates")
        tiers.append((int(start), rates))
    return Rates(i, o, cr, cw, cw1h, tuple(tiers))


def _database_rates(model: str, provider: str | None) -> Rates | None:
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:
        return None
    snapshot = get_snapshot()
    for pid in dict.fromkeys([provider, None]):
        try:
            _, info = snapshot.find_provider_model(bare_name(model), None, pid, None)
            return _rates(info.get_prices(datetime.now(UTC)))
        except LookupError:
            continue
        except Exception:  # a newer genai-prices we do not understand: unpriced, never a crash
            # (tests/ledger/test_ledger_prices.py pins what it must know)
            return None
    return None


def _rates(price: Any) -> Rates | None:
    """Rates from a genai-prices ModelPrice (a missing cache price is the input price, as OpenAI bills)."""

    def at(value: Any, start: int) -> float | None:
        if value is None:
            return None
        if hasattr(value, "tiers"):  # TieredPrices: the highest tier whose start the prompt is above
            chosen = value.base
            for t in value.tiers:
                if start >= t.start:
                    chosen = t.price
            return float(chosen)
        return float(value)

    def rates_at(start: int) -> Rates | None:
        i, o = at(price.input_mtok, start), at(price.output_mtok, start)
        if i is None or o is None:
            return None
        cr = at(getattr(price, "cache_read_mtok", None), start)
        cw = at(getattr(price, "cache_write_mtok", None), start)
        cw1h = at(getattr(price, "cache_write_1h_mtok", None), start)
        cw = i if cw is None else cw
        return Rates(i, o, i if cr is None else cr, cw, cw if cw1h is None else cw1h)

    base = rates_at(0)
    if base is None:
        return None
    starts = sorted(
        {t.start for key, v in vars(price).items() if key.endswith("_mtok") and hasattr(v, "tiers") for t in v.tiers}
    )
    tiers = tuple((s, r) for s in starts if (r := rates_at(s)) is not None)
    return Rates(base.input, base.output, base.cache_read, base.cache_write, base.cache_write_1h, tiers)


def cost(
    spend: Spend, overrides: Overrides, memo: dict[str, Rates | None] | None = None
) -> tuple[float | None, list[str]]:
    """(dollars, or None when some usage is unpriced or nothing was reported at all; the unpriced models)."""
    if not spend.rows and not spend.reported and spend.unattributed_usd is None:
        return None, []  # no usage anywhere: unknown, not free
    memo = {} if memo is None else memo
    total = spend.unattributed_usd or 0.0
    reported = spend.reported
    # a bill the agent gave for the whole session (no per-model dollars: the models are marked 0.0) is
    # given up when config.yaml prices one of its models: the override's price stands in for it, never
    # beside it (that would count the same tokens twice)
    billed_whole = [m for m, usd in reported.items() if usd == 0.0] if spend.unattributed_usd else []
    if any(override_for(m, overrides) is not None for m in billed_whole):
        # which tokens that bill covered cannot be told apart from another session's of the same model:
        # every model is priced at its rates (config.yaml's, else the database's), none by a bill
        total, reported = 0.0, {}
    unpriced = []
    for model in spend.models():
        rows = [(tier, counts) for (m, tier), counts in spend.rows.items() if m == model]
        rates = override_for(model, overrides)
        if rates is None and model in reported:
            total += reported[model]
            continue
        if rates is None:
            key = f"{spend.provider or ''}:{bare_name(model)}"
            if key not in memo:
                memo[key] = database_rates(model, spend.provider)
            rates = memo[key]
        if rates is None:
            unpriced.append(model)
            continue
        total += sum(rates.dollars(counts, tier) for tier, counts in rows)
    return (None if unpriced else round(total, 8)), unpriced


def fingerprint(overrides: Overrides) -> str:
    """Changes when a price may have: the overrides, or the installed genai-prices' version."""
    try:
        from importlib.metadata import version

        db = version("genai-prices")
    except Exception:  # not installed
        db = "none"
    return hashlib.sha1(json.dumps([db, sorted(overrides.items())]).encode()).hexdigest()[:16]
