"""genai-prices' answers kept in the state folder, so a process that needs a price seldom imports it.

Importing genai-prices costs ~0.3 s (pydantic and httpx2 come with it): more than a first
pass over a long log once spiral/ is compiled, and paid again by every `status` process that
prices a run whose cached state does not hold the price yet. Its answers are kept in
`<home>/cache/prices.json`, keyed by model, for one installed copy of the database (the
package file's size and time) and one UTC day (a price may change on a date). Anything else
(another copy, another day, an unreadable file) is a miss: the database is asked again.
The file is a cache, written atomically without fsync; a lost write only costs the import.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from orchestrator.infra.atomic import write_bytes_atomic
from orchestrator.infra.paths import home

T = TypeVar("T")
_KEEP = 256  # models kept at most (a fleet uses a handful)


def _database() -> str | None:
    """Which copy of genai-prices is installed (its package file's size and time), without importing it."""
    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        st = os.stat(spec.origin)
    except OSError:
        return None
    return f"{spec.origin}:{st.st_size}:{st.st_mtime_ns}"


def _path() -> Path:
    return home() / "cache" / "prices.json"


def _read(stamp: str) -> dict[str, Any]:
    try:
        data = json.loads(_path().read_bytes())
    except (OSError, ValueError):
        return {}
    rates = data.get("rates") if isinstance(data, dict) and data.get("stamp") == stamp else None
    return rates if isinstance(rates, dict) else {}


def looked_up(key: str, ask: Callable[[], T], encode: Callable[[T], Any], decode: Callable[[Any], T]) -> T:
    """The database's answer for `key`: kept from an earlier process when it can be, else `ask()`ed and kept."""
    database = _database()
    if database is None:
        return ask()
    stamp = f"{database}|{datetime.now(UTC):%Y-%m-%d}"
    rates = _read(stamp)
    if key in rates:
        try:
            return decode(rates[key])
        except (TypeError, ValueError):
            pass  # a damaged entry: asked again
    answer = ask()
    rates = dict(list(rates.items())[-(_KEEP - 1) :])  # the latest kept, this one added
    rates[key] = encode(answer)
    try:
        _path().parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(_path(), json.dumps({"stamp": stamp, "rates": rates}).encode(), durable=False)
    except OSError:
        pass  # a full disk or a read-only home: the next process asks the database again
    return answer
