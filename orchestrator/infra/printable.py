"""Text from a log, a hook or a query, made safe to print on a terminal.

An agent's command, a failed check's output or a file name may hold terminal escapes
(`ESC ]0;title BEL` sets the window title, `ESC [2J` clears the screen) or bidi overrides that
reorder what a person reads. Shown here as visible escapes (`\\x1b`), so the text is read, not run.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character but tab and newline shown as an escape."""
    return text if text.isprintable() else _UNSAFE.sub(_escape, text)
