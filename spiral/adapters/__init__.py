"""Log adapters: each native format in, normalised ToolCalls out."""

from __future__ import annotations

from spiral.adapters.base import Adapter
from spiral.adapters.claude import ClaudeAdapter
from spiral.adapters.codex import CodexAdapter
from spiral.adapters.generic import GenericAdapter

_BY_FORMAT: dict[str, type[Adapter]] = {
    "claude-stream-json": ClaudeAdapter,
    "claude-transcript": ClaudeAdapter,
    "codex-json": CodexAdapter,
    "generic": GenericAdapter,
}
FORMATS = tuple(_BY_FORMAT)


def make_adapter(fmt: str, workdir: str | None = None) -> Adapter:
    try:
        return _BY_FORMAT[fmt](workdir)
    except KeyError:
        raise ValueError(f"unknown log format {fmt!r} (known: {', '.join(FORMATS)})") from None


__all__ = ["Adapter", "FORMATS", "make_adapter"]
