"""Prices (orchestrator/ledger/prices.py): config.yaml overrides, the agent's own bill, genai-prices."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import config
from orchestrator.ledger import prices
from spiral.spend import PROMPT_TIERS, Spend
from tests.helpers import ROOT


def _spend(model: str, counts: list[int], tier: int = 0, provider: str | None = "anthropic") -> Spend:
    s = Spend(provider=provider)
    s.add(model, counts, tier)
    return s


def test_genai_prices_knows_the_default_models() -> None:
    opus = prices.database_rates("claude-opus-4-8[1m]", "anthropic")  # Claude Code's default, as modelUsage names it
    assert opus is not None and (opus.input, opus.output, opus.cache_read, opus.cache_write) == (5, 25, 0.5, 6.25)
    assert opus.cache_write_1h == 10 and opus.tiers == ()  # flat across its 1M context
    gpt = prices.database_rates("gpt-5.5", "openai")  # Codex's
    assert gpt is not None and (gpt.input, gpt.output, gpt.cache_read) == (5, 30, 0.5)
    assert gpt.cache_write == gpt.input  # no cache-write price: billed as input
    assert [(start, r.input, r.output) for start, r in gpt.tiers] == [(272_000, 10, 45)]  # prompts over 272k
    assert prices.database_rates("claude-opus-4-8", None) == prices.database_rates("claude-opus-4-8", "anthropic")


def test_every_price_step_of_the_database_is_a_prompt_tier() -> None:
    """A prompt size where genai-prices steps a price up must be one the counter keeps usage apart at."""
    from genai_prices.data_snapshot import get_snapshot

    starts = set()
    for provider in get_snapshot().providers:
        for model in provider.models:
            for price in [model.prices] if not isinstance(model.prices, list) else [c.prices for c in model.prices]:
                for value in vars(price).values():
                    starts.update(t.start for t in getattr(value, "tiers", ()))
    assert starts <= set(PROMPT_TIERS), sorted(starts - set(PROMPT_TIERS))


def test_tiers_are_per_request_not_per_run() -> None:
    # two requests of 150k prompt tokens: both at gpt-5.5's base rate, though the run's total is over 272k
    two = _spend("gpt-5.5", [300_000, 0, 0, 0, 0], tier=128_000, provider="openai")
    assert prices.cost(two, {}) == (pytest.approx(300_000 * 5 / 1e6), [])
    big = _spend("gpt-5.5", [300_000, 1000, 0, 0, 0], tier=272_000, provider="openai")
    assert prices.cost(big, {}) == (pytest.approx((300_000 * 10 + 1000 * 45) / 1e6), [])


def test_override_wins_over_the_database_and_the_agents_own_bill() -> None:
    s = _spend("claude-opus-4-8[1m]", [1_000_000, 1_000_000, 1_000_000, 1_000_000, 0])
    assert prices.cost(s, {}) == (pytest.approx(5 + 25 + 0.5 + 6.25), [])
    mine = {"claude-opus-4-8": (1.0, 2.0, 0.1, 1.5)}  # by the name without Claude Code's [1m]
    assert prices.cost(s, mine) == (pytest.approx(1 + 2 + 0.1 + 1.5), [])
    s.reported["claude-opus-4-8[1m]"] = 99.0  # the CLI's own costUSD: wins over the database...
    assert prices.cost(s, {}) == (99.0, [])
    assert prices.cost(s, mine) == (pytest.approx(4.6), [])  # ...but not over config.yaml
    dated = _spend("claude-sonnet-4-5-20250929", [1_000_000, 0, 0, 0, 0])
    assert prices.cost(dated, {"claude-sonnet-4-5": (7.0, 0, 0, 0)}) == (7.0, [])  # a snapshot takes its name's


def test_a_whole_session_bill_gives_way_to_an_override_and_is_never_added_to_it() -> None:
    # a result line with total_cost_usd and no usage: the messages' tokens are marked 0.0, the bill apart
    s = _spend("claude-sonnet-4-5", [468, 1560, 351_000, 0, 0])
    s.reported["claude-sonnet-4-5"], s.unattributed_usd = 0.0, 0.39
    assert prices.cost(s, {}) == (0.39, [])  # the agent's own figure
    mine = {"claude-sonnet-4-5": (3.0, 15.0, 0.3, 3.75)}
    assert prices.cost(s, mine) == (pytest.approx((468 * 3 + 1560 * 15 + 351_000 * 0.3) / 1e6), [])
    # two sessions: one billed sonnet by itself ($1), one billed sonnet and haiku as a whole ($0.50);
    # an override of haiku cannot split the whole bill: every model is priced at its rates, none dropped
    two = _spend("claude-sonnet-4-5", [1_000_000, 0, 0, 0, 0])
    two.add("claude-haiku-4-5", [1_000_000, 0, 0, 0, 0])
    two.reported.update({"claude-sonnet-4-5": 1.0, "claude-haiku-4-5": 0.0})
    two.unattributed_usd = 0.5
    haiku = {"claude-haiku-4-5": (0.8, 4.0, 0.08, 1.0)}
    sonnet_rates = prices.database_rates("claude-sonnet-4-5", "anthropic")
    assert sonnet_rates is not None
    assert prices.cost(two, haiku) == (pytest.approx(sonnet_rates.input + 0.8), [])


def test_an_override_prices_a_model_the_database_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("prices:\n  scripted-model: {input: 2, output: 8, cache_read: 0.2}\n")
    cfg = config.load(path)
    assert cfg.prices == {"scripted-model": (2.0, 8.0, 0.2, 2.0)}  # only the overrides (cache_write: the input price)
    s = _spend("scripted-model", [1000, 100, 500, 0, 0], provider="openai")
    assert prices.cost(s, {}) == (None, ["scripted-model"])
    assert prices.cost(s, cfg.prices) == (pytest.approx((1000 * 2 + 100 * 8 + 500 * 0.2) / 1e6), [])
    assert config.load(tmp_path / "absent.yaml").prices == {}


def test_unknown_model_is_unpriced_never_free() -> None:
    s = _spend("claude-mystery-9", [500, 50, 0, 0, 0])
    assert prices.cost(s, {}) == (None, ["claude-mystery-9"])
    s.add("claude-opus-4-8", [1000, 0, 0, 0, 0])  # a known model beside it: the run's cost is still unknown
    assert prices.cost(s, {}) == (None, ["claude-mystery-9"])
    assert prices.cost(Spend(), {}) == (None, [])  # no usage at all: unknown, not $0


def test_memo_spares_a_second_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    memo: dict[str, prices.Rates | None] = {}
    s = _spend("claude-opus-4-8", [1000, 0, 0, 0, 0])
    first = prices.cost(s, {}, memo)
    assert memo.keys() == {"anthropic:claude-opus-4-8"}

    def boom(*_: object) -> None:
        raise AssertionError("looked up again")

    monkeypatch.setattr(prices, "database_rates", boom)
    assert prices.cost(s, {}, memo) == first
    unknown = _spend("nope-1", [1, 0, 0, 0, 0])
    unknown_memo: dict[str, prices.Rates | None] = {"anthropic:nope-1": None}
    assert prices.cost(unknown, {}, unknown_memo) == (None, ["nope-1"])


def test_fingerprint_follows_the_overrides() -> None:
    assert prices.fingerprint({}) == prices.fingerprint({})
    assert prices.fingerprint({}) != prices.fingerprint({"m": (1.0, 2.0, 0.0, 0.0)})


def test_genai_prices_is_imported_only_when_a_price_is_looked_up() -> None:
    """It costs ~100 ms to import: status, watch and a run the agent itself billed do without it."""
    code = (
        "import sys\n"
        "import orchestrator.cli, orchestrator.runs.monitor, orchestrator.ledger.rows, orchestrator.ledger.store\n"
        "from orchestrator.ledger import prices\n"
        "from spiral.spend import Spend\n"
        "s = Spend(provider='anthropic'); s.add('claude-opus-4-8[1m]', [10, 1, 0, 0, 0]); s.reported['claude-opus-4-8[1m]'] = 0.1\n"
        "assert prices.cost(s, {}) == (0.1, [])\n"
        "assert 'genai_prices' not in sys.modules, 'imported too early'\n"
        "s.add('claude-haiku-4-5', [10, 1, 0, 0, 0]); prices.cost(s, {})\n"
        "assert 'genai_prices' in sys.modules\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
