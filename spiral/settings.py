"""Detector settings: the numbers of buckets.yaml, validated (pure, no file access).

`Settings.from_mapping` takes the parsed YAML and raises `SettingsError` with the
key path of the first problem, so the caller can point at the file and line.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

from spiral import rules as rules_mod
from spiral.pickling import by_fields
from spiral.rules import RULE_SIGNALS, SEED_ONLY, Rules

BUCKET_NAMES = ("small", "medium", "big")
SEED_SIGNALS = ("debris", "repetition", "mutation_stall", "sustained_bash", "polling")  # the contract's five
SIGNAL_NAMES = SEED_SIGNALS + RULE_SIGNALS  # every signal a verdict can name, in report order


class SettingsError(ValueError):
    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message

    def __reduce__(self) -> tuple[type[SettingsError], tuple[tuple[str | int, ...], str]]:
        return SettingsError, (self.path, self.message)  # raised in a worker process, re-raised in the parent


@dataclass(frozen=True, slots=True)
class Bucket:
    expected_min: float
    soft_start_min: float
    stuck_min: float
    # the same bands counted in tool calls (0: not used); the soft band opens at whichever comes first
    expected_calls: int = 0
    soft_start_calls: int = 0
    stuck_calls: int = 0

    def timings(self) -> dict[str, float]:
        """As buckets.yaml writes it: the minutes, and the calls when the bucket has them."""
        out = {"expected_min": self.expected_min, "soft_start_min": self.soft_start_min, "stuck_min": self.stuck_min}
        if self.expected_calls:
            out |= {
                "expected_calls": self.expected_calls,
                "soft_start_calls": self.soft_start_calls,
                "stuck_calls": self.stuck_calls,
            }
        return out

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Settings:
    tick_s: float
    snapshot_every_s: float
    threshold: float
    buckets: dict[str, Bucket]
    weights: dict[str, float]
    debris_min: int
    progress_quiet_min: float
    debris_basename: re.Pattern[str]
    debris_stem: re.Pattern[str]
    rep_window: int
    rep_same_script: int
    rep_same_file: int
    stall_min: float
    stall_expected_factor: float
    sb_window: int
    sb_same_target: int
    poll_window: int
    poll_count: int
    poll_max_sleep_s: float
    rules: Rules = SEED_ONLY

    @classmethod
    def from_mapping(cls, raw: Any, overrides: Any = None) -> Settings:
        data = merge(raw, overrides) if overrides else raw
        return _build(data)

    def bucket(self, name: str) -> Bucket:
        return self.buckets[name]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


def merge(base: Any, over: Any) -> Any:
    """Deep-merge `over` into a copy of `base` (mappings merge, everything else replaces)."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return copy.deepcopy(over)
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
    return out


# ---- schema ---------------------------------------------------------------

_NUM = "number"
_INT = "integer"
_RE = "regex"
_BOOL = "bool"
_REGEXES = "regexes"

_TOP = {
    "version": _INT,
    "tick_seconds": _NUM,
    "snapshot_every_seconds": _NUM,
    "threshold": _NUM,
    "buckets": dict,
    "signals": dict,
    "rules": dict,  # optional: without it, the five signals alone (spiral/rules.py)
}
_OPTIONAL_TOP = frozenset({"rules"})
_BUCKET = {"expected_min": _NUM, "soft_start_min": _NUM, "stuck_min": _NUM}
_BUCKET_CALLS = {"expected_calls": _INT, "soft_start_calls": _INT, "stuck_calls": _INT}  # optional
_SIGNALS: dict[str, dict[str, Any]] = {
    "debris": {
        "weight": _NUM,
        "debris_min": _INT,
        "progress_quiet_min": _NUM,
        "basename_pattern": _RE,
        "stem_pattern": _RE,
    },
    "repetition": {"weight": _NUM, "window": _INT, "same_script": _INT, "same_file": _INT},
    "mutation_stall": {"weight": _NUM, "stall_min": _NUM, "expected_factor": _NUM},
    "sustained_bash": {"weight": _NUM, "window": _INT, "same_target": _INT},
    "polling": {"weight": _NUM, "window": _INT, "polls": _INT, "max_sleep_seconds": _NUM},
}


def _check_keys(
    obj: Any, allowed: dict[str, Any], path: tuple[str | int, ...], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise SettingsError(path, f"{_dotted(path) or 'document'} must be a mapping")
    for key in obj:
        if key not in allowed:
            known = ", ".join(allowed)
            raise SettingsError(path + (key,), f"unknown key {_dotted(path + (key,))!r} (known: {known})")
    for key in allowed:
        if key not in obj and key not in optional:
            raise SettingsError(path, f"missing key {_dotted(path + (key,))!r}")
    return obj


def _value(obj: dict[Any, Any], key: str | int, kind: Any, path: tuple[str | int, ...]) -> Any:
    value = obj[key]
    where = _dotted(path + (key,))
    if kind == _INT:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SettingsError(path + (key,), f"{where} must be a non-negative integer, got {value!r}")
    elif kind == _NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise SettingsError(path + (key,), f"{where} must be a non-negative number, got {value!r}")
        value = float(value)
    elif kind == _BOOL:
        if not isinstance(value, bool):
            raise SettingsError(path + (key,), f"{where} must be true or false, got {value!r}")
    elif kind == _REGEXES:
        if not isinstance(value, list):
            raise SettingsError(path + (key,), f"{where} must be a list of regular expressions")
        value = [_value(dict(enumerate(value)), i, _RE, path + (key,)) for i in range(len(value))]
    elif kind == _RE:
        if not isinstance(value, str):
            raise SettingsError(path + (key,), f"{where} must be a regular expression string")
        try:
            value = re.compile(value)
        except re.error as exc:
            raise SettingsError(path + (key,), f"{where} is not a valid regex: {exc}") from None
    return value


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path)


def _build(data: Any) -> Settings:
    top = _check_keys(data, _TOP, (), _OPTIONAL_TOP)
    if _value(top, "version", _INT, ()) != 1:
        raise SettingsError(("version",), "version must be 1")
    buckets_raw = _check_keys(top["buckets"], {b: dict for b in BUCKET_NAMES}, ("buckets",))
    buckets = {}
    for name in BUCKET_NAMES:
        path = ("buckets", name)
        b = _check_keys(buckets_raw[name], _BUCKET | _BUCKET_CALLS, path, frozenset(_BUCKET_CALLS))
        calls = {k: _value(b, k, _INT, path) for k in _BUCKET_CALLS if k in b}
        bucket = Bucket(*(_value(b, k, _NUM, path) for k in _BUCKET), **calls)
        if bucket.expected_min <= 0:
            raise SettingsError(path + ("expected_min",), f"buckets.{name}.expected_min must be above 0")
        if not bucket.expected_min <= bucket.soft_start_min <= bucket.stuck_min:
            raise SettingsError(path, f"buckets.{name}: need expected_min <= soft_start_min <= stuck_min")
        if calls and not 0 < bucket.expected_calls <= bucket.soft_start_calls <= bucket.stuck_calls:
            raise SettingsError(
                path, f"buckets.{name}: need 0 < expected_calls <= soft_start_calls <= stuck_calls (all three)"
            )
        buckets[name] = bucket
    sig = _check_keys(top["signals"], {s: dict for s in SEED_SIGNALS}, ("signals",))
    vals: dict[str, dict[str, Any]] = {}
    for name, schema in _SIGNALS.items():
        path = ("signals", name)
        block = _check_keys(sig[name], schema, path)
        vals[name] = {k: _value(block, k, kind, path) for k, kind in schema.items()}
    for name in ("repetition", "sustained_bash", "polling"):
        if vals[name]["window"] < 1:
            raise SettingsError(("signals", name, "window"), f"signals.{name}.window must be at least 1")
    d, r, m, s, p = (vals[n] for n in SEED_SIGNALS)
    for key in ("tick_seconds", "snapshot_every_seconds"):  # intervals: a run's record refuses 0 (and so should this)
        if _value(top, key, _NUM, ()) <= 0:
            raise SettingsError((key,), f"{key} must be above 0, got {top[key]!r}")
    return Settings(
        tick_s=_value(top, "tick_seconds", _NUM, ()),
        snapshot_every_s=_value(top, "snapshot_every_seconds", _NUM, ()),
        threshold=_value(top, "threshold", _NUM, ()),
        buckets=buckets,
        weights={n: vals[n]["weight"] for n in SEED_SIGNALS},
        debris_min=d["debris_min"],
        progress_quiet_min=d["progress_quiet_min"],
        debris_basename=d["basename_pattern"],
        debris_stem=d["stem_pattern"],
        rep_window=r["window"],
        rep_same_script=r["same_script"],
        rep_same_file=r["same_file"],
        stall_min=m["stall_min"],
        stall_expected_factor=m["expected_factor"],
        sb_window=s["window"],
        sb_same_target=s["same_target"],
        poll_window=p["window"],
        poll_count=p["polls"],
        poll_max_sleep_s=p["max_sleep_seconds"],
        rules=_rules(top["rules"]) if "rules" in top else SEED_ONLY,
    )


def _rules(raw: Any) -> Rules:
    schema = rules_mod.SCHEMA
    block = _check_keys(raw, {name: dict for name in schema}, ("rules",), rules_mod.OPTIONAL_BLOCKS)
    vals = {}
    for name, keys in schema.items():
        if name not in block:
            continue  # an optional block left out: that rule is off (rules.build)
        path = ("rules", name)
        # keys added after the block: when a file leaves one out, it keeps the meaning it had
        later = rules_mod.OPTIONAL_KEYS.get(name, {})
        given = _check_keys(block[name], keys, path, frozenset(later))
        vals[name] = {k: _value(given, k, kind, path) if k in given else later[k] for k, kind in keys.items()}
    try:
        return rules_mod.build(vals)
    except re.error as exc:  # each mask compiles, but not joined: a flag not at the start, a backreference...
        where = ("rules", "fingerprint", "masks")
        raise SettingsError(where, f"rules.fingerprint.masks do not join into one regex: {exc}") from None
