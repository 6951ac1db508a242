"""Spend (spiral/spend.py): tokens from the agents' own lines, as the real CLIs write them.

The literals are excerpts (trimmed of fields the counter does not read) of lines Claude
Code 2.1.197 and Codex 0.171.0 wrote against tests/scripted_model.py
(docs/real-agents-findings.md; samples of /tmp/realcli-samples/).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from orchestrator.ledger import prices
from spiral.spend import SpendCounter, tier_of
from tests.helpers import REAL_TRACES

SID = "104e8091-c1c2-4688-89c9-f42ea7822294"
CWD = "/tmp/realcli-claude-healthy-goolsw98/repo"


def _assistant(mid: str, usage: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [
                {"type": "tool_use", "id": "toolu_scripted_0000", "name": "Bash", "input": {"command": "true"}}
            ],
            "stop_reason": None,
            "usage": usage,
        },
        "parent_tool_use_id": None,
        "session_id": SID,
        **extra,
    }


# claude-stream-json (claude-usage scenario): the server's message_start said 3 and 5 output tokens,
# its final count 50 and 70; the stream only ever shows the first figures
INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": CWD,
    "session_id": SID,
    "model": "claude-opus-4-8[1m]",
    "permissionMode": "bypassPermissions",
    "claude_code_version": "2.1.197",
    "memory_paths": {
        "auto": f"/tmp/realcli-claude-healthy-goolsw98/claude-config/projects/{CWD.replace('/', '-')}/memory/"
    },
}
STREAM = [
    INIT,
    _assistant(
        "msg_535911eab53d4fe58c28afd6",
        {"input_tokens": 1000, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 200, "output_tokens": 3},
    ),
    {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "tool_use_id": "toolu_scripted_0000",
                    "type": "tool_result",
                    "content": "(Bash completed with no output)",
                }
            ],
        },
        "session_id": SID,
    },
    _assistant(
        "msg_448beae980dc40249f278f54",
        {"input_tokens": 2000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5},
    ),
]
RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "api_error_status": None,
    "num_turns": 2,
    "session_id": SID,
    "total_cost_usd": 0.019975,
    "usage": {
        "input_tokens": 3000,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 200,
        "output_tokens": 120,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
    },
    "modelUsage": {
        "claude-opus-4-8[1m]": {
            "inputTokens": 3000,
            "outputTokens": 120,
            "cacheReadInputTokens": 200,
            "cacheCreationInputTokens": 300,
            "webSearchRequests": 0,
            "costUSD": 0.019975,
            "contextWindow": 1000000,
            "maxOutputTokens": 64000,
        }
    },
}


def _transcript(mid: str, usage: dict[str, int], stop: str) -> dict[str, Any]:
    """A line of CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl: the message with its final usage."""
    full = usage | {
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "speed": "standard",
    }
    return {
        "parentUuid": "5efb2a83-a125-47f3-aaca-c34bdd653295",
        "isSidechain": False,
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [],
            "stop_reason": stop,
            "usage": full,
        },
        "type": "assistant",
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.1.197",
    }


TRANSCRIPT = [
    {
        "type": "queue-operation",
        "operation": "enqueue",
        "timestamp": "2026-12-01T10:04:37.154Z",
        "sessionId": SID,
        "content": "go",
    },
    {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": "go"},
        "sessionId": SID,
    },
    _transcript(
        "msg_535911eab53d4fe58c28afd6",
        {"input_tokens": 1000, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 200, "output_tokens": 50},
        "tool_use",
    ),
    _transcript(
        "msg_448beae980dc40249f278f54",
        {"input_tokens": 2000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 70},
        "end_turn",
    ),
    {"type": "last-prompt", "lastPrompt": "go", "leafUuid": "1d559a2a-52b7-4e48-aae3-d4eddc51d1a7", "sessionId": SID},
]


def _counts(c: SpendCounter) -> tuple[int, int, int, int]:
    sp = c.spend
    return sp.input_tokens, sp.output_tokens, sp.cache_read_tokens, sp.cache_write_tokens


def test_claude_result_line_is_exact() -> None:
    c = SpendCounter("claude-stream-json")
    for line in [*STREAM, RESULT]:
        c.feed(line)
    assert _counts(c) == (3000, 120, 200, 300)
    assert c.spend.models() == ["claude-opus-4-8[1m]"]
    assert prices.cost(c.spend, {}) == (0.019975, [])  # the CLI's own bill, no price looked up


def test_claude_stream_alone_undercounts_and_the_transcript_completes_it() -> None:
    c = SpendCounter("claude-stream-json")
    for line in STREAM:
        c.feed(line)
    assert _counts(c) == (3000, 8, 200, 300)  # message_start output figures
    assert c.sessions[SID].cwd == CWD  # what agent_records.py needs to find the transcript
    assert c.sessions[SID].project_dir == INIT["memory_paths"]["auto"].removesuffix("/memory/")
    for line in TRANSCRIPT:
        c.feed_transcript(SID, line)
    assert _counts(c) == (3000, 120, 200, 300)  # = the result line's
    # priced by genai-prices' claude-opus-4-8 (5 / 25 / 0.5 / 6.25 per million): the CLI's own figure
    cost, unpriced = prices.cost(c.spend, {})
    assert cost == pytest.approx(0.019975) and unpriced == []
    # the stream's lines arriving after the transcript's change nothing (largest figure per message)
    for line in STREAM:
        c.feed(line)
    assert _counts(c) == (3000, 120, 200, 300)
    c.feed(RESULT)
    assert _counts(c) == (3000, 120, 200, 300)


def test_claude_content_blocks_of_one_message_count_once() -> None:
    c = SpendCounter("claude-stream-json")
    u = {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
    for _ in range(3):  # text, tool_use, tool_use: three lines, one message
        c.feed(_assistant("msg_1", u))
    assert _counts(c) == (100, 3, 0, 0)


def test_claude_api_error_run_costs_what_the_cli_says() -> None:
    # claude-429: the CLI's synthetic message, then a result with is_error and total_cost_usd 0
    synthetic = {
        "type": "assistant",
        "message": {
            "id": "08d0ee9e-fee0-44c5-9bfa-9bdd71bc8327",
            "model": "<synthetic>",
            "role": "assistant",
            "stop_reason": "stop_sequence",
            "type": "message",
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
            "content": [{"type": "text", "text": "API Error: Request rejected (429) · scripted rate_limit_error"}],
        },
        "session_id": SID,
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 429,
        "session_id": SID,
        "total_cost_usd": 0,
        "usage": {
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0,
        },
        "modelUsage": {},
    }
    c = SpendCounter("claude-stream-json")
    for line in (INIT, synthetic):
        c.feed(line)
    assert c.spend.tokens == 0 and prices.cost(c.spend, {}) == (None, [])  # nothing known yet
    c.feed(result)
    assert c.spend.tokens == 0 and prices.cost(c.spend, {}) == (0.0, [])  # the CLI's bill: nothing


def test_claude_result_with_two_models_and_a_one_hour_cache() -> None:
    result = json.loads(json.dumps(RESULT))
    result["modelUsage"]["claude-haiku-4-5-20251001"] = {
        "inputTokens": 500,
        "outputTokens": 10,
        "cacheReadInputTokens": 0,
        "cacheCreationInputTokens": 0,
        "costUSD": 0.00055,
    }
    result["total_cost_usd"] = 0.020525
    c = SpendCounter("claude-stream-json")
    c.feed(result)
    assert c.spend.models() == ["claude-opus-4-8[1m]", "claude-haiku-4-5-20251001"]
    assert _counts(c) == (3500, 130, 200, 300)
    assert prices.cost(c.spend, {}) == (pytest.approx(0.020525), [])
    # one model, cache written for an hour: the 1h share is kept for pricing (at the 1h rate)
    one = json.loads(json.dumps(RESULT))
    one["usage"]["cache_creation"] = {"ephemeral_1h_input_tokens": 300, "ephemeral_5m_input_tokens": 0}
    c = SpendCounter("claude-stream-json")
    c.feed(one)
    assert c.spend.rows[("claude-opus-4-8[1m]", 0)] == [3000, 120, 200, 300, 300]


def test_a_result_line_with_a_bill_but_no_usage_keeps_the_messages_tokens() -> None:
    c = SpendCounter("claude-stream-json")
    c.feed(_assistant("m1", {"input_tokens": 10, "output_tokens": 10}))
    c.feed({"type": "result", "subtype": "success", "total_cost_usd": 0.4321})
    assert c.spend.tokens == 20 and prices.cost(c.spend, {}) == (0.4321, [])


# codex-json (codex-healthy): exec --json says nothing of usage until turn.completed
THREAD = "01a23106-7123-7ef1-9efd-da7606074297"
EXEC = [
    {"type": "thread.started", "thread_id": THREAD},
    {"type": "turn.started"},
    {
        "type": "item.started",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "/bin/bash -lc 'python3 hello.py'",
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "/bin/bash -lc 'python3 hello.py'",
            "aggregated_output": "hello from scripted\n",
            "exit_code": 0,
            "status": "completed",
        },
    },
    {"type": "item.completed", "item": {"id": "item_4", "type": "agent_message", "text": "All done."}},
]
TURN_COMPLETED = {
    "type": "turn.completed",
    "usage": {
        "input_tokens": 600,
        "cached_input_tokens": 0,
        "cache_write_input_tokens": 0,
        "output_tokens": 110,
        "reasoning_output_tokens": 0,
    },
}


def _usage(i: int, o: int, cached: int = 0) -> dict[str, int]:
    return {
        "input_tokens": i,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": 0,
        "output_tokens": o,
        "reasoning_output_tokens": 0,
        "total_tokens": i + o,
    }


def _record(rid: str, usage: dict[str, int], thread: dict[str, int]) -> dict[str, Any]:
    payload = {"thread_id": THREAD, "session_id": THREAD, "response_id": rid, "usage": usage}
    return {
        "timestamp": "2026-12-01T09:53:55.566Z",
        "type": "token_usage_record",
        "payload": payload | {"turn_token_usage": thread, "thread_token_usage": thread},
    }


def _token_count(total: dict[str, int], last: dict[str, int]) -> dict[str, Any]:
    info = {
        "total_token_usage": total,
        "last_token_usage": last,
        "last_usage_includes_reasoning": False,
        "model_context_window": 258400,
    }
    return {
        "timestamp": "2026-12-01T09:53:55.570Z",
        "type": "event_msg",
        "payload": {"type": "token_count", "info": info, "rate_limits": {"limit_id": "codex"}},
    }


# CODEX_HOME/sessions/2026/12/01/rollout-2026-12-01T09-53-55-<thread>.jsonl (first two of five responses)
ROLLOUT = [
    {
        "timestamp": "2026-12-01T09:53:55.525Z",
        "type": "session_meta",
        "payload": {
            "id": THREAD,
            "cwd": "/tmp/realcli-codex-healthy-qqg4oorb/repo",
            "originator": "codex_exec",
            "cli_version": "0.171.0",
            "model_provider": "scripted",
        },
    },
    {
        "timestamp": "2026-12-01T09:53:55.542Z",
        "type": "turn_context",
        "payload": {"cwd": "/tmp/realcli-codex-healthy-qqg4oorb/repo", "approval_policy": "never", "model": "gpt-5.5"},
    },
    {
        "timestamp": "2026-12-01T09:53:55.565Z",
        "type": "response_item",
        "payload": {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_scripted_0000",
            "name": "apply_patch",
            "input": "*** Begin Patch\n",
        },
    },
    _record("resp_b0dbf7176061453491ecaed2", _usage(100, 20), _usage(100, 20)),
    _token_count(_usage(100, 20), _usage(100, 20)),
    _record("resp_fa686ff6c4b24cc3b5ff9a27", _usage(110, 21), _usage(210, 41)),
    _token_count(_usage(210, 41), _usage(110, 21)),
    _token_count(_usage(210, 41), _usage(110, 21)),  # repeated (a rate-limit update): counts once
]


def test_codex_exec_counts_only_at_turn_completed() -> None:
    c = SpendCounter("codex-json", "gpt-5.5")
    for line in EXEC:
        c.feed(line)
    assert c.spend.tokens == 0 and c.threads == [THREAD]
    c.feed(TURN_COMPLETED)
    assert _counts(c) == (600, 110, 0, 0) and c.spend.models() == ["gpt-5.5"]  # the profile's model
    assert SpendCounter("codex-json").spend.models() == []
    bare = SpendCounter("codex-json")
    bare.feed(TURN_COMPLETED)
    assert bare.spend.models() == ["unknown"] and prices.cost(bare.spend, {}) == (None, ["unknown"])


def test_codex_rollout_counts_live_and_names_the_model() -> None:
    c = SpendCounter("codex-json", "some-profile-model")
    for line in EXEC:
        c.feed(line)
    for line in ROLLOUT:
        c.feed_rollout(THREAD, line)
    assert _counts(c) == (210, 41, 0, 0) and c.spend.models() == ["gpt-5.5"]
    assert c.codex_model() == "gpt-5.5"
    # the turn completes with more than the rollout has read so far: exec's figures win
    c.feed(TURN_COMPLETED)
    assert _counts(c) == (600, 110, 0, 0)


def test_codex_cached_input_is_a_part_of_input() -> None:
    c = SpendCounter("codex-json")
    c.feed({"type": "thread.started", "thread_id": THREAD})
    c.feed_rollout(THREAD, ROLLOUT[1])
    c.feed_rollout(THREAD, _record("r1", _usage(1000, 50, 200), _usage(1000, 50, 200)))
    assert _counts(c) == (800, 50, 200, 0) and c.spend.tokens == 1050
    # only the running total says it (a request without its own record): it still counts
    c.feed_rollout(THREAD, _token_count(_usage(3000, 120, 200), _usage(2000, 70)))
    assert _counts(c) == (2800, 120, 200, 0)


def test_prompt_size_tiers() -> None:
    assert [tier_of(n) for n in (0, 32_000, 32_001, 200_000, 200_001, 272_001, 10**7)] == [
        0,
        0,
        32_000,
        199_999,
        200_000,
        272_000,
        524_288,
    ]
    c = SpendCounter("codex-json")
    c.feed({"type": "thread.started", "thread_id": THREAD})
    c.feed_rollout(THREAD, ROLLOUT[1])
    c.feed_rollout(THREAD, _record("big", _usage(300_000, 10), _usage(300_000, 10)))
    c.feed_rollout(THREAD, _record("small", _usage(150_000, 10), _usage(450_000, 20)))
    assert set(c.spend.rows) == {("gpt-5.5", 272_000), ("gpt-5.5", 128_000)}


def test_spend_from_real_logs() -> None:
    if not REAL_TRACES.exists():
        pytest.skip("../shared/real-traces is absent")
    stream = SpendCounter("claude-stream-json")
    for line in (REAL_TRACES / "claude-stream-json" / "gleam_basic_query_v2.1.7.ndjson").read_text().splitlines():
        stream.feed(json.loads(line))
    assert prices.cost(stream.spend, {}) == (pytest.approx(0.1354875), [])
    codex = SpendCounter("codex-json")
    for line in (REAL_TRACES / "codex-exec-json" / "rustclaudecodes_multi_command.jsonl").read_text().splitlines():
        codex.feed(json.loads(line))
    sp = codex.spend
    assert (sp.input_tokens, sp.cache_read_tokens, sp.output_tokens) == (30669 - 28288, 28288, 205)
    assert prices.cost(sp, {}) == (None, ["unknown"])  # exec --json names no model, and no profile did
    # an older rollout (Codex 0.40: token_count events only): the last running total, exactly
    rollout = SpendCounter("codex-json")
    last: dict[str, int] = {}
    for line in (REAL_TRACES / "codex-rollout" / "agentcmd_rollout-2025-09-24T19-22-20_v0.40.jsonl").open():
        obj = json.loads(line)
        rollout.feed_rollout("t", obj)
        if obj.get("type") == "event_msg" and obj["payload"].get("type") == "token_count" and obj["payload"]["info"]:
            last = obj["payload"]["info"]["total_token_usage"]
    rollout.threads.append("t")
    assert rollout.spend.tokens == last["total_tokens"] and rollout.spend.models() == ["gpt-5-codex"]
    transcript = SpendCounter("claude-transcript")
    outputs: dict[str, int] = {}
    with gzip.open(REAL_TRACES / "claude-transcript" / "spotter_4d5611e5_edit-churn.jsonl.gz", "rt") as fh:
        for line in fh:
            obj = json.loads(line)
            transcript.feed(obj)
            msg = obj.get("message") if obj.get("type") == "assistant" else None
            if isinstance(msg, dict) and "usage" in msg:
                outputs[msg["id"]] = max(outputs.get(msg["id"], 0), msg["usage"].get("output_tokens", 0))
    assert transcript.spend.output_tokens == sum(outputs.values())
    assert transcript.spend.models() == ["claude-opus-4-6"]
    cost, unpriced = prices.cost(transcript.spend, {})
    assert cost is not None and cost > 0 and unpriced == []  # genai-prices knows claude-opus-4-6
