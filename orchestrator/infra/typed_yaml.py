"""Strict-YAML mappings into msgspec Structs, with our one-line `file:line: message` errors.

A schema is a `Strict` Struct. msgspec checks types (a bool is not a number,
1.5 is not an int), unknown and missing keys, and `Meta` constraints; what a
field must be, in our words, is its `Meta(description=...)`. Checks that types
cannot express raise `Invalid` from `__post_init__`. msgspec reports where it
failed as a path (`$.agents[...].command[0]`, dict keys elided); `convert`
finds the key, the line, and phrases the message.
"""

from __future__ import annotations

import re
import sys
import types
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import msgspec
from msgspec import Meta

from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact
from orchestrator.infra.yamlfile import Complaints

T = TypeVar("T")
# `le` the largest float refuses inf (msgspec takes finite bounds only); NaN fails every bound
_FINITE = sys.float_info.max
PositiveFloat = Annotated[float, Meta(gt=0, le=_FINITE, description="must be a positive number")]
NonNegativeFloat = Annotated[float, Meta(ge=0, le=_FINITE, description="must be a non-negative number")]
Paths = Annotated[tuple[Annotated[str, Meta(min_length=1)], ...], Meta(description="must be a list of paths")]
FreeMapping = Annotated[dict[Any, Any], Meta(description="must be a mapping")]

_AT = re.compile(r"(?P<msg>.*?)(?: - at `(?P<in_key>key` in `)?\$(?P<path>[^`]*)`)?", re.S)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])")
_UNKNOWN = re.compile(r"Object contains unknown field `(.*)`")
_MISSING = re.compile(r"Object missing required field `(.*)`")
_EXPECTED = re.compile(r"Expected `(\w+)(?: \| null)?`, got `\w+`")
_NOUNS = {"str": "text", "int": "a whole number", "float": "a number", "bool": "true or false"}
_NOUNS |= {"array": "a list", "object": "a mapping"}


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    """A YAML mapping with a fixed set of keys."""


class Invalid(ValueError):
    """Raised from `__post_init__`: the value at `key` (inside the Struct) fails `predicate`."""

    def __init__(self, key: str | tuple[Any, ...], predicate: str) -> None:
        super().__init__(predicate)
        self.key = (key,) if isinstance(key, str) else key
        self.predicate = predicate


def one_of(names: tuple[str, ...]) -> Meta:
    alternatives = "|".join(map(re.escape, names))
    return Meta(pattern=rf"^(?:{alternatives})\Z", description=f"must be one of {', '.join(names)}")


def convert(data: Any, type_: type[T], fail: Complaints, what: str) -> T:
    """`data` (from yamlfile) as a `type_`; `what` names the whole mapping in errors."""
    try:
        return msgspec.convert(data, type_)
    except msgspec.ValidationError as exc:
        raise _explain(exc, data, type_, fail, what) from None


def _explain(exc: msgspec.ValidationError, data: Any, root: Any, fail: Complaints, what: str) -> UserError:
    at = _AT.fullmatch(str(exc))
    assert at is not None  # every part of the pattern is optional
    msg = at["msg"]
    path = _resolve(at["path"] or "", data, root)

    def name(key_path: tuple[Any, ...]) -> str:
        return _dotted(key_path) or what

    if isinstance(exc.__cause__, Invalid):
        full = path + exc.__cause__.key
        return fail(full, f"{name(full)} {exc.__cause__.predicate}")
    if m := _UNKNOWN.fullmatch(msg):
        known = ", ".join(sorted(f.encode_name for f in msgspec.structs.fields(_unwrap(_type_at(root, path))[0])))
        return fail(path + (m[1],), f"unknown key {_dotted(path + (m[1],))!r} (known: {known})")
    if m := _MISSING.fullmatch(msg):
        return fail(path, f"missing key {_dotted(path + (m[1],))!r}")
    if at["in_key"]:
        mapping = _value_at(data, path)
        bad = next((k for k in mapping if not isinstance(k, str)), None) if isinstance(mapping, dict) else None
        return fail(path + (bad,), f"{name(path)}: the key {bad!r} must be text (quote it)")
    depth, description = _described(root, path)
    if description is None:
        expected = _EXPECTED.fullmatch(msg)
        description = f"must be {_NOUNS.get(expected[1], expected[1])}" if expected else f"is not valid ({msg})"
    value = _value_at(data, path[:depth])
    return fail(path, f"{name(path[:depth])} {description}, got {_shown(value)}{_whole_hint(value, root, path)}")


def _whole_hint(value: Any, root: Any, path: tuple[Any, ...]) -> str:
    """How to write a whole number that YAML read as a float or as text ("2e6" is text to YAML 1.1)."""
    if _unwrap(_type_at(root, path))[0] is not int or isinstance(value, bool):
        return ""
    try:
        number = float(value) if isinstance(value, str | float) else None
    except ValueError:
        return ""
    if number is None or not number.is_integer() or not 0 < abs(number) < 1e18:
        return ""
    return f" (write it as {int(number)})"


def _resolve(text: str, data: Any, root: Any) -> tuple[Any, ...]:
    """msgspec's `$...` path as our key path, with each elided dict key found again."""
    path: tuple[Any, ...] = ()
    for m in _SEGMENT.finditer(text):
        field, index, _ = m.groups()
        if field is not None:
            path += (field,)
        elif index is not None:
            path += (int(index),)
        else:
            path += (_failing_key(_value_at(data, path), _child(_type_at(root, path), None)),)
    return path


def _failing_key(mapping: Any, value_type: Any) -> Any:
    # msgspec stops at the first bad entry, so the first that fails alone is the one
    if value_type is None:
        return "..."
    for key, value in mapping.items() if isinstance(mapping, dict) else ():
        try:
            msgspec.convert(value, value_type)
        except msgspec.ValidationError:
            return key
    return "..."


def _unwrap(tp: Any) -> tuple[Any, str | None]:
    """`tp` without Annotated and `| None`, and the outermost description met on the way."""
    description = None
    while True:
        if get_origin(tp) is Annotated:
            if description is None:
                said = [m.description for m in tp.__metadata__ if isinstance(m, Meta) and m.description]
                description = said[-1] if said else None  # Annotated flattens: the last is the outermost
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, types.UnionType) and len(rest := _not_none(tp)) == 1:
            tp = rest[0]
        else:
            return tp, description


def _not_none(tp: Any) -> list[Any]:
    return [a for a in get_args(tp) if a is not type(None)]


def _child(tp: Any, key: Any) -> Any:
    """The type of `tp`'s member `key` (any key of a dict, any index of a list), or None."""
    tp = _unwrap(tp)[0]
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return next((f.type for f in msgspec.structs.fields(tp) if f.encode_name == key), None)
    args = get_args(tp)
    if get_origin(tp) is dict:
        return args[1]
    if get_origin(tp) in (list, tuple) and args:
        return args[0]
    return None


def _type_at(root: Any, path: tuple[Any, ...]) -> Any:
    tp = root
    for key in path:
        tp = _child(tp, key)
    return tp


def _described(root: Any, path: tuple[Any, ...]) -> tuple[int, str | None]:
    """The deepest prefix of `path` whose type says what it must be, and that description.

    The search stops at a Struct: what a list of strings must be covers its
    items, what `agents` must be does not cover one agent's profile.
    """
    types_on_path = [root]
    for key in path:
        types_on_path.append(_child(types_on_path[-1], key))
    for depth in range(len(path), -1, -1):
        bare, description = _unwrap(types_on_path[depth])
        if description is not None:
            return depth, description
        if isinstance(bare, type) and issubclass(bare, msgspec.Struct):
            break
    return len(path), None


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _dotted(path: tuple[Any, ...]) -> str:
    """("agents", "x", "command", 0) as agents.x.command[0]."""
    out = ""
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            out += f"[{key}]"
        else:
            out += f".{key}" if out else str(key)
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        # the item at fault, not the list: an argv may hold a key beside a mistyped number
        bad = next((i for i, item in enumerate(value) if not isinstance(item, str) or not item), None)
        if bad is not None:
            return f"a list whose item {bad} is {_shown(value[bad])}"
    text = redact(repr(value))  # whatever is shown of a value may be a key pasted in the wrong place
    return text if len(text) <= 60 else text[:57] + "..."
