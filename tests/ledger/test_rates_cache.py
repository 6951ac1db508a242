"""genai-prices' answers kept in the state folder (orchestrator/ledger/rates_cache.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from orchestrator.ledger import prices

ASK = (
    "import sys, json; from orchestrator.ledger import prices; "
    "r = prices.database_rates('claude-sonnet-4-5-20250929', 'anthropic'); "
    "print(json.dumps([r.input, r.output, 'genai_prices' in sys.modules]))"
)


def _ask() -> list[object]:
    p = subprocess.run([sys.executable, "-c", ASK], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(p.stdout)


def test_a_later_process_is_answered_from_the_state_folder_without_the_import(home: Path) -> None:
    first = _ask()
    assert first[2] is True  # the database was asked
    cache = home / "cache" / "prices.json"
    assert cache.exists()
    second = _ask()
    assert second[:2] == first[:2]
    assert second[2] is False  # answered from the file: genai-prices never imported
    direct = prices._database_rates("claude-sonnet-4-5-20250929", "anthropic")
    assert prices.database_rates("claude-sonnet-4-5-20250929", "anthropic") == direct  # tiers and all


def test_a_damaged_or_foreign_cache_is_a_miss(home: Path) -> None:
    cache = home / "cache" / "prices.json"
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    assert _ask()[2] is True
    data = json.loads(cache.read_text())
    data["stamp"] = "another copy|1999-01-01"
    key = next(iter(data["rates"]))
    data["rates"][key] = [0, 0, 0, 0, 0]  # a stale price under another stamp is never used
    cache.write_text(json.dumps(data))
    got = _ask()
    assert got[2] is True and got[0] > 0
    data = json.loads(cache.read_text())
    data["rates"][key] = ["x"]  # a damaged entry under the right stamp: asked again
    cache.write_text(json.dumps(data))
    got = _ask()
    assert got[2] is True and got[0] > 0


def test_a_model_the_database_does_not_know_is_kept_unknown(home: Path) -> None:
    assert prices.database_rates("no-such-model-xyz", None) is None
    assert prices.database_rates("no-such-model-xyz", None) is None
    data = json.loads((home / "cache" / "prices.json").read_text())
    assert data["rates"][":no-such-model-xyz"] is None
