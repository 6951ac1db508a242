"""A scripted model server for driving the real Claude Code and Codex CLIs.

The server answers on 127.0.0.1 only and speaks just enough of two wire
protocols for the real agent CLIs to run a whole session against it:

* the Anthropic Messages API (``POST /v1/messages``, streaming SSE or plain
  JSON) for Claude Code, with ``ANTHROPIC_BASE_URL`` pointed at ``.url``;
* the OpenAI Responses API (``POST /v1/responses``, streaming SSE or JSON)
  for Codex, with a ``model_providers`` entry whose ``base_url`` is
  ``.url + "/v1"``.

What the "model" says is a *script*: a list of steps, each a tool call
(:class:`Run`, :class:`WriteFile`, :class:`EditFile`, :class:`CallTool`), a
final answer (:class:`Reply`) or an HTTP failure (:class:`Fail`).  Steps are
written once and rendered in whichever dialect the request arrives in, so one
script drives either CLI.

Turn selection is by conversation position, not by request count: the step
served for a request is the one numbered by how many model turns the request
already carries in its history (assistant messages for Anthropic; function
calls and assistant messages for Responses).  A client that retries the same
request therefore gets the same turn again, and side requests (Claude Code's
tool-less helper calls) never consume a turn.

Every request is recorded (:attr:`ScriptedModel.exchanges`), including the
tool results / function-call outputs the client sent back, so a test can
assert that a tool really ran and what it printed.

A script can change when the model is *told* something: ``after_text``
maps a marker text to alternative steps, e.g. ::

    model.set_script(debug_loop_script(60), after_text={"MARKER-1": [Run("make test"), Reply("fixed")]})

The first main-loop request whose body holds ``"MARKER-1"`` anywhere (in any
string of its JSON: a guidance ``<system-reminder>`` block, a ``developer``
message, a tool result) *switches* the script: that request and every later
one are served the alternative steps, numbered from the switch (the request
at the switch position gets the alternative's turn 0, the next its turn 1,
and so on; a retry of a request gets the same turn, as before).  The switch
latches: it stays on whether or not later requests still carry the marker.
With several markers, the one that switched last is served.  Side requests
never switch.  :meth:`ScriptedModel.switched_at` gives the position a marker
switched at (``None``: not yet), :meth:`ScriptedModel.first_request_containing`
the first recorded request whose body holds a text, and
:meth:`ScriptedModel.requests_containing` all of them.

In-process use, e.g. from a pytest fixture::

    @pytest.fixture
    def scripted_model():
        with ScriptedModel() as model:
            yield model

    def test_it(scripted_model, tmp_path):
        scripted_model.workdir = str(tmp_path)
        scripted_model.set_script([Run("echo hi"), Reply("done")])
        ...  # launch the CLI against scripted_model.url
        assert scripted_model.tool_outputs()[0].output.strip() == "hi"

Behaviour of the real CLIs against this server (flags, env vars, line
shapes, retry knobs) is written up in docs/real-agents-findings.md and
reproduced by tests/realcli_probe.py.

Manual use::

    python tests/scripted_model.py --script script.json --port 8765

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC = "anthropic"
OPENAI = "openai"
LISTEN_HOST = "127.0.0.1"  # loopback only, always

DEFAULT_EXHAUSTED_REPLY = "Scripted model: the script is finished."
DEFAULT_SIDE_REPLY = "ok"


# ---------------------------------------------------------------------------
# Script steps
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Token usage the server reports for one response.

    ``start_output_tokens`` is what Anthropic's ``message_start`` event
    carries before the final ``output_tokens`` arrive in ``message_delta``;
    it is kept distinct by default so a test can tell which one a client
    reported.  In the Responses dialect ``input_tokens`` is the total and
    ``cache_read_input_tokens`` is reported as its cached subset.
    """

    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    start_output_tokens: int = 1

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            start_output_tokens=self.start_output_tokens + other.start_output_tokens,
        )


ZERO_USAGE = Usage(0, 0, 0, 0, 0)


@dataclass(frozen=True)
class Run:
    """Run a shell command: Claude's ``Bash`` tool, Codex's shell tool."""

    command: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class WriteFile:
    """Create or overwrite a file: Claude's ``Write``, Codex's ``apply_patch``
    (or a shell here-document when ``apply_patch`` is not offered).

    A relative path is resolved against the server's ``workdir`` when one is
    set (Claude's Write tool wants absolute paths)."""

    path: str
    content: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class EditFile:
    """Replace ``old`` by ``new`` in a file: Claude's ``Edit``, Codex's
    ``apply_patch`` update hunk (``old``/``new`` should be whole lines there)."""

    path: str
    old: str
    new: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class CallTool:
    """Call a tool by its exact name with exact input (no dialect mapping).

    ``input`` is a dict for JSON-schema tools; for a Responses *custom*
    (freeform) tool such as Codex's ``apply_patch`` pass the raw string."""

    name: str
    input: dict | str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Reply:
    """A final text answer; the client ends its turn on it."""

    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error instead of a turn.

    ``times`` is how many requests get the error before the script moves on
    to the next step (``None``: every request, forever).  ``retry_after`` and
    ``should_retry`` set the ``retry-after`` and ``x-should-retry`` headers
    when given; ``headers`` adds any others (e.g. ``retry-after-ms``).  The
    body is the dialect's usual error JSON.  Side requests are never failed."""

    status: int
    times: int | None = None
    retry_after: str | None = None
    should_retry: bool | None = None
    message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def response_headers(self) -> dict[str, str]:
        out = dict(self.headers)
        if self.retry_after is not None:
            out["retry-after"] = self.retry_after
        if self.should_retry is not None:
            out["x-should-retry"] = "true" if self.should_retry else "false"
        return out


Turn = Run | WriteFile | EditFile | CallTool | Reply
Step = Turn | Fail


def repeat(step: Step, times: int) -> list[Step]:
    """``times`` copies of one step, e.g. the same failing command."""
    return [step] * times


def debug_loop_script(
    times: int = 40,
    filename: str = "tmp_debug.py",
    program: str = "import sys\nprint('debug: still failing')\nsys.exit(1)\n",
    usage: Usage | None = None,
    final: str | None = "I could not fix it.",
) -> list[Step]:
    """The classic spiral: write ``filename`` once, then run
    ``python <filename>`` ``times`` times, then (optionally) give up."""
    u = usage or Usage()
    steps: list[Step] = [WriteFile(filename, program, usage=u)]
    steps += repeat(Run(f"python3 {filename}", usage=u), times)
    if final is not None:
        steps.append(Reply(final, usage=u))
    return steps


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolOutput:
    """A tool result the client sent back (Anthropic ``tool_result`` or
    Responses ``function_call_output`` / ``custom_tool_call_output``)."""

    call_id: str
    output: str
    is_error: bool = False


@dataclass
class Exchange:
    """One request the server received and what it answered."""

    seq: int
    at: float
    method: str
    path: str
    dialect: str | None
    kind: str  # "turn", "side" or "aux"
    model: str | None
    position: int | None
    served: str  # e.g. "turn 2: Run", "fail 429", "side", "exhausted", "404"
    status: int
    tool_outputs: list[ToolOutput] = field(default_factory=list)
    usage: Usage | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None

    def summary(self) -> dict:
        """A JSON-friendly digest (no body, no headers)."""
        d = asdict(self)
        d.pop("body")
        d.pop("headers")
        return d


# ---------------------------------------------------------------------------
# The script as served: positions, faults, and what each request gets
# ---------------------------------------------------------------------------


@dataclass
class _PendingFault:
    fail: Fail
    remaining: int | None  # None: forever


class _Plan:
    """A step list as served: the turns by position, and the faults that
    stand before each position (a Fail listed before the k-th turn is served
    to requests at position k until it is used up)."""

    def __init__(self, steps: Sequence[Step]):
        self.turns: list[Turn] = []
        self.faults: dict[int, list[_PendingFault]] = {}
        for step in steps:
            if isinstance(step, Fail):
                self.faults.setdefault(len(self.turns), []).append(_PendingFault(step, step.times))
            elif isinstance(step, (Run, WriteFile, EditFile, CallTool, Reply)):
                self.turns.append(step)
            else:
                raise TypeError(f"not a script step: {step!r}")

    def take_fault(self, position: int) -> Fail | None:
        """The fault to serve at ``position`` now, using up one of its times."""
        for pending in self.faults.get(position, []):
            if pending.remaining is None:
                return pending.fail
            if pending.remaining > 0:
                pending.remaining -= 1
                return pending.fail
        return None


# ---------------------------------------------------------------------------
# Dialects: reading requests and writing responses
# ---------------------------------------------------------------------------


def _sse(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _short_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _flatten_content(content: Any) -> str:
    """Tool-result content as text (strings, text blocks, nested lists)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_flatten_content(part) for part in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"])
        if "content" in content:
            return _flatten_content(content["content"])
        if "output" in content:
            return _flatten_content(content["output"])
    return json.dumps(content)


class _Anthropic:
    """Anthropic Messages API."""

    name = ANTHROPIC

    @staticmethod
    def is_side_request(body: dict, headers: dict) -> bool:
        # Claude Code's main loop always offers tools; its helper calls
        # (titles, summaries, quota probes) do not.
        return not body.get("tools")

    @staticmethod
    def position(body: dict) -> int:
        return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")

    @staticmethod
    def new_tool_outputs(body: dict) -> list[ToolOutput]:
        # The results of the last turn are in the user message(s) after the
        # last assistant message; Claude Code may put a role "system"
        # reminder after them, so the tool results are not always last.
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last_assistant = max((n for n, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        return [
            ToolOutput(
                call_id=block.get("tool_use_id", ""),
                output=_flatten_content(block.get("content")),
                is_error=bool(block.get("is_error")),
            )
            for message in messages[last_assistant + 1 :]
            if message.get("role") == "user" and isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    @staticmethod
    def render_turn(turn: Turn, position: int, body: dict, workdir: str | None) -> list[dict]:
        """Content blocks for one turn."""
        if isinstance(turn, Reply):
            return [{"type": "text", "text": turn.text}]
        if isinstance(turn, Run):
            name, tool_input = "Bash", {"command": turn.command, "description": "Run a command"}
        elif isinstance(turn, WriteFile):
            name = "Write"
            tool_input = {"file_path": _resolve(turn.path, workdir), "content": turn.content}
        elif isinstance(turn, EditFile):
            name = "Edit"
            tool_input = {
                "file_path": _resolve(turn.path, workdir),
                "old_string": turn.old,
                "new_string": turn.new,
            }
        else:
            name, tool_input = turn.name, turn.input
        return [{"type": "tool_use", "id": f"toolu_scripted_{position:04d}", "name": name, "input": tool_input}]

    @staticmethod
    def _usage_start(u: Usage) -> dict:
        return {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
            "output_tokens": u.start_output_tokens,
        }

    @classmethod
    def message(cls, blocks: list[dict], model: str, u: Usage) -> dict:
        """The non-streaming response body."""
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = cls._usage_start(u) | {"output_tokens": u.output_tokens}
        return {
            "id": _short_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    @classmethod
    def stream(cls, blocks: list[dict], model: str, u: Usage) -> Iterable[bytes]:
        """The SSE events of one streamed message."""
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        start = {
            "id": _short_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": cls._usage_start(u),
        }
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                yield _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                for piece in _halves(block["text"]):
                    yield _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
            else:
                yield _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                    },
                )
                for piece in _halves(json.dumps(block["input"])):
                    yield _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": u.output_tokens},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})

    @staticmethod
    def error_body(status: int, message: str | None) -> dict:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }
        kind = kinds.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message or f"scripted {kind}"}}


class _OpenAIResponses:
    """OpenAI Responses API."""

    name = OPENAI
    _MODEL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")
    _OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")

    @staticmethod
    def is_side_request(body: dict, headers: dict) -> bool:
        # Codex tags each request with its kind in x-codex-turn-metadata.
        raw = headers.get("x-codex-turn-metadata")
        if not raw:
            return False
        try:
            kind = json.loads(raw).get("request_kind")
        except (ValueError, AttributeError):
            return False
        return kind not in (None, "turn")

    @classmethod
    def _is_model_item(cls, item: dict) -> bool:
        kind = item.get("type")
        return kind in cls._MODEL_ITEMS or (kind == "message" and item.get("role") == "assistant")

    @classmethod
    def position(cls, body: dict) -> int:
        items = body.get("input")
        if not isinstance(items, list):
            return 0
        return sum(1 for item in items if isinstance(item, dict) and cls._is_model_item(item))

    @classmethod
    def new_tool_outputs(cls, body: dict) -> list[ToolOutput]:
        items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
        last_model = max((n for n, i in enumerate(items) if cls._is_model_item(i)), default=-1)
        return [
            ToolOutput(call_id=i.get("call_id", ""), output=_flatten_content(i.get("output")))
            for i in items[last_model + 1 :]
            if i.get("type") in cls._OUTPUT_ITEMS
        ]

    @staticmethod
    def _offered(body: dict) -> dict[str, dict]:
        return {t.get("name"): t for t in body.get("tools") or [] if t.get("name")}

    @classmethod
    def _shell_call(cls, command: str, offered: dict[str, dict]) -> tuple[str, dict | str]:
        if "exec_command" in offered or not offered:
            return "exec_command", {"cmd": command}
        if "shell_command" in offered:
            return "shell_command", {"command": command}
        if "shell" in offered:
            return "shell", {"command": ["bash", "-lc", command]}
        return "exec_command", {"cmd": command}

    @classmethod
    def render_turn(cls, turn: Turn, position: int, body: dict, workdir: str | None) -> list[dict]:
        """Output items for one turn."""
        if isinstance(turn, Reply):
            return [
                {
                    "id": f"msg_scripted_{position:04d}",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
                }
            ]
        offered = cls._offered(body)
        if isinstance(turn, Run):
            name, tool_input = cls._shell_call(turn.command, offered)
        elif isinstance(turn, (WriteFile, EditFile)):
            patch = _patch_for(turn, workdir)
            if "apply_patch" in offered:
                name, tool_input = "apply_patch", patch
                if offered["apply_patch"].get("type") == "function":
                    tool_input = {"input": patch}
            else:
                name, tool_input = cls._shell_call(_shell_for(turn, workdir), offered)
        else:
            name, tool_input = turn.name, turn.input
        call_id = f"call_scripted_{position:04d}"
        if isinstance(tool_input, str):
            return [
                {
                    "id": f"ctc_scripted_{position:04d}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": name,
                    "input": tool_input,
                }
            ]
        return [
            {
                "id": f"fc_scripted_{position:04d}",
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(tool_input),
            }
        ]

    @staticmethod
    def _usage(u: Usage) -> dict:
        return {
            "input_tokens": u.input_tokens,
            "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
            "output_tokens": u.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.input_tokens + u.output_tokens,
        }

    @classmethod
    def _response(cls, model: str, status: str, output: list[dict], u: Usage | None) -> dict:
        return {
            "id": _short_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": model,
            "output": output,
            "usage": cls._usage(u) if u is not None else None,
        }

    @classmethod
    def message(cls, items: list[dict], model: str, u: Usage) -> dict:
        return cls._response(model, "completed", items, u)

    @classmethod
    def stream(cls, items: list[dict], model: str, u: Usage) -> Iterable[bytes]:
        seq = iter(range(1_000_000))

        def event(name: str, **data: Any) -> bytes:
            return _sse(name, {"type": name, "sequence_number": next(seq), **data})

        shell = cls._response(model, "in_progress", [], None)
        yield event("response.created", response=shell)
        yield event("response.in_progress", response=shell)
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                yield event(
                    "response.output_item.added",
                    output_index=index,
                    item=item | {"status": "in_progress", "content": []},
                )
                part = {"type": "output_text", "text": "", "annotations": []}
                yield event(
                    "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part
                )
                for piece in _halves(text):
                    yield event(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=piece,
                    )
                yield event(
                    "response.output_text.done", item_id=item["id"], output_index=index, content_index=0, text=text
                )
                yield event(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=part | {"text": text},
                )
            elif item["type"] == "function_call":
                yield event(
                    "response.output_item.added",
                    output_index=index,
                    item=item | {"status": "in_progress", "arguments": ""},
                )
                for piece in _halves(item["arguments"]):
                    yield event(
                        "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                    )
                yield event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=item["arguments"],
                )
            else:
                yield event(
                    "response.output_item.added", output_index=index, item=item | {"status": "in_progress", "input": ""}
                )
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.completed", response=cls._response(model, "completed", items, u))

    @staticmethod
    def error_body(status: int, message: str | None) -> dict:
        kinds = {
            400: ("invalid_request_error", None),
            401: ("invalid_request_error", "invalid_api_key"),
            403: ("invalid_request_error", None),
            404: ("invalid_request_error", "model_not_found"),
            429: ("requests", "rate_limit_exceeded"),
            500: ("server_error", None),
            503: ("server_error", "server_overloaded"),
        }
        kind, code = kinds.get(status, ("server_error", None))
        return {"error": {"message": message or f"scripted error {status}", "type": kind, "param": None, "code": code}}


_DIALECTS = {"/v1/messages": _Anthropic, "/v1/responses": _OpenAIResponses}


def _halves(text: str) -> list[str]:
    """Split a delta in two so clients exercise their accumulation."""
    if len(text) < 2:
        return [text]
    mid = len(text) // 2
    return [text[:mid], text[mid:]]


def _resolve(path: str, workdir: str | None) -> str:
    if workdir and not os.path.isabs(path):
        return os.path.join(workdir, path)
    return path


def _patch_for(turn: WriteFile | EditFile, workdir: str | None) -> str:
    path = _resolve(turn.path, workdir)
    if isinstance(turn, WriteFile):
        lines = turn.content.splitlines() or [""]
        body = "".join(f"+{line}\n" for line in lines)
        return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"
    minus = "".join(f"-{line}\n" for line in turn.old.splitlines())
    plus = "".join(f"+{line}\n" for line in turn.new.splitlines())
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}{plus}*** End Patch\n"


def _shell_for(turn: WriteFile | EditFile, workdir: str | None) -> str:
    """A shell fallback for file steps when no patch tool is offered."""
    path = _resolve(turn.path, workdir)
    if isinstance(turn, WriteFile):
        return f"cat > {json.dumps(path)} <<'SCRIPTED_EOF'\n{turn.content}\nSCRIPTED_EOF"
    program = "import sys;p=sys.argv[1];s=open(p).read();open(p,'w').write(s.replace(sys.argv[2],sys.argv[3],1))"
    return f"python3 -c {json.dumps(program)} {json.dumps(path)} {json.dumps(turn.old)} {json.dumps(turn.new)}"


# ---------------------------------------------------------------------------
# The HTTP server
# ---------------------------------------------------------------------------


class ScriptedModel:
    """The server.  ``start()``/``stop()`` or use it as a context manager.

    ``workdir`` resolves relative paths of file steps.  ``side_reply`` is the
    text given to side requests.  ``exhausted_reply`` is the final answer once
    the script has no turn for a position.  ``log`` (a path) appends one JSON
    line per request; ``echo`` prints one line per request to stderr.
    """

    def __init__(
        self,
        script: Sequence[Step] = (),
        *,
        port: int = 0,
        workdir: str | None = None,
        side_reply: str = DEFAULT_SIDE_REPLY,
        exhausted_reply: str = DEFAULT_EXHAUSTED_REPLY,
        side_usage: Usage = Usage(10, 1, 0, 0, 1),
        log: str | None = None,
        echo: bool = False,
        after_text: dict[str, Sequence[Step]] | None = None,
    ):
        self._port = port
        self.workdir = workdir
        self.side_reply = side_reply
        self.exhausted_reply = exhausted_reply
        self.side_usage = side_usage
        self._log_path = log
        self._echo = echo
        self._lock = threading.Lock()
        self._plan = _Plan(script)
        self._switches = [_Switch(m, steps) for m, steps in (after_text or {}).items()]
        self._exchanges: list[Exchange] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> ScriptedModel:
        handler = type("_BoundHandler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer((LISTEN_HOST, self._port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """Base URL without the API prefix (Claude's ANTHROPIC_BASE_URL).
        Codex wants ``url + "/v1"``."""
        return f"http://{LISTEN_HOST}:{self.port}"

    # -- script control ------------------------------------------------------

    def set_script(self, script: Sequence[Step], after_text: dict[str, Sequence[Step]] | None = None) -> None:
        """Replace the script (records are kept); ``after_text``: marker -> the steps served from the
        first request carrying the marker on (see the module docstring)."""
        with self._lock:
            self._plan = _Plan(script)
            self._switches = [_Switch(m, steps) for m, steps in (after_text or {}).items()]

    def switched_at(self, marker: str) -> int | None:
        """The conversation position at which ``marker`` switched the script (None: it has not)."""
        with self._lock:
            return next((sw.at_position for sw in self._switches if sw.marker == marker), None)

    def requests_containing(self, text: str, kinds: Iterable[str] = ("turn",)) -> list[Exchange]:
        """The recorded requests of these kinds whose body holds ``text`` (in any string), in order."""
        wanted = set(kinds)
        return [e for e in self.exchanges if e.kind in wanted and _holds_text(e.body, text)]

    def first_request_containing(self, text: str, kinds: Iterable[str] = ("turn",)) -> Exchange | None:
        """The first recorded request of these kinds whose body holds ``text`` (None: none yet)."""
        found = self.requests_containing(text, kinds)
        return found[0] if found else None

    # -- records -----------------------------------------------------------

    @property
    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def turn_requests(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.kind == "turn"]

    def tool_outputs(self) -> list[ToolOutput]:
        """Every tool result received, in order, once per call id."""
        seen: set[str] = set()
        out: list[ToolOutput] = []
        for exchange in self.exchanges:
            for result in exchange.tool_outputs:
                if result.call_id not in seen:
                    seen.add(result.call_id)
                    out.append(result)
        return out

    def usage_served(self, kinds: Iterable[str] = ("turn",)) -> Usage:
        """Sum of the usage reported in successful answers of these kinds."""
        total = ZERO_USAGE
        wanted = set(kinds)
        for e in self.exchanges:
            if e.kind in wanted and e.usage is not None:
                total = total + e.usage
        return total

    # -- request handling (called from handler threads) ----------------------

    def _decide(self, dialect: type, body: dict, headers: dict) -> tuple[str, int | None, Any]:
        """What to answer: ("fail", pos, Fail) | ("turn", pos, Turn) |
        ("exhausted", pos, Reply) | ("side", None, Reply)."""
        if dialect.is_side_request(body, headers):
            return "side", None, Reply(self.side_reply, usage=self.side_usage)
        position = dialect.position(body)
        with self._lock:
            plan, offset = self._plan, 0
            if self._switches:
                plan, offset = self._switched_plan(body, position)
            fail = plan.take_fault(position - offset)
            if fail is not None:
                return "fail", position, fail
            if position - offset < len(plan.turns):
                return "turn", position, plan.turns[position - offset]
        return "exhausted", position, Reply(self.exhausted_reply)

    def _switched_plan(self, body: dict, position: int) -> tuple[_Plan, int]:
        """(plan, the position its turn 0 is served at) for a main-loop request; under the lock."""
        for sw in self._switches:
            if sw.at_position is None and _holds_text(body, sw.marker):
                sw.at_position = position
                sw.order = 1 + max(s.order for s in self._switches)
        live = [sw for sw in self._switches if sw.at_position is not None and position >= sw.at_position]
        if not live:
            return self._plan, 0
        sw = max(live, key=lambda s: s.order)
        return sw.plan, sw.at_position

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            exchange.seq = len(self._exchanges)
            self._exchanges.append(exchange)
        if self._echo:
            tools = "".join(f" [{t.call_id}: {t.output[:60]!r}]" for t in exchange.tool_outputs)
            print(
                f"[scripted-model] #{exchange.seq} {exchange.method} {exchange.path} "
                f"model={exchange.model} pos={exchange.position} -> {exchange.status} "
                f"{exchange.served}{tools}",
                file=sys.stderr,
                flush=True,
            )
        if self._log_path:
            line = json.dumps(exchange.summary() | {"headers": exchange.headers})
            with self._lock, open(self._log_path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")


def _holds_text(obj: Any, text: str) -> bool:
    """Whether any string inside a decoded JSON body (keys included) contains ``text``."""
    if isinstance(obj, str):
        return text in obj
    if isinstance(obj, dict):
        return any(_holds_text(k, text) or _holds_text(v, text) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_holds_text(v, text) for v in obj)
    return False


class _Switch:
    """An alternative plan served once a request carries ``marker``."""

    def __init__(self, marker: str, steps: Sequence[Step]):
        self.marker = marker
        self.plan = _Plan(steps)
        self.at_position: int | None = None  # the position of the request that switched
        self.order = 0  # switches happen in this order (the latest one is served)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: ScriptedModel  # set on the bound subclass
    server_version = "scripted-model/1"

    def log_message(self, format: str, *args: Any) -> None:  # silence stdlib logging
        pass

    def do_HEAD(self) -> None:
        # Claude Code probes the base URL with HEAD / before its first request.
        exchange = self._new_exchange("HEAD", None)
        exchange.served, exchange.status = "200", 200
        self._answer_plain(200, b"")
        self.model._record(exchange)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    # -- plumbing --------------------------------------------------------------

    def _new_exchange(self, method: str, body: Any) -> Exchange:
        return Exchange(
            seq=-1,
            at=time.time(),
            method=method,
            path=self.path,
            dialect=None,
            kind="aux",
            model=body.get("model") if isinstance(body, dict) else None,
            position=None,
            served="",
            status=0,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _answer_plain(
        self, status: int, data: bytes, content_type: str = "application/json", extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _answer_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._answer_plain(status, json.dumps(payload).encode(), extra=extra)

    def _answer_stream(self, events: Iterable[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in events:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- routing ---------------------------------------------------------------

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._read_body()
        base = self._new_exchange(method, body)

        if method == "POST" and path == "/v1/messages/count_tokens":
            text = json.dumps(body) if body is not None else ""
            base.dialect, base.served, base.status = ANTHROPIC, "count_tokens", 200
            self._answer_json(200, {"input_tokens": max(1, len(text) // 4)})
            self.model._record(base)
            return

        dialect = _DIALECTS.get(path)
        if method != "POST" or dialect is None or not isinstance(body, dict):
            base.served, base.status = "404", 404
            self._answer_json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {method} {path}"}}
            )
            self.model._record(base)
            return

        base.dialect = dialect.name
        outcome, position, step = self.model._decide(dialect, body, base.headers)
        base.kind = "side" if outcome == "side" else "turn"
        base.position = position
        base.tool_outputs = dialect.new_tool_outputs(body)

        if outcome == "fail":
            base.served, base.status = f"fail {step.status}", step.status
            self._answer_json(step.status, dialect.error_body(step.status, step.message), step.response_headers())
            self.model._record(base)
            return

        model_name = body.get("model") or "scripted"
        rendered = dialect.render_turn(step, position or 0, body, self.model.workdir)
        base.usage = step.usage
        base.status = 200
        base.served = {"side": "side", "exhausted": "exhausted"}.get(outcome, f"turn {position}: {type(step).__name__}")
        # Record before answering: once the client sees the answer it may
        # already send the next request.
        self.model._record(base)
        if body.get("stream"):
            self._answer_stream(dialect.stream(rendered, model_name, step.usage))
        else:
            self._answer_json(200, dialect.message(rendered, model_name, step.usage))


# ---------------------------------------------------------------------------
# Scripts as JSON (for the command line)
# ---------------------------------------------------------------------------


def _usage_from(spec: dict | None, default: Usage) -> Usage:
    return Usage(**(asdict(default) | (spec or {})))


def steps_from_json(doc: dict | list) -> list[Step]:
    """Build steps from a JSON script.

    ``{"usage": {...}, "turns": [...]}`` or a bare list of turns.  A turn is
    one of ``{"run": CMD}``, ``{"write": PATH, "content": TEXT}``,
    ``{"edit": PATH, "old": A, "new": B}``, ``{"tool": NAME, "input": {...}}``,
    ``{"reply": TEXT}``, ``{"fail": STATUS, "times": N, "retry_after": S,
    "should_retry": BOOL, "headers": {...}}``, or ``{"repeat": TURN, "times":
    N}``; any turn may carry its own ``"usage"``, e.g. ``{"run": "ls",
    "usage": {"input_tokens": 500, "output_tokens": 30}}``.
    """
    default = Usage()
    turns = doc
    if isinstance(doc, dict):
        default = _usage_from(doc.get("usage"), default)
        turns = doc.get("turns", [])

    def build(spec: dict) -> list[Step]:
        usage = _usage_from(spec.get("usage"), default)
        if "repeat" in spec:
            return build(spec["repeat"]) * int(spec.get("times", 1))
        if "run" in spec:
            return [Run(spec["run"], usage=usage)]
        if "write" in spec:
            return [WriteFile(spec["write"], spec.get("content", ""), usage=usage)]
        if "edit" in spec:
            return [EditFile(spec["edit"], spec["old"], spec["new"], usage=usage)]
        if "tool" in spec:
            return [CallTool(spec["tool"], spec.get("input", {}), usage=usage)]
        if "reply" in spec:
            return [Reply(spec["reply"], usage=usage)]
        if "fail" in spec:
            return [
                Fail(
                    int(spec["fail"]),
                    times=spec.get("times"),
                    retry_after=spec.get("retry_after"),
                    should_retry=spec.get("should_retry"),
                    message=spec.get("message"),
                    headers=dict(spec.get("headers") or {}),
                )
            ]
        raise ValueError(f"unknown script turn: {spec!r}")

    steps: list[Step] = []
    for spec in turns:
        steps.extend(build(spec))
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a scripted model on 127.0.0.1.")
    parser.add_argument("--script", required=True, help="JSON script file (see steps_from_json)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--workdir", help="directory that relative file paths resolve against")
    parser.add_argument("--log", help="append one JSON line per request to this file")
    parser.add_argument("--duration", type=float, default=3600.0, help="stop after this many seconds (default 3600)")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as fh:
        steps = steps_from_json(json.load(fh))
    model = ScriptedModel(steps, port=args.port, workdir=args.workdir, log=args.log, echo=True)
    model.start()
    print(f"scripted model listening on {model.url} ({len(steps)} steps)", file=sys.stderr, flush=True)
    try:
        time.sleep(args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
