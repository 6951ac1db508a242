"""The `--json` contract: every object a command prints carries a `version` key.

Scripts read these (../shared/spec/cli.md), so keys are only ever added; a
change that removes or renames one bumps JSON_VERSION. A JSON Lines stream
(`logs --json`) carries the key on every line, so each line stands alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

JSON_VERSION = 1


def versioned(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with the envelope's version key first (a version `obj` already has wins)."""
    return {"version": JSON_VERSION, **obj}


def document(obj: Mapping[str, Any]) -> str:
    """One versioned, indented JSON object and a newline."""
    return json.dumps(versioned(obj), indent=2) + "\n"


def line(obj: Mapping[str, Any]) -> str:
    """One versioned JSON Lines record."""
    return json.dumps(versioned(obj)) + "\n"


def plain(v: Any) -> Any:
    """A database value as JSON can hold it: containers kept, anything else exotic as its text."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "nan", "inf", "-inf": JSON has no such numbers (json.dumps would write NaN)
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    return str(v)


def records(columns: list[str], rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """An SQL result as `{columns, rows}`, each row an object keyed by column. Two columns of one
    name (`SELECT r.run_id, e.run_id`) are told apart as `run_id` and `run_id_2`, as `columns` says."""
    unique: list[str] = []
    for name in columns:
        key, n = name, 1
        while key in unique:
            n += 1
            key = f"{name}_{n}"
        unique.append(key)
    return {"columns": unique, "rows": [dict(zip(unique, [plain(v) for v in r], strict=True)) for r in rows]}
