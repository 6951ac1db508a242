"""Parse `git status --porcelain=v1 -uall` output, with or without -z (pure)."""

from __future__ import annotations


def parse_porcelain(text: str) -> dict[str, str]:
    """path -> two-letter status. Renames are keyed by their new path."""
    if "\0" in text:
        return _parse_z(text)
    out: dict[str, str] = {}
    for line in text.splitlines():
        if len(line) < 4 or line[2] != " ":
            continue
        status, rest = line[:2], line[3:]
        if status[0] in "RC" and " -> " in rest:
            rest = rest.split(" -> ", 1)[1]
        out[_unquote(rest)] = status
    return out


def _parse_z(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = text.split("\0")
    i = 0
    while i < len(parts):
        entry = parts[i]
        i += 1
        if len(entry) < 4 or entry[2] != " ":
            continue
        status = entry[:2]
        out[entry[3:]] = status
        if status[0] in "RC":
            i += 1  # -z puts the rename's source path in the next field
    return out


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "r": "\r", "v": "\v"}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths ("a\\tb", octal UTF-8 bytes)."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    body = path[1:-1]
    raw = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal) and int(octal, 8) < 256:
                raw.append(int(octal, 8))
                i += 4
                continue
            raw.extend(_ESCAPES.get(nxt, nxt).encode())
            i += 2
            continue
        raw.extend(ch.encode())
        i += 1
    return raw.decode("utf-8", errors="replace")
