"""Spend (orchestrator/ledger/spend.py): tokens and dollars from real agent logs."""

from __future__ import annotations

import gzip
import json

import pytest

from orchestrator.ledger.spend import DEFAULT_PRICES, SpendCounter
from tests.helpers import REAL_TRACES


def test_spend_from_real_logs() -> None:
    if not REAL_TRACES.exists():
        pytest.skip("../shared/real-traces is absent")
    stream = SpendCounter("claude-stream-json")
    for line in (REAL_TRACES / "claude-stream-json" / "gleam_basic_query_v2.1.7.ndjson").read_text().splitlines():
        stream.feed(json.loads(line))
    cost, unpriced = stream.spend.cost(DEFAULT_PRICES)
    assert cost == pytest.approx(0.1354875) and unpriced == []
    codex = SpendCounter("codex-json")
    for line in (REAL_TRACES / "codex-exec-json" / "rustclaudecodes_multi_command.jsonl").read_text().splitlines():
        codex.feed(json.loads(line))
    sp = codex.spend
    assert (sp.input_tokens, sp.cache_read_tokens, sp.output_tokens) == (30669 - 28288, 28288, 205)
    assert codex.spend.cost(DEFAULT_PRICES) == (None, ["unknown"])  # exec --json names no model
    transcript = SpendCounter("claude-transcript")
    path = REAL_TRACES / "claude-transcript" / "spotter_4d5611e5_edit-churn.jsonl.gz"
    ids = set()
    outputs: dict[str, int] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            obj = json.loads(line)
            transcript.feed(obj)
            msg = obj.get("message") if obj.get("type") == "assistant" else None
            if isinstance(msg, dict) and "usage" in msg:
                ids.add(msg["id"])
                outputs[msg["id"]] = msg["usage"].get("output_tokens", 0)  # the latest figure counts
    assert transcript.spend.output_tokens == sum(outputs.values())
    assert transcript.spend.cost(DEFAULT_PRICES)[0] is None  # claude-opus-4-6 is not in the table: unpriced
