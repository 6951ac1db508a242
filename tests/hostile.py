"""Hostile log lines for the adapter fuzz test (tests/spiral/test_fuzz_adapters.py) and speedbench/fuzz.py.

Three kinds, as hypothesis strategies:
- `skippable(fmt)`: native payloads the adapter of `fmt` must skip and count
  exactly once, with no call and no effect on the calls around them (a `type`
  that is a list, a message that is a number, an item whose id is an object...);
- `bad_line()`: events.jsonl lines that are no envelope at all (torn JSON,
  invalid UTF-8, nesting past the parser's limit, NaN, a bad `ts`, 1 MB of
  garbage): skipped and counted by the reader;
- `mutated(payloads)`: a valid payload with one value anywhere in it replaced
  by a hostile one, or removed: anything may happen but an exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from spiral.envelope import parse_envelope

FORMATS = ("claude-stream-json", "claude-transcript", "codex-json", "generic")
# a spiraling corpus case of each format: its verdict (page time, signals) is the one to keep
CASES = {
    "claude-stream-json": "spiral-003-bg-polling",
    "claude-transcript": "spiral-transcript-until-wait",
    "codex-json": "spiral-codex-versioned-repros",
    "generic": "spiral-generic-edit-pingpong",
}
MB = 1 << 20


def nested(depth: int, leaf: Any = 0, as_dict: bool = False) -> Any:
    """`depth` levels of lists (or objects) around `leaf`, built without recursion."""
    out = leaf
    for _ in range(depth):
        out = {"a": out} if as_dict else [out]
    return out


# ---- hostile values -----------------------------------------------------------------------

_NUMERIC_TEXT = st.sampled_from(["0", "1", "-1", "1e400", "NaN", "Infinity", "0x1f", "9" * 5000, "٣", "1_000"])
_ODD_TEXT = st.sampled_from(["", "\ud800", "a\udfffb", "\x00", "\x1b[31m", "é" * 3, "Exit code " + "9" * 5000])
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    _NUMERIC_TEXT,
    _ODD_TEXT,
)


@st.composite
def _big(draw: st.DrawFn) -> Any:
    """A 1 MB string, or nesting near (or, for Python values, past) JSON parsers' depth limits."""
    kind = draw(st.sampled_from(["str", "list", "dict", "deep"]))
    if kind == "str":
        return draw(st.sampled_from(["x", "é", "\n", "Exit code 1\n"])) * draw(st.sampled_from([MB, MB // 4]))
    if kind == "deep":
        return nested(5000)  # only as a Python value: no JSON parser takes it
    return nested(draw(st.integers(min_value=50, max_value=1000)), as_dict=kind == "dict")


HOSTILE = st.one_of(
    _SCALAR,
    st.recursive(
        _SCALAR,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=8,
    ),
    _big(),
)
NOT_STR = HOSTILE.filter(lambda v: not isinstance(v, str))
NOT_DICT = HOSTILE.filter(lambda v: not isinstance(v, dict))
NOT_DICT_NOT_NONE = NOT_DICT.filter(lambda v: v is not None)
NOT_STR_NOT_NONE = NOT_STR.filter(lambda v: v is not None)
UNKNOWN_KIND = st.text(max_size=10).map(lambda s: "x-" + s)  # a type no format knows


def jsonable(v: Any) -> bool:
    """Can the value be written as a JSON line (of an events.jsonl)?"""
    try:
        line = orjson.dumps(v)
    except (TypeError, orjson.JSONEncodeError):
        return False
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


# ---- payloads each adapter must skip and count, once ---------------------------------------


def skippable(fmt: str) -> st.SearchStrategy[Any]:
    top = NOT_DICT  # not an object at all
    if fmt == "generic":
        return st.one_of(
            top,
            st.fixed_dictionaries({"tool": NOT_STR, "command": HOSTILE, "path": HOSTILE}),
            st.fixed_dictionaries({"type": HOSTILE, "command": st.just("ls")}),
        )
    wrong_type = st.fixed_dictionaries({"type": NOT_STR_NOT_NONE}, optional={"message": HOSTILE, "item": HOSTILE})
    unknown = st.fixed_dictionaries({"type": UNKNOWN_KIND}, optional={"payload": HOSTILE})
    if fmt.startswith("claude"):
        return st.one_of(
            top,
            wrong_type,
            unknown,
            st.fixed_dictionaries({"type": st.sampled_from(["assistant", "user"]), "message": NOT_DICT}),
            st.fixed_dictionaries(
                {
                    "type": st.just("assistant"),
                    "message": st.fixed_dictionaries(
                        {
                            "content": st.tuples(
                                st.fixed_dictionaries(
                                    {"type": st.just("tool_use"), "id": NOT_STR, "name": NOT_STR, "input": HOSTILE}
                                )
                            ).map(list)
                        }
                    ),
                }
            ),
        )
    return st.one_of(  # codex-json
        top,
        wrong_type,
        unknown,
        st.fixed_dictionaries({"msg": HOSTILE}),  # no type, and not the legacy header (no id, no instructions)
        st.fixed_dictionaries({"type": st.sampled_from(["item.started", "item.completed"]), "item": NOT_DICT}),
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["item.started", "item.completed"]),
                "item": st.fixed_dictionaries(
                    {
                        "id": NOT_STR_NOT_NONE.filter(lambda v: type(v) is not int),
                        "type": st.sampled_from(["command_execution", "file_change", "mcp_tool_call"]),
                        "command": HOSTILE,
                        "server": HOSTILE,
                    }
                ),
            }
        ),
        st.fixed_dictionaries({"type": st.just("response_item"), "payload": NOT_DICT}),
        st.fixed_dictionaries(
            {
                "type": st.just("response_item"),
                "payload": st.fixed_dictionaries(
                    {"type": st.just("function_call"), "name": NOT_STR_NOT_NONE, "call_id": HOSTILE}
                ),
            }
        ),
    )


# ---- lines that are no envelope ------------------------------------------------------------


def _clean(b: bytes) -> bytes:
    # one line stays one line for every reader (bytes.splitlines also splits at \r)
    return b.replace(b"\n", b" ").replace(b"\r", b" ")


@st.composite
def bad_line(draw: st.DrawFn, valid: list[bytes] | None = None) -> bytes:
    """One events.jsonl line (no newline) that is not a readable envelope."""
    kind = draw(st.sampled_from(["torn", "utf8", "deep", "nan", "top", "ts", "nodata", "garbage", "huge"]))
    base = draw(st.sampled_from(valid)).rstrip(b"\n") if valid else b'{"ts":"2026-05-20T09:00:00Z","data":{}}'
    if kind == "torn":
        out = base[: draw(st.integers(min_value=1, max_value=len(base) - 1))]
    elif kind == "utf8":
        at = draw(st.integers(min_value=0, max_value=len(base)))
        out = (
            base[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])) + base[at:]
        )
    elif kind == "deep":
        d = draw(st.integers(min_value=1025, max_value=3000))
        out = b'{"ts":"2026-05-20T09:00:00Z","data":' + b"[" * d + b"]" * d + b"}"
    elif kind == "nan":
        lit = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400"]))
        out = draw(
            st.sampled_from([b'{"ts":' + lit + b',"data":{}}', b'{"ts":"2026-05-20T09:00:00Z","data":' + lit + b"}"])
        )
    elif kind == "top":
        out = orjson.dumps(draw(NOT_DICT.filter(jsonable)))
    elif kind == "ts":
        ts = draw(
            st.one_of(
                NOT_STR.filter(lambda v: isinstance(v, (list, dict, bool)) or v is None),
                st.sampled_from(["", "yesterday", "2026-13-45T99:00:00Z", "2026-05-20T09:00:0xZ"]),
            ).filter(jsonable)
        )
        out = orjson.dumps({"ts": ts, "data": {"type": "assistant"}})
    elif kind == "nodata":
        out = orjson.dumps({"ts": "2026-05-20T09:00:00Z", "payload": draw(HOSTILE.filter(jsonable))})
    elif kind == "huge":
        out = b'{"ts":"2026-05-20T09:00:00Z","data":"' + b"x" * MB
    else:
        out = draw(st.binary(min_size=1, max_size=200))
    out = _clean(out)
    if not out.strip() or parse_envelope(out) is not None:
        out = b"\xff" + out  # whitespace is not a line; a lucky parse is not garbage
    return out


# ---- mutations of valid payloads -----------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, payloads: list[Any]) -> Any:
    """A copy of one valid payload with one value anywhere in it replaced by a hostile one (or removed)."""
    root = orjson.loads(orjson.dumps(draw(st.sampled_from(payloads))))
    holder: Any = None
    key: Any = None
    node = root
    while isinstance(node, (dict, list)) and node and draw(st.integers(min_value=0, max_value=3)) > 0:
        holder = node
        key = draw(st.sampled_from(sorted(node))) if isinstance(node, dict) else draw(st.integers(0, len(node) - 1))
        node = node[key]
    value = draw(HOSTILE)
    if holder is None:
        return {**root, "type": value} if isinstance(root, dict) and draw(st.booleans()) else value
    if isinstance(holder, dict) and draw(st.integers(min_value=0, max_value=5)) == 0:
        del holder[key]
    else:
        holder[key] = value
    return root


# ---- a case's valid lines ------------------------------------------------------------------


def envelopes(events: Path) -> list[tuple[bytes, float, Any]]:
    """(line, ts, payload) of each envelope of an events.jsonl."""
    out = []
    for line in events.read_bytes().splitlines(keepends=True):
        env = parse_envelope(line)
        if env is not None:
            out.append((line, env[0], env[1]))
    return out


def envelope_line(ts: float, data: Any) -> bytes:
    return orjson.dumps({"ts": ts, "data": data}) + b"\n"
