"""The log adapters (spiral/adapters/): every real agent log in ../shared/real-traces/ through its adapter.

The expected counts below were established by hand, independently of the
adapters, with small throw-away scripts over the raw files (json.loads per line,
zcat for .gz), cross-checked with grep:

- Claude (transcripts and stream-json): the number of distinct `tool_use` block
  ids inside `type: assistant` lines. `grep -o '"type":"tool_use","id":"[^"]*"' |
  sort -u | wc -l` agrees on the plain files; on the two .gz transcripts it finds
  2 (polling) and 33 (edit-churn) more ids, all inside `progress` lines (a
  subagent's calls echoed into the parent transcript; the edit-churn 33 are the
  subagent file's own 33), which are not the agent's calls. Errors: distinct
  `tool_result.tool_use_id` whose block has `is_error: true`. Denied: those
  whose text starts `This command requires approval`, `Claude requested
  permissions to ` or `The user doesn't want to `, or holds ` was blocked. For
  security, Claude Code may only `. Without a result: tool_use ids no
  tool_result names.
- Codex `exec --json`: distinct `command_execution` item ids, plus one per entry
  of a `file_change` item's `changes`. Errors: command items with an integer
  `exit_code` other than 0.
- Codex rollouts: records whose (payload) type is `function_call`,
  `custom_tool_call` or `local_shell_call` (every call_id is distinct, and each
  has exactly one `function_call_output`). Errors: outputs whose JSON
  `metadata.exit_code` is a non-zero integer, or whose text (first 200
  characters) says `Process exited with code N` / `Exit code: N` /
  `exit code: N` with N non-zero, or starts `patch rejected` (also denied),
  `error:` or `tool call error:`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.buckets import BucketsFile
from spiral import model
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.model import ToolCall
from spiral.shellcmd import analyse, unwrap
from tests.helpers import REAL_TRACES
from tests.helpers import S as SEED

GLEAM_DIR = "claude-stream-json/gleam_real_messages_v2.1.3"
# The folder is one short stream cut into one pretty-printed event per file.
GLEAM_ORDER = ("system_message.json", "assistant_message.json", "user_message.json", "result_success.json")

POLLING = "claude-transcript/spotter_258c7280_bg-task-polling.jsonl.gz"
POLLING_WORKDIR = "/home/USER/projects/spotter-worktrees/spotter-gqc"

# (trace relative to real-traces/, adapter format, tool calls, calls with is_error)
COUNTS: list[tuple[str, str, int, int]] = [
    ("claude-transcript/agentcmd_full-session-four.jsonl", "claude-transcript", 27, 1),
    ("claude-transcript/agentcmd_full-session-three_healthy.jsonl", "claude-transcript", 23, 0),
    ("claude-transcript/agenthistory_claude_session-01_v2.1.152_redacted.jsonl", "claude-transcript", 0, 0),
    (POLLING, "claude-transcript", 186, 7),
    ("claude-transcript/spotter_4d5611e5_edit-churn.jsonl.gz", "claude-transcript", 150, 5),
    ("claude-transcript/spotter_4d5611e5_subagent_agent-a2898e3.jsonl", "claude-transcript", 33, 8),
    ("claude-transcript/spotter_short.jsonl", "claude-transcript", 2, 2),
    ("claude-stream-json/gleam_basic_query_v2.1.7.ndjson", "claude-stream-json", 0, 0),
    (GLEAM_DIR, "claude-stream-json", 1, 0),
    ("codex-exec-json/agentcmd_stream-output-2.jsonl", "codex-json", 1, 0),
    ("codex-exec-json/agentcmd_stream-output-5.jsonl", "codex-json", 1, 0),
    ("codex-exec-json/rustclaudecodes_failed_command.jsonl", "codex-json", 1, 1),
    # one command_execution (item_6) + one file_change with one change entry
    ("codex-exec-json/rustclaudecodes_file_change.jsonl", "codex-json", 2, 0),
    ("codex-exec-json/rustclaudecodes_file_create.jsonl", "codex-json", 1, 0),
    ("codex-exec-json/rustclaudecodes_hello_world.jsonl", "codex-json", 0, 0),
    ("codex-exec-json/rustclaudecodes_list_files.jsonl", "codex-json", 1, 0),
    ("codex-exec-json/rustclaudecodes_multi_command.jsonl", "codex-json", 3, 0),
    # 120 shell + 3 update_plan; exit codes 2 x5 and 1 x3, 2 text "failed in sandbox ... exit code: N",
    # 2 "patch rejected by user"
    ("codex-rollout/agentcmd_rollout-2025-09-24T19-22-20_v0.40.jsonl", "codex-json", 123, 12),
    # 81 shell + 3 update_plan; exit code 1 x3
    ("codex-rollout/agentcmd_rollout-2025-09-25T09-49-46.jsonl", "codex-json", 84, 3),
    ("codex-rollout/agentcmd_rollout-2025-09-25T15-12-14.jsonl", "codex-json", 34, 0),
    ("codex-rollout/agenthistory_codex_session-01_v0.135_redacted.jsonl", "codex-json", 0, 0),
    # legacy top-level records: 196 shell + 50 MCP / update_plan calls; one exit code 2, 5 text
    # "failed in sandbox ... exit code: N", 7 "tool call error: ...", 8 apply_patch "error: Failed to find ..."
    ("codex-rollout/codexsessionviewer_example_legacy-format.jsonl", "codex-json", 246, 21),
]
# calls whose result is a denial, and calls the log holds no result for (every other trace: 0)
DENIED = {
    POLLING: 1,
    # parallel calls Claude Code cancelled because a sibling failed ("Sibling tool call errored"): never ran
    "claude-transcript/spotter_4d5611e5_subagent_agent-a2898e3.jsonl": 7,
    "claude-transcript/spotter_short.jsonl": 2,
    "codex-rollout/agentcmd_rollout-2025-09-24T19-22-20_v0.40.jsonl": 2,
}
NO_RESULT = {"claude-transcript/agentcmd_full-session-three_healthy.jsonl": 3}


def _require_traces() -> Path:
    if not REAL_TRACES.is_dir():
        pytest.skip(f"real traces not present at {REAL_TRACES}")
    return REAL_TRACES


def _objects(rel: str) -> list[Any]:
    """The native payloads of one trace, in log order."""
    path = _require_traces() / rel
    if path.is_dir():
        assert sorted(p.name for p in path.iterdir()) == sorted(GLEAM_ORDER)
        return [json.loads((path / name).read_text()) for name in GLEAM_ORDER]
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _feed(rel: str, fmt: str, workdir: str | None = None) -> tuple[list[ToolCall], int]:
    adapter = make_adapter(fmt, workdir)
    calls: list[ToolCall] = []
    for i, obj in enumerate(_objects(rel)):
        calls.extend(adapter.feed(float(i), obj))
    return calls, adapter.skipped


def test_table_covers_every_trace() -> None:
    root = _require_traces()
    on_disk = set()
    for p in root.rglob("*"):
        if p.is_file() and p.name != "SOURCES.md":
            rel = p.relative_to(root).as_posix()
            on_disk.add(GLEAM_DIR if rel.startswith(GLEAM_DIR + "/") else rel)
    assert on_disk == {rel for rel, *_ in COUNTS}


@pytest.mark.parametrize(("rel", "fmt", "n_calls", "n_errors"), COUNTS, ids=[c[0].rsplit("/", 1)[-1] for c in COUNTS])
def test_trace_parses_to_hand_counted_calls(rel: str, fmt: str, n_calls: int, n_errors: int) -> None:
    calls, skipped = _feed(rel, fmt)
    # Every line type in these files is known to the adapters (checked by hand:
    # transcripts hold only user/assistant/progress/system/file-history-snapshot/
    # queue-operation/last-prompt; exec json only thread/turn/item events;
    # rollouts only session_meta/turn_context/event_msg/response_item, or the
    # legacy header + record_type/message/reasoning/function_call lines).
    assert skipped == 0
    assert len(calls) == n_calls
    assert sum(c.is_error for c in calls) == n_errors
    assert sum(c.denied for c in calls) == DENIED.get(rel, 0)
    assert all(c.is_error for c in calls if c.denied)
    assert sum(not c.result_seen for c in calls) == NO_RESULT.get(rel, 0)
    assert all(c.output is None or len(c.output) <= 300 for c in calls)
    # ids are unique per call, except that one file_change item yields one call per change
    ids = [c.call_id for c in calls if c.tool not in model.WRITING_TOOLS]
    assert len(ids) == len(set(ids))
    assert all(c.call_id for c in calls)


# ---- specific facts ----------------------------------------------------------


def test_polling_trace_task_output_is_bash_output() -> None:
    calls, _ = _feed(POLLING, "claude-transcript")
    outputs = [c for c in calls if c.tool == model.BASH_OUTPUT]
    # three `TaskOutput` tool_use blocks (task_id bd0afab) in the transcript
    assert len(outputs) == 3
    assert not any(c.tool == "TaskOutput" for c in calls)
    tails = [
        c
        for c in calls
        if c.tool == model.BASH and c.command and c.command.startswith("tail ") and "/tasks/bd0afab.output" in c.command
    ]
    assert len(tails) == 3
    assert all(analyse(c.command).task_output for c in tails)
    # the other canonical names: Task -> Agent, and the 79 Bash calls stay Bash
    assert sum(c.tool == model.AGENT for c in calls) == 1
    assert sum(c.tool == model.BASH for c in calls) == 79


def test_polling_trace_growing_output_is_not_stale_polling() -> None:
    """poll_progress: every tail of the build's output showed the compile further on."""
    calls, _ = _feed(POLLING, "claude-transcript", POLLING_WORKDIR)
    det = Detector(BucketsFile().settings, bucket="medium", started_at=0.0, workdir=POLLING_WORKDIR)
    for call in calls:
        det.add_call(call)
        assert "polling" not in det.evaluate(call.ts).signals


def test_polling_trace_trips_polling_in_the_detector() -> None:
    """The real-world check: the SOURCES label says 'polling', and the contract's polling signal agrees.

    (The shipped rules do not count these polls: each read of the build's
    output returned more of a compile that was progressing; see
    test_polling_trace_growing_output_is_not_stale_polling.)
    """
    calls, _ = _feed(POLLING, "claude-transcript", POLLING_WORKDIR)
    det = Detector(SEED, bucket="medium", started_at=0.0, workdir=POLLING_WORKDIR)
    fired = []
    for call in calls:
        det.add_call(call)
        verdict = det.evaluate(call.ts)
        if "polling" in verdict.signals:
            fired.append(next(f for f in verdict.findings if f.signal == "polling").evidence)
    assert fired, "the tail/TaskOutput loop on bd0afab never tripped polling"
    assert "task-output reads x3" in fired[0] and "background-output tool calls x3" in fired[0]


def test_codex_bin_bash_lc_commands_come_through() -> None:
    calls, _ = _feed("codex-exec-json/rustclaudecodes_multi_command.jsonl", "codex-json")
    assert [c.tool for c in calls] == [model.BASH] * 3
    assert [c.command for c in calls] == [f"/bin/bash -lc 'echo step{i}'" for i in (1, 2, 3)]
    assert [unwrap(c.command) for c in calls] == [f"echo step{i}" for i in (1, 2, 3)]
    assert [c.call_id for c in calls] == ["item_2", "item_3", "item_4"]
    # double-quoted wrapper with a redirect and a pipeline inside
    calls, _ = _feed("codex-exec-json/rustclaudecodes_file_create.jsonl", "codex-json")
    assert unwrap(calls[0].command) == (
        "printf '%s' 'hello from codex' > /tmp/codex_test_file.txt && cat /tmp/codex_test_file.txt"
    )
    assert analyse(calls[0].command).file == "/tmp/codex_test_file.txt"


def test_codex_failed_command_is_error() -> None:
    calls, _ = _feed("codex-exec-json/rustclaudecodes_failed_command.jsonl", "codex-json")
    assert len(calls) == 1
    (call,) = calls
    assert call.command == "/bin/bash -lc 'exit 42'"
    assert call.is_error is True
    # item.started (exit_code null) and item.completed (42) are one call, not two
    assert call.call_id == "item_2"


def test_codex_successful_commands_are_not_errors() -> None:
    for rel in ("codex-exec-json/rustclaudecodes_list_files.jsonl", "codex-exec-json/agentcmd_stream-output-2.jsonl"):
        calls, _ = _feed(rel, "codex-json")
        assert calls and not any(c.is_error for c in calls)


def test_claude_is_error_result_marks_its_call() -> None:
    calls, _ = _feed("claude-transcript/spotter_short.jsonl", "claude-transcript")
    by_id = {c.call_id: c for c in calls}
    # both calls were rejected by the user: tool_result is_error true
    assert by_id["toolu_0116Hyi5v8ut7Ffb7d8qV1Sc"].tool == model.BASH
    assert by_id["toolu_0116Hyi5v8ut7Ffb7d8qV1Sc"].command == "mix phx.server 2>&1 | head -80"
    assert by_id["toolu_0116Hyi5v8ut7Ffb7d8qV1Sc"].is_error is True
    assert by_id["toolu_01FdQ8qTyVyZjE3Kw4dguQGx"].tool == "Glob"
    assert by_id["toolu_01FdQ8qTyVyZjE3Kw4dguQGx"].is_error is True

    calls, _ = _feed("claude-transcript/agentcmd_full-session-four.jsonl", "claude-transcript")
    assert [c.call_id for c in calls if c.is_error] == ["toolu_014AvpKjF3DqduwTCfYMxBas"]


def test_claude_stream_json_result_with_is_error_false() -> None:
    calls, _ = _feed(GLEAM_DIR, "claude-stream-json")
    assert len(calls) == 1
    (call,) = calls
    assert (call.tool, call.command, call.call_id, call.is_error) == (
        model.BASH,
        "ls -la",
        "toolu_01BeipFBP3sUY3EAwVg3qQnE",
        False,
    )


def test_claude_repeated_tool_use_line_is_one_call() -> None:
    """stream-json repeats a message over several lines: calls are counted by block id."""
    system, assistant, user, result = _objects(GLEAM_DIR)
    adapter = make_adapter("claude-stream-json")
    calls = [
        c
        for i, obj in enumerate([system, assistant, assistant, user, user, result])
        for c in adapter.feed(float(i), obj)
    ]
    assert [c.call_id for c in calls] == ["toolu_01BeipFBP3sUY3EAwVg3qQnE"]
    assert adapter.skipped == 0
    # a result for a call never seen is ignored, not an error
    assert make_adapter("claude-stream-json").feed(0.0, user) == []


def test_claude_paths_inside_workdir_become_relative() -> None:
    calls, _ = _feed(POLLING, "claude-transcript", POLLING_WORKDIR)
    writes = [c for c in calls if c.tool in model.WRITING_TOOLS]
    assert len(writes) == 48  # Edit x35 + Write x13
    assert all(c.path and not c.path.startswith("/") for c in writes)
    assert "lib/spotter_web/live/project_review_live.ex" in {c.path for c in writes}
    assert "test/spotter_web/live/project_review_live_test.exs" in {c.path for c in writes}
    # a path outside the workdir stays absolute
    reads = {c.path for c in calls if c.tool == model.READ}
    assert "/tmp/claude-1000/-home-USER-projects-spotter-worktrees-spotter-gqc/tasks/bd0afab.output" in reads
    # without a workdir nothing is rewritten
    raw, _ = _feed(POLLING, "claude-transcript")
    assert all(c.path.startswith(POLLING_WORKDIR + "/") for c in raw if c.tool in model.WRITING_TOOLS)


def test_codex_file_change_path_relative_to_workdir() -> None:
    calls, _ = _feed("codex-exec-json/rustclaudecodes_file_change.jsonl", "codex-json", "/tmp/codex_patch_test")
    assert [(c.tool, c.path) for c in calls] == [(model.EDIT, "test.txt"), (model.BASH, None)]
    assert calls[1].command == "/bin/bash -lc 'cat /tmp/codex_patch_test/test.txt'"
    raw, _ = _feed("codex-exec-json/rustclaudecodes_file_change.jsonl", "codex-json")
    assert raw[0].path == "/tmp/codex_patch_test/test.txt"


def test_codex_rollout_keeps_each_command_workdir() -> None:
    """SOURCES: `bash -lc ls` x7 in seven different workdirs is not a loop."""
    calls, _ = _feed("codex-rollout/agentcmd_rollout-2025-09-25T09-49-46.jsonl", "codex-json")
    ls = [c for c in calls if c.command == "bash -lc ls"]
    assert len(ls) == 7
    assert len({c.cwd for c in ls}) == 7
    root = "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2"
    assert all(c.cwd and c.cwd.startswith(root) for c in ls)


def test_codex_rollout_argv_is_joined_into_a_command() -> None:
    calls, _ = _feed("codex-rollout/agentcmd_rollout-2025-09-25T15-12-14.jsonl", "codex-json")
    assert all(c.tool == model.BASH for c in calls)
    # the argv list ["bash", "-lc", "ls"] becomes a shell string that unwraps again
    assert calls[0].command == "bash -lc ls"
    assert calls[1].command == "bash -lc 'ls packages'"
    assert unwrap(calls[1].command) == "ls packages"
