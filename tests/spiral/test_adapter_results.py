"""Results joined to calls: the adapters fill in result_seen, is_error, exit_code, output and denied.

The log lines below are excerpts of real logs: Claude Code 2.1.197 and Codex
0.171.0 (agents/package-lock.json) run against the scripted model server of
tests/scripted_model.py (tests/realcli_probe.py's healthy, default-profile
and failing-command scenarios), with session ids, uuids and usage dropped.
"""

from __future__ import annotations

from typing import Any

import orjson

from spiral import model
from spiral.adapters import make_adapter
from spiral.model import EXCERPT, ToolCall, excerpt

REPO = "/tmp/realcli-claude-denials-y3leaq92/repo"


def _feed(fmt: str, lines: list[Any], workdir: str | None = None) -> list[ToolCall]:
    adapter = make_adapter(fmt, workdir)
    calls = [c for i, line in enumerate(lines) for c in adapter.feed(float(i), line)]
    assert adapter.skipped == 0
    return calls


def _facts(c: ToolCall) -> tuple[bool, bool, bool, int | None, str | None]:
    return c.result_seen, c.is_error, c.denied, c.exit_code, c.output


# ---- Claude Code ----------------------------------------------------------------------------


def _use(i: int, name: str, inp: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_scripted_000{i}", "name": name, "input": inp}
    return {"type": "assistant", "message": {"role": "assistant", "content": [block]}, "parent_tool_use_id": None}


def _result(i: int, content: Any, is_error: bool | None) -> dict[str, Any]:
    block: dict[str, Any] = {"tool_use_id": f"toolu_scripted_000{i}", "type": "tool_result", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return {"type": "user", "message": {"role": "user", "content": [block]}, "parent_tool_use_id": None}


BLOCKED = (
    f"touch in '{REPO}/made.txt' was blocked. For security, Claude Code may only create or modify files "
    f"in the allowed working directories for this session: '{REPO}'."
)
NOT_GRANTED = f"Claude requested permissions to write to {REPO}/d.txt, but you haven't granted it yet."
# claude -p (no permission flags) as root: one read-only command runs, three are refused
CLAUDE_DEFAULT_PROFILE = [
    {"type": "system", "subtype": "init", "cwd": REPO, "permissionMode": "default", "claude_code_version": "2.1.197"},
    _use(0, "Bash", {"command": "echo read-only-ok", "description": "Run a command"}),
    _result(0, "read-only-ok", False),
    _use(1, "Bash", {"command": "touch made.txt", "description": "Run a command"}),
    _result(1, BLOCKED, True),
    _use(2, "Bash", {"command": "python3 -c \"open('p.txt','w').write('x')\"", "description": "Run a command"}),
    _result(2, "This command requires approval", True),
    _use(3, "Write", {"file_path": f"{REPO}/d.txt", "content": "d\n"}),
    _result(3, NOT_GRANTED, True),
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "permission_denials": [
            {"tool_name": "Bash", "tool_use_id": "toolu_scripted_0001", "tool_input": {"command": "touch made.txt"}},
            {"tool_name": "Bash", "tool_use_id": "toolu_scripted_0002", "tool_input": {"command": "python3 -c ..."}},
            {"tool_name": "Write", "tool_use_id": "toolu_scripted_0003", "tool_input": {"file_path": f"{REPO}/d.txt"}},
        ],
    },
]


def test_claude_denials_are_marked_and_the_allowed_call_is_not() -> None:
    calls = _feed("claude-stream-json", CLAUDE_DEFAULT_PROFILE, REPO)
    assert [(c.tool, c.command or c.path) for c in calls] == [
        (model.BASH, "echo read-only-ok"),
        (model.BASH, "touch made.txt"),
        (model.BASH, "python3 -c \"open('p.txt','w').write('x')\""),
        (model.WRITE, "d.txt"),
    ]
    assert _facts(calls[0]) == (True, False, False, None, "read-only-ok")
    assert _facts(calls[1]) == (True, True, True, None, BLOCKED)
    assert _facts(calls[2]) == (True, True, True, None, "This command requires approval")
    assert _facts(calls[3]) == (True, True, True, None, NOT_GRANTED)


def test_claude_permission_denials_on_the_result_line_alone_mark_the_calls() -> None:
    """A refusal whose text we do not know is still a denial once the result line lists its id."""
    lines = [dict(x) for x in CLAUDE_DEFAULT_PROFILE]
    lines[4] = _result(1, "some future wording of a refusal", True)
    adapter = make_adapter("claude-stream-json", REPO)
    calls = [c for i, line in enumerate(lines[:-1]) for c in adapter.feed(float(i), line)]
    assert (calls[1].is_error, calls[1].denied) == (True, False)
    assert adapter.feed(99.0, lines[-1]) == []  # the result line adds no call, it marks one
    assert (calls[1].is_error, calls[1].denied) == (True, True)
    assert [c.denied for c in calls] == [False, True, True, True]
    # ids no longer remembered (or never seen) are ignored
    assert make_adapter("claude-stream-json").feed(0.0, lines[-1]) == []


def test_claude_failed_bash_has_its_exit_code_and_a_result_is_joined_to_the_emitted_call() -> None:
    adapter = make_adapter("claude-stream-json")
    (call,) = adapter.feed(0.0, _use(0, "Bash", {"command": "echo err >&2; echo out; exit 3"}))
    # emitted at its tool_use, before anything is known about how it went
    assert _facts(call) == (False, False, False, None, None)
    assert adapter.feed(1.0, _result(0, "Exit code 3\nerr\nout", True)) == []
    assert _facts(call) == (True, True, False, 3, "Exit code 3 err out")
    (ok,) = adapter.feed(2.0, _use(1, "Bash", {"command": "echo fine"}))
    adapter.feed(3.0, _result(1, "fine", False))
    assert _facts(ok) == (True, False, False, None, "fine")  # success: Claude reports no exit code


def test_claude_results_without_is_error_content_blocks_and_user_rejections() -> None:
    # the healthy sample's Write result has no is_error key at all
    written = f"File created successfully at: {REPO}/hello.py (file state is current in your context)"
    calls = _feed(
        "claude-transcript",
        [
            _use(0, "Write", {"file_path": f"{REPO}/hello.py", "content": "x"}),
            _result(0, written, None),
            _use(1, "Read", {"file_path": f"{REPO}/hello.py"}),
            _result(1, [{"type": "text", "text": "1\tx"}, {"type": "image", "source": {}}], False),
            _use(2, "Bash", {"command": "mix phx.server"}),
            # an interactive "no" at the permission prompt (a real transcript, ../shared/real-traces)
            _result(2, "The user doesn't want to proceed with this tool use. The tool use was rejected", True),
            _use(3, "Read", {"file_path": f"{REPO}/gone.py"}),
            _result(3, "<tool_use_error>File does not exist.</tool_use_error>", True),
        ],
    )
    assert _facts(calls[0]) == (True, False, False, None, written)
    assert _facts(calls[1]) == (True, False, False, None, "1 x")
    assert calls[2].denied and calls[2].is_error
    assert _facts(calls[3]) == (True, True, False, None, "<tool_use_error>File does not exist.</tool_use_error>")


# ---- Codex -----------------------------------------------------------------------------------


def _item(kind: str, iid: str, cmd: str, out: str, code: int | None, status: str) -> dict[str, Any]:
    item = {"id": iid, "type": "command_execution", "command": cmd, "aggregated_output": out, "exit_code": code}
    return {"type": kind, "item": item | {"status": status}}


def test_codex_exec_json_commands_and_file_changes() -> None:
    cmd = "/bin/bash -lc 'echo err >&2; echo out; exit 3'"
    change = {"path": "/r/hello.py", "kind": "add"}
    adapter = make_adapter("codex-json", "/r")
    started = adapter.feed(0.0, _item("item.started", "item_0", cmd, "", None, "in_progress"))
    assert _facts(started[0]) == (False, False, False, None, None)
    assert adapter.feed(1.0, _item("item.completed", "item_0", cmd, "err\nout\n", 3, "failed")) == []
    assert _facts(started[0]) == (True, True, False, 3, "err out")
    (fine,) = adapter.feed(2.0, _item("item.started", "item_1", "/bin/bash -lc 'echo fine'", "", None, "in_progress"))
    adapter.feed(3.0, _item("item.completed", "item_1", "/bin/bash -lc 'echo fine'", "fine\n", 0, "completed"))
    assert _facts(fine) == (True, False, False, 0, "fine")
    (declined,) = adapter.feed(4.0, _item("item.completed", "item_2", "/bin/bash -lc 'rm -rf x'", "", None, "declined"))
    assert _facts(declined) == (True, True, True, None, "")
    fc = {"id": "item_3", "type": "file_change", "changes": [change, {"path": "/r/b.py", "kind": "update"}]}
    files = adapter.feed(5.0, {"type": "item.started", "item": fc | {"status": "in_progress"}})
    assert [(c.tool, c.path, c.result_seen) for c in files] == [
        (model.WRITE, "hello.py", False),
        ("Edit", "b.py", False),
    ]
    assert adapter.feed(6.0, {"type": "item.completed", "item": fc | {"status": "failed"}}) == []
    assert [(c.result_seen, c.is_error) for c in files] == [(True, True), (True, True)]
    # reported only once applied (older versions: no status at all)
    (done,) = adapter.feed(
        7.0, {"type": "item.completed", "item": {"id": "item_4", "type": "file_change", "changes": [change]}}
    )
    assert _facts(done) == (True, False, False, None, None)
    mcp = {"id": "item_5", "type": "mcp_tool_call", "server": "m", "tool": "t", "status": "in_progress"}
    (tool,) = adapter.feed(8.0, {"type": "item.started", "item": mcp})
    err = {"status": "failed", "error": {"message": "tool call failed: boom"}}
    adapter.feed(9.0, {"type": "item.completed", "item": mcp | err})
    assert (tool.tool, *_facts(tool)) == ("mcp:m.t", True, True, False, None, "tool call failed: boom")


def _rollout(ptype: str, call_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "response_item", "payload": {"type": ptype, "call_id": call_id, **fields}}


def test_codex_rollout_outputs_of_0_171_and_the_read_only_sandbox() -> None:
    """codex exec without a sandbox flag (read-only): the patch is rejected, the shell write fails."""
    patch = "*** Begin Patch\n*** Add File: /r/sb.txt\n+sb\n*** End Patch\n"
    rejected = "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
    ran = (
        "Chunk ID: 59f097\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 23\n"
        "Output:\n/bin/bash: line 1: ran.txt: Read-only file system\ncat: ran.txt: No such file or directory\n"
    )
    applied = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM /r/a.py\n"
    lines = [
        {"type": "session_meta", "payload": {"cwd": "/r"}},
        _rollout("custom_tool_call", "call_scripted_0000", name="apply_patch", input=patch),
        _rollout("custom_tool_call_output", "call_scripted_0000", output=rejected),
        _rollout("function_call", "call_scripted_0001", name="exec_command", arguments='{"cmd": "echo ran > ran.txt"}'),
        _rollout("function_call_output", "call_scripted_0001", output=ran),
        _rollout(
            "custom_tool_call",
            "call_2",
            name="apply_patch",
            input=patch.replace("Add File: /r/sb.txt", "Update File: a.py"),
        ),
        _rollout("custom_tool_call_output", "call_2", output=applied),
    ]
    sb, shell, edit = _feed("codex-json", lines, "/r")
    assert (sb.tool, sb.path, *_facts(sb)) == (model.WRITE, "sb.txt", True, True, True, None, rejected)
    assert _facts(shell) == (
        True,
        True,
        False,  # a failing command, even when the sandbox is why: only an explicit refusal is a denial
        1,
        "/bin/bash: line 1: ran.txt: Read-only file system cat: ran.txt: No such file or directory",
    )
    assert _facts(edit) == (True, False, False, 0, "Success. Updated the following files: M /r/a.py")


def test_codex_rollout_older_outputs() -> None:
    meta = '{"output":"sed: x: No such file or directory\\n","metadata":{"exit_code":1,"duration_seconds":0.0}}'
    sandbox = "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 2, stdout: , stderr: x"
    calls = _feed(
        "codex-json",
        [
            *(
                _rollout("function_call", f"c{i}", name="shell", arguments='{"command": ["bash", "-lc", "ls"]}')
                for i in range(5)
            ),
            _rollout("function_call_output", "c0", output=meta),
            _rollout("function_call_output", "c1", output=sandbox),
            _rollout("function_call_output", "c2", output="patch rejected by user"),
            _rollout("function_call_output", "c3", output="error: Failed to find expected lines"),
            _rollout("function_call_output", "c4", output='[{"text":"Plan updated","type":"text"}]'),
        ],
    )
    assert [_facts(c) for c in calls] == [
        (True, True, False, 1, "sed: x: No such file or directory"),
        (True, True, False, 2, sandbox),
        (True, True, True, None, "patch rejected by user"),
        (True, True, False, None, "error: Failed to find expected lines"),
        (True, False, False, None, "Plan updated"),
    ]


# ---- generic, excerpts ---------------------------------------------------------------------------


def test_generic_lines_carry_their_own_result() -> None:
    calls = _feed(
        "generic",
        [
            {"tool": "Bash", "command": "pytest", "is_error": True},
            {"tool": "Bash", "command": "make", "exit_code": 2, "output": "make: *** [all] Error 2\n"},
            {"tool": "Write", "path": "x.py", "denied": True},
            {"tool": "Read", "path": "x.py"},
        ],
    )
    assert [_facts(c) for c in calls] == [
        (True, True, False, None, None),
        (True, True, False, 2, "make: *** [all] Error 2"),
        (True, True, True, None, None),
        (True, False, False, None, None),
    ]


def test_excerpt_folds_whitespace_drops_escapes_and_keeps_both_ends() -> None:
    assert excerpt("  a\n\n\tb  \r\n") == "a b"
    assert excerpt("\x1b[31mFAIL\x1b[0m test_x\x07") == "FAIL test_x"
    long = "START " + "filler line\n" * 5000 + "AssertionError: 1 != 2"
    cut = excerpt(long)
    assert len(cut) <= EXCERPT and cut.startswith("START filler") and cut.endswith("AssertionError: 1 != 2")
    assert " ... " in cut
    assert excerpt("y" * EXCERPT) == "y" * EXCERPT


def test_codex_rollout_command_still_running_has_no_exit_code() -> None:
    running = "Chunk ID: 1a2b3c\nWall time: 10.0 seconds\nProcess running with session ID 7\nOutput:\ncollecting ...\n"
    (call,) = _feed(
        "codex-json",
        [
            _rollout("function_call", "c0", name="exec_command", arguments='{"cmd": "pytest -x"}'),
            _rollout("function_call_output", "c0", output=running),
        ],
    )
    assert _facts(call) == (True, False, False, None, "collecting ...")


def test_codex_rollout_apply_patch_run_through_the_shell_is_an_edit() -> None:
    """Older Codex sent patches as a shell command (`apply_patch <<'PATCH' ...`): each named file is an edit."""
    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/b.py\n+z\n*** End Patch\nPATCH"
    argv = '{"command": ["bash", "-lc", ' + orjson.dumps(patch).decode() + '], "workdir": "/r"}'
    lines = [
        {"type": "session_meta", "payload": {"cwd": "/r"}},
        _rollout("function_call", "c1", name="shell", arguments=argv),
        _rollout("function_call_output", "c1", output='{"output":"Done!","metadata":{"exit_code":0}}'),
        _rollout("function_call", "c2", name="shell", arguments='{"command": ["bash", "-lc", "grep apply_patch x"]}'),
    ]
    edit, write, grep = _feed("codex-json", lines, "/r")
    assert (edit.tool, edit.path, edit.result_seen, edit.is_error) == (model.EDIT, "src/a.py", True, False)
    assert (write.tool, write.path) == (model.WRITE, "src/b.py")
    assert grep.tool == model.BASH


def test_claude_sibling_cancelled_call_never_ran() -> None:
    """Parallel calls of one message: one fails, Claude Code cancels the other (it never ran)."""
    lines = [
        _use(0, "Bash", {"command": "git status"}),
        _use(1, "Bash", {"command": "git worktree list"}),
        _result(0, "Exit code 128\nfatal: not a git repository", True),
        _result(1, "<tool_use_error>Sibling tool call errored</tool_use_error>", True),
    ]
    failed, cancelled = _feed("claude-stream-json", lines)
    assert _facts(failed)[:4] == (True, True, False, 128)
    assert _facts(cancelled)[:3] == (True, True, True)


def test_claude_subagent_and_task_reader_facts() -> None:
    task = _use(0, "TaskOutput", {"task_id": "a1b2c3", "block": True})
    inside = _use(1, "Bash", {"command": "pytest -q"})
    inside["parent_tool_use_id"] = "toolu_task_7"
    sidechain = dict(_use(2, "Read", {"file_path": "/r/a.py"}), isSidechain=True, agentId="a2898e3")
    out, sub, side = _feed("claude-stream-json", [task, inside, sidechain], "/r")
    assert (out.tool, out.command, out.agent) == (model.BASH_OUTPUT, "a1b2c3", None)
    assert (sub.agent, side.agent, side.path) == ("toolu_task_7", "a2898e3", "a.py")
