"""Convert a public agent trajectory into the project's generic event log (deterministic).

    .venv/bin/python tools/convert_trajectory.py FORMAT IN_FILE OUT_FILE [--utc-offset=+HH:MM]

Writes one envelope a tool call, `{"ts": "<ISO-8601 UTC>", "data": <generic call>}`, the generic
call being `{"tool": ..., "command"/"path": ..., "exit_code": N, "output": "...", "is_error": true,
"denied": true}` (spiral/adapters/generic.py). A call's time is when the agent issued it; its result
is folded into the same line; a Read/Edit/Write path inside the session's working directory is made
relative to it, as the Claude adapter does with a transcript's `cwd` (--workdir, or the format's own
record of it); it prints that directory, which the label's `workdir:` names (realsessions/README.md).
Same input, same output, byte for byte.

FORMAT is one of:

  claude-export-md  The "Claude Session Export" markdown (`# Claude Session Export`, sections
                    `### Assistant` / `### User`, `> M/D/YYYY, H:MM:SS AM` and the message's content
                    blocks as JSON). The times are the exporter's local wall clock to the second;
                    --utc-offset says what zone that was (default +00:00). Tool names, inputs and
                    results are Claude Code's own (a call repeated under the same id, as the export
                    does around a context compaction, counts once); a result is an error when it says `is_error`,
                    its exit code is parsed from "Exit code N", and a refusal ("The user doesn't
                    want to...", "This command requires approval"...) is `denied`, as the Claude
                    adapter reads them.
  mini-swe-agent    A mini-swe-agent `*.traj.json` (`messages`): each assistant message's one
                    bash block is a Bash call timed by the model response's `extra.response.created`
                    (Unix seconds), its result the next user message's `<returncode>`/`<output>` (a
                    command killed at the step timeout is an error). A reply without exactly one
                    bash block ran nothing (the agent's format error) and is not a call. A v2
                    trajectory (`"trajectory_format": "mini-swe-agent-1.1"`) lists what ran in each
                    assistant message's `extra.actions`: one Bash call an action, its result the
                    `tool` message of the same `tool_call_id` (or, without ids, the next message);
                    a command that raised (`<exception>`, e.g. the step timeout) is an error.
  openhands-events  An OpenHands event stream: a folder of `<id>.json` events (the session store's
                    `events/`) or one JSON file holding the list. Each agent action is a call at its
                    `timestamp` (OpenHands writes naive times; --utc-offset says their zone): `run`
                    is Bash (`args.command`, the observation's `extras.metadata.exit_code`), `read` a
                    Read and `edit` an Edit of `args.path`, any other action (think, task_tracking,
                    browse...) a call of that name; `message`, `system`, `recall` and `finish` are
                    not tool calls. Results join by the observation's `cause`.
  openhands-output  One line of an OpenHands evaluation `output.jsonl` (`instance_id`, `history`):
                    --instance=ID picks the line (or --line=N, 1-based); its `history` is read as
                    an `openhands-events` stream (same calls, times and results).

Errors are one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path
from typing import Any

import orjson

FORMATS = ("claude-export-md", "mini-swe-agent", "openhands-events", "openhands-output")
OUTPUT_CHARS = 4000  # an output excerpt is enough for the detector's fingerprints

_SECTION = re.compile(r"^### (Assistant|User)\n> ([^\n]+)\n\n(.*)$", re.S)
_EXPORT_TIME = "%m/%d/%Y, %I:%M:%S %p"
_EXIT = re.compile(r"Exit code (-?\d{1,9})$", re.M)
_DENIED = ("This command requires approval", "Claude requested permissions to ", "The user doesn't want to ")
_DENIED_BLOCKED = " was blocked. For security, Claude Code may only "
_PATH_KEYS = ("file_path", "notebook_path", "path")
_READERS = ("BashOutput", "TaskOutput")
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>(-?\d{1,9})</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_OUTPUT_HEAD = re.compile(r"<output_head>\n?(.*?)</output_head>", re.S)
_OUTPUT_TAIL = re.compile(r"<output_tail>\n?(.*?)</output_tail>", re.S)


class ConvertError(Exception):
    pass


def _iso(ts: dt.datetime) -> str:
    return ts.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset(text: str) -> dt.timezone:
    m = re.fullmatch(r"([+-])(\d\d):(\d\d)", text)
    if not m:
        raise ConvertError(f"--utc-offset {text!r}: expected +HH:MM or -HH:MM")
    minutes = int(m[2]) * 60 + int(m[3])
    return dt.timezone(dt.timedelta(minutes=minutes if m[1] == "+" else -minutes))


def _relative(path: str, workdir: str | None) -> str:
    """A path inside the session's working directory made relative to it (as the Claude adapter does
    with a transcript's `cwd`), so the detector sees the clone's own files; others unchanged."""
    root = workdir.rstrip("/") + "/" if workdir else None
    return path[len(root) :] if root and path.startswith(root) and len(path) > len(root) else path


def _excerpt(text: str) -> str:
    """An output as the detector needs it: whole when short, else its start and its end (where a
    command prints its error and a test run its summary)."""
    if len(text) <= OUTPUT_CHARS:
        return text
    head = OUTPUT_CHARS * 2 // 5
    return text[:head] + "\n...\n" + text[-(OUTPUT_CHARS - head - 5) :]


def _mini_output(obs: str) -> str:
    """A mini-swe-agent observation's output: `<output>`, or for a long one `<output_head>` and
    `<output_tail>` (the agent's own warning about the length left out), else the whole text."""
    output = _OUTPUT.search(obs)
    if output:
        return output[1]
    head, tail = _OUTPUT_HEAD.search(obs), _OUTPUT_TAIL.search(obs)
    if head or tail:
        return (head[1] if head else "") + "\n...\n" + (tail[1] if tail else "")
    return obs


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(parts)
    return None


# ---- claude-export-md --------------------------------------------------------------------


def _export_sections(text: str, tz: dt.timezone) -> list[tuple[dt.datetime, Any]]:
    if not text.startswith("# Claude Session Export"):
        raise ConvertError("not a Claude Session Export (no '# Claude Session Export' heading)")
    out = []
    for section in text.split("\n---\n"):
        m = _SECTION.match(section.strip("\n"))
        if not m:
            continue
        try:
            when = dt.datetime.strptime(m[2].strip(), _EXPORT_TIME).replace(tzinfo=tz)
        except ValueError:
            raise ConvertError(f"unreadable section time {m[2].strip()!r}") from None
        try:
            body = orjson.loads(m[3])
        except orjson.JSONDecodeError:
            body = m[3]  # a typed prompt: plain text, no tool blocks
        out.append((when, body))
    return out


_PROJECT = re.compile(r"^- \*\*Project Path\*\*: `([^`]+)`", re.M)


def _export_call(block: dict[str, Any], result: dict[str, Any] | None, workdir: str | None) -> dict[str, Any]:
    name = block.get("name")
    inp = block.get("input") if isinstance(block.get("input"), dict) else {}
    call: dict[str, Any] = {"tool": name}
    command = inp.get("command")
    if not isinstance(command, str) and name in _READERS:  # which background task it reads
        command = inp.get("bash_id") or inp.get("task_id") or inp.get("shell_id")
    if isinstance(command, str):
        call["command"] = command
    for key in _PATH_KEYS:
        if isinstance(inp.get(key), str):
            call["path"] = _relative(inp[key], workdir)
            break
    if result is None:
        return call
    text = _text(result.get("content"))
    if text is not None:
        call["output"] = _excerpt(text)
    if result.get("is_error") is True:
        call["is_error"] = True
        if text is not None:
            code = _EXIT.match(text)
            if code:
                call["exit_code"] = int(code[1])
            elif text.startswith(_DENIED) or _DENIED_BLOCKED in text[:600]:
                call["denied"] = True
    return call


def export_workdir(text: str) -> str | None:
    """A Claude markdown export's working directory: the Project Path its header names."""
    project = _PROJECT.search(text[:4000])
    return project[1] if project else None


def convert_claude_export(text: str, tz: dt.timezone, workdir: str | None) -> list[tuple[str, dict[str, Any]]]:
    sections = _export_sections(text, tz)
    results: dict[str, dict[str, Any]] = {}
    for _, body in sections:
        for block in body if isinstance(body, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = block
    out, seen = [], set()
    for when, body in sections:
        for block in body if isinstance(body, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                call_id = block.get("id")
                if isinstance(call_id, str) and call_id in seen:
                    continue  # the exporter repeats messages around a context compaction: one call, once
                seen.add(call_id)
                out.append((_iso(when), _export_call(block, results.get(str(call_id)), workdir)))
    return out


# ---- mini-swe-agent ------------------------------------------------------------------------


def convert_mini_swe_agent(text: str) -> list[tuple[str, dict[str, Any]]]:
    try:
        traj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConvertError(f"not JSON: {exc}") from None
    messages = traj.get("messages") if isinstance(traj, dict) else None
    if not isinstance(messages, list):
        raise ConvertError("not a mini-swe-agent trajectory (no `messages` list)")
    if traj.get("trajectory_format") == "mini-swe-agent-1.1":
        return _mini_swe_agent_v2(messages)
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        extra = msg.get("extra")
        response = extra.get("response") if isinstance(extra, dict) else None
        created = response.get("created") if isinstance(response, dict) else None
        if not isinstance(created, int):
            raise ConvertError(f"message {i}: no extra.response.created time")
        blocks = _BASH_BLOCK.findall(msg.get("content") or "")
        if len(blocks) != 1:
            continue  # mini-swe-agent runs nothing unless there is exactly one bash block (a format error)
        call: dict[str, Any] = {"tool": "Bash", "command": blocks[0].strip()}
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        obs = nxt.get("content") if isinstance(nxt, dict) and nxt.get("role") == "user" else None
        if isinstance(obs, str):
            code = _RETURNCODE.search(obs)
            if code:
                call["exit_code"] = int(code[1])
            elif obs.startswith("The last command") and "timed out" in obs[:300]:
                call["is_error"] = True  # killed at the step timeout
            call["output"] = _excerpt(_mini_output(obs))
        out.append((_iso(dt.datetime.fromtimestamp(created, dt.UTC)), call))
    return out


def _mini_swe_agent_v2(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """mini-swe-agent 2.x: each `extra.actions` entry ran; a format error logs no assistant message."""
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        extra = msg.get("extra")
        actions = extra.get("actions") if isinstance(extra, dict) else None
        if not isinstance(actions, list) or not actions:
            continue  # nothing ran
        response = extra.get("response")
        created = response.get("created") if isinstance(response, dict) else None
        if not isinstance(created, int):
            raise ConvertError(f"message {i}: no extra.response.created time")
        following = []  # the observations up to the next assistant message
        for nxt in messages[i + 1 :]:
            if not isinstance(nxt, dict) or nxt.get("role") == "assistant":
                break
            following.append(nxt)
        for n, action in enumerate(actions):
            command = action.get("command") if isinstance(action, dict) else None
            if not isinstance(command, str):
                raise ConvertError(f"message {i}: an action without a `command`")
            call: dict[str, Any] = {"tool": "Bash", "command": command.strip()}
            call_id = action.get("tool_call_id")
            if call_id is not None:
                obs = next((o for o in following if o.get("tool_call_id") == call_id), None)
            else:
                obs = following[n] if n < len(following) else None
            content = obs.get("content") if obs is not None else None
            if isinstance(content, str):
                code = _RETURNCODE.search(content)
                if code:
                    call["exit_code"] = int(code[1])
                if content.startswith("<exception>"):
                    call["is_error"] = True  # raised, e.g. killed at the step timeout
                call["output"] = _excerpt(_mini_output(content))
            out.append((_iso(dt.datetime.fromtimestamp(created, dt.UTC)), call))
    return out


# ---- openhands-events ------------------------------------------------------------------------

_OH_NOT_CALLS = frozenset({"message", "system", "recall", "finish", "change_agent_state"})
_OH_TOOLS = {"run": "Bash", "run_ipython": "IPython", "read": "Read", "edit": "Edit", "write": "Write"}


def read_openhands(path: Path) -> list[dict[str, Any]]:
    """The events of a folder of `<id>.json` files or of one JSON list, in id order."""
    try:
        if path.is_dir():
            events = [orjson.loads(p.read_bytes()) for p in path.iterdir() if p.suffix == ".json"]
        else:
            events = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ConvertError(f"cannot read the events: {exc}") from None
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ConvertError("not an OpenHands event stream (a list of event objects)")
    try:
        return sorted(events, key=lambda e: int(e["id"]))
    except (KeyError, TypeError, ValueError):
        raise ConvertError("an event without an integer `id`") from None


_UPLOADED = re.compile(r"<uploaded_files>\s*(/\S+?)/?\s*</uploaded_files>")


def openhands_workdir(events: list[dict[str, Any]]) -> str | None:
    """The repository an OpenHands task uploaded, when its first prompt names it."""
    for e in events:
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if e.get("action") == "message" and isinstance(args.get("content"), str):
            m = _UPLOADED.search(args["content"])
            return m[1] if m else None
    return None


def convert_openhands(
    events: list[dict[str, Any]], tz: dt.timezone, workdir: str | None
) -> list[tuple[str, dict[str, Any]]]:
    results = {str(e.get("cause")): e for e in events if e.get("observation") and e.get("cause") is not None}
    out = []
    for e in events:
        action = e.get("action")
        if e.get("source") != "agent" or not isinstance(action, str) or action in _OH_NOT_CALLS:
            continue
        try:
            when = dt.datetime.fromisoformat(str(e.get("timestamp")))
        except ValueError:
            raise ConvertError(f"event {e.get('id')}: unreadable timestamp {e.get('timestamp')!r}") from None
        when = when if when.tzinfo else when.replace(tzinfo=tz)
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        call: dict[str, Any] = {"tool": _OH_TOOLS.get(action, action)}
        if action in ("run", "run_ipython") and isinstance(args.get("command") or args.get("code"), str):
            call["command"] = args.get("command") or args.get("code")
        elif isinstance(args.get("path"), str):
            call["path"] = _relative(args["path"], workdir)
        obs = results.get(str(e.get("id")))
        if obs is not None:
            if isinstance(obs.get("content"), str):
                call["output"] = _excerpt(obs["content"])
            extras = obs.get("extras") if isinstance(obs.get("extras"), dict) else {}
            meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
            code = meta.get("exit_code", extras.get("exit_code"))
            if isinstance(code, int) and not isinstance(code, bool) and code != -1:
                call["exit_code"] = code
            if obs.get("observation") == "error":
                call["is_error"] = True
            elif obs.get("observation") == "edit" and str(obs.get("content") or "").startswith("ERROR:"):
                call["is_error"] = True  # OpenHands 1.x reports a refused str_replace as an edit observation
        out.append((_iso(when), call))
    return out


# ---- openhands-output --------------------------------------------------------------------------


def read_openhands_output(path: Path, instance: str | None, line: int | None) -> list[dict[str, Any]]:
    """The `history` of one line of an OpenHands eval `output.jsonl`, as an event stream in id order."""
    if (instance is None) == (line is None):
        raise ConvertError("openhands-output needs --instance=ID or --line=N")
    try:
        rows = path.read_bytes().splitlines()
    except OSError as exc:
        raise ConvertError(f"cannot read: {exc}") from None
    picked = None
    for n, raw in enumerate(rows, 1):
        if not raw.strip() or (line is not None and n != line):
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ConvertError(f"line {n}: not JSON") from None
        if line is not None or (isinstance(row, dict) and row.get("instance_id") == instance):
            picked = row
            break
    if not isinstance(picked, dict):
        raise ConvertError(f"no line for {'instance ' + repr(instance) if instance is not None else f'line {line}'}")
    events = picked.get("history")
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ConvertError("the line has no `history` list of event objects")
    try:
        return sorted(events, key=lambda e: int(e["id"]))
    except (KeyError, TypeError, ValueError):
        raise ConvertError("a history event without an integer `id`") from None


# ---- CLI ---------------------------------------------------------------------------------------


def convert(
    fmt: str,
    source: Path,
    tz: dt.timezone,
    workdir: str | None = None,
    instance: str | None = None,
    line: int | None = None,
) -> tuple[bytes, str | None]:
    """The generic event log, and the working directory its paths were made relative to (None:
    unknown; a label's `workdir:` names it, so a replay reads the commands' paths the same way)."""
    if fmt in ("openhands-events", "openhands-output"):
        events = read_openhands(source) if fmt == "openhands-events" else read_openhands_output(source, instance, line)
        workdir = workdir or openhands_workdir(events)
        calls = convert_openhands(events, tz, workdir)
    else:
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConvertError(f"cannot read: {exc}") from None
        if fmt == "claude-export-md":
            workdir = workdir or export_workdir(text)
            calls = convert_claude_export(text, tz, workdir)
        else:
            calls, workdir = convert_mini_swe_agent(text), None  # (bash only: no path is made relative)
    if not calls:
        raise ConvertError("no tool calls found")
    return b"".join(orjson.dumps({"ts": ts, "data": data}) + b"\n" for ts, data in calls), workdir


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="convert_trajectory.py",
        description="Convert a public agent trajectory into the generic event log (one envelope a tool call).",
    )
    parser.add_argument("format", choices=FORMATS, help="the input's format")
    parser.add_argument("input", type=Path, help="the trajectory file (openhands-events: or its events folder)")
    parser.add_argument("output", type=Path, help="where to write the generic events (.jsonl)")
    parser.add_argument(
        "--utc-offset",
        default="+00:00",
        help="the zone of naive times (claude-export-md, openhands-events), as --utc-offset=-05:00 (default +00:00)",
    )
    parser.add_argument(
        "--workdir",
        help="the session's working directory: Read/Edit/Write paths inside it are made relative to it "
        "(default: claude-export-md its Project Path, openhands-events the task's <uploaded_files> folder)",
    )
    parser.add_argument("--instance", help="openhands-output: the `instance_id` of the output.jsonl line to convert")
    parser.add_argument("--line", type=int, help="openhands-output: the 1-based number of the line to convert")
    args = parser.parse_args(argv)
    try:
        tz = _offset(args.utc_offset)
        data, workdir = convert(args.format, args.input, tz, args.workdir, args.instance, args.line)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_bytes(data)
    except ConvertError as exc:
        print(f"convert_trajectory.py: {args.input}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"convert_trajectory.py: {args.output}: cannot write: {exc}", file=sys.stderr)
        return 2
    calls = data.count(b"\n")
    print(
        f"{args.output}: {calls} tool calls"
        + (f", paths relative to {workdir} (a label's `workdir:`)" if workdir else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
