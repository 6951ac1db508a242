"""The one YAML reader: strict, with the line of every value kept for errors.

PyYAML speaks YAML 1.1, where `1:30` is the number 90, `off` is False and a
duplicate key silently wins. Configuration must not mean something other
than what it looks like, so those are refused here with file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orchestrator.infra.errors import UserError

Lines = dict[tuple[Any, ...], int]

_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_PLAIN_BOOLS = {"true", "false"}
# libyaml's composer when present (10x faster); it keeps the same line marks
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# an alias repeats its anchor's whole value: a few nested ones expand a small file into billions
# of values ("billion laughs"); refused before anything is expanded, by counting what would be
MAX_VALUES = 100_000


class YamlError(UserError):
    pass


def load_text(text: str, source: str) -> tuple[Any, Lines]:
    """Parse YAML text strictly; returns (data, {key path: line number})."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise YamlError(f"{source}:{line}: not valid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{source}: not valid YAML: {exc}") from None
    if node is None:
        return None, {}
    _check_size(node, source)
    lines: Lines = {}
    constructor = yaml.SafeLoader("")
    return _convert(node, (), lines, source, constructor), lines


def _check_size(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand past MAX_VALUES values, or refer to themselves."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return 1
        if key in open_nodes:
            raise YamlError(f"{source}:{node.start_mark.line + 1}: a YAML alias refers to its own anchor")
        open_nodes.add(key)
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_VALUES:
                raise YamlError(
                    f"{source}:{node.start_mark.line + 1}: YAML aliases expand to more than {MAX_VALUES} values; "
                    f"write the values out"
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)


def load_file(path: Path) -> tuple[Any, Lines]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise YamlError(f"{path}: no such file") from None
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise YamlError(f"{path}: not UTF-8 text") from None
    return load_text(text, str(path))


def line_of(lines: Lines, path: tuple[Any, ...]) -> int:
    """The line of the deepest known prefix of `path` (0 when unknown)."""
    for cut in range(len(path), -1, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return 0


def _convert(node: yaml.Node, path: tuple[Any, ...], lines: Lines, source: str, constructor: yaml.SafeLoader) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlError(f"{source}:{key_node.start_mark.line + 1}: YAML merge keys (<<) are not supported")
            key = _convert(key_node, path + ("<key>",), lines, source, constructor)
            if not isinstance(key, (str, int)):
                raise YamlError(f"{source}:{key_node.start_mark.line + 1}: mapping keys must be plain text")
            if key in out:
                raise YamlError(f"{source}:{key_node.start_mark.line + 1}: duplicate key {key!r}")
            out[key] = _convert(value_node, path + (key,), lines, source, constructor)
        lines.pop(path + ("<key>",), None)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(n, path + (i,), lines, source, constructor) for i, n in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)
    line = node.start_mark.line + 1
    if not node.style:  # only plain scalars are implicitly typed (libyaml says "", PyYAML None)
        if node.tag == _BOOL_TAG and node.value.lower() not in _PLAIN_BOOLS:
            raise YamlError(
                f"{source}:{line}: {node.value!r} reads as a boolean in YAML 1.1; write true/false, or quote it"
            )
        if node.tag in (_INT_TAG, _FLOAT_TAG) and ":" in node.value:
            raise YamlError(
                f"{source}:{line}: {node.value!r} reads as a base-60 number in YAML 1.1; "
                f"quote it or write the plain number"
            )
        if node.tag == _INT_TAG and node.value.lstrip("+-").startswith(("0o", "0x", "0b")):
            raise YamlError(f"{source}:{line}: {node.value!r} is not a plain decimal number")
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise YamlError(f"{source}:{line}: {exc}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp on 2026-02-30
        raise YamlError(f"{source}:{line}: {node.value!r} is not a valid value: {exc}") from None


class Complaints:
    """One-line errors that point at the file and line of the offending key."""

    def __init__(self, source: str, lines: Lines, fallback_line: int = 0) -> None:
        self.source, self.lines, self.fallback_line = source, lines, fallback_line

    def __call__(self, key_path: tuple[Any, ...], message: str) -> UserError:
        return UserError(f"{self.source}:{line_of(self.lines, key_path) or self.fallback_line}: {message}")
