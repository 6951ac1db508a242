"""config.yaml in the state folder: agent profiles, tickets folder, limits.

The file is optional; without it the built-in profiles (claude, codex, demo)
and defaults apply.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.infra import yamlfile
from orchestrator.infra.paths import config_path
from orchestrator.ledger.spend import DEFAULT_PRICES
from spiral.adapters import FORMATS

DEFAULT_HEARTBEAT_S = 1800.0
_KEYS = {"tickets_dir", "default_agent", "heartbeat_seconds", "agents", "notify", "prices"}
_PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
_PROFILE_KEYS = {"command", "format", "prompt", "version_command", "model"}


@dataclass(frozen=True)
class Profile:
    name: str
    command: tuple[str, ...]
    format: str
    prompt: str = "argument"  # argument | stdin
    version_command: tuple[str, ...] = ()
    model: str | None = None  # for pricing, when the log does not name its model (codex exec --json)


BUILTIN = {
    "claude": Profile(
        "claude",
        ("claude", "-p", "--output-format", "stream-json", "--verbose"),
        "claude-stream-json",
        version_command=("claude", "--version"),
    ),
    "codex": Profile("codex", ("codex", "exec", "--json"), "codex-json", version_command=("codex", "--version")),
    # the demo agent's format is the recorded case's; it is filled in at launch
    "demo": Profile("demo", (sys.executable, "-m", "orchestrator.demo.agent"), "generic"),
}


@dataclass
class UserConfig:
    path: Path
    tickets_dir: Path | None = None
    default_agent: str = "claude"
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    profiles: dict[str, Profile] = field(default_factory=lambda: dict(BUILTIN))
    notify: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, tuple[float, float, float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    lines: yamlfile.Lines = field(default_factory=dict)


def load(path: Path | None = None) -> UserConfig:
    path = path or config_path()
    cfg = UserConfig(path=path)
    if not path.exists():
        return cfg
    data, lines = yamlfile.load_file(path)
    cfg.lines = lines
    if data is None:
        return cfg

    fail = yamlfile.Complaints(str(path), lines)
    fail.mapping(data, _KEYS, "config.yaml")
    if "tickets_dir" in data:
        if not isinstance(data["tickets_dir"], str):
            raise fail(("tickets_dir",), "tickets_dir must be a path")
        cfg.tickets_dir = Path(data["tickets_dir"]).expanduser()
    if "heartbeat_seconds" in data:
        hb = data["heartbeat_seconds"]
        if isinstance(hb, bool) or not isinstance(hb, (int, float)) or not math.isfinite(hb) or hb <= 0:
            raise fail(("heartbeat_seconds",), "heartbeat_seconds must be a positive number")
        cfg.heartbeat_s = float(hb)
    agents = data.get("agents") or {}
    if not isinstance(agents, dict):
        raise fail(("agents",), "agents must be a mapping of profile name to profile")
    for name, raw in agents.items():
        cfg.profiles[str(name)] = _profile(str(name), raw, fail)
    if "default_agent" in data:
        if not isinstance(data["default_agent"], str) or data["default_agent"] not in cfg.profiles:
            raise fail(
                ("default_agent",),
                f"default_agent {data['default_agent']!r} is not a known agent "
                f"(known: {', '.join(sorted(cfg.profiles))})",
            )
        cfg.default_agent = data["default_agent"]
    notify = data.get("notify") or {}
    if not isinstance(notify, dict):
        raise fail(("notify",), "notify must be a mapping")
    cfg.notify = notify
    prices = data.get("prices") or {}
    if not isinstance(prices, dict):
        raise fail(("prices",), "prices must map a model name (prefix) to its per-million-token prices")
    for model, row in prices.items():
        if (
            not isinstance(row, dict)
            or set(row) - set(_PRICE_KEYS)
            or not {"input", "output"} <= set(row)
            or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
                for v in row.values()
            )
        ):
            raise fail(
                ("prices", model),
                f"prices.{model} needs input and output (and optionally cache_read, "
                f"cache_write): USD per million tokens",
            )
        cfg.prices[str(model)] = tuple(float(row.get(k, 0.0)) for k in _PRICE_KEYS)  # type: ignore[assignment]  # a 4-tuple by construction
    return cfg


def _profile(name: str, raw: Any, fail: Any) -> Profile:
    where = ("agents", name)
    if not isinstance(raw, dict):
        raise fail(where, f"agents.{name} must be a mapping")
    for key in raw:
        if key not in _PROFILE_KEYS:
            raise fail(where + (key,), f"unknown key agents.{name}.{key} (known: {', '.join(sorted(_PROFILE_KEYS))})")
    command = raw.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
        raise fail(where + ("command",), f"agents.{name}.command must be a non-empty list of strings (an argv)")
    fmt = raw.get("format", "generic")
    if fmt not in FORMATS:
        raise fail(where + ("format",), f"agents.{name}.format must be one of {', '.join(FORMATS)}")
    prompt = raw.get("prompt", "argument")
    if prompt not in ("argument", "stdin"):
        raise fail(where + ("prompt",), f"agents.{name}.prompt must be 'argument' or 'stdin'")
    version = raw.get("version_command", [])
    if not isinstance(version, list) or not all(isinstance(c, str) for c in version):
        raise fail(where + ("version_command",), f"agents.{name}.version_command must be a list of strings")
    model = raw.get("model")
    if model is not None and not isinstance(model, str):
        raise fail(where + ("model",), f"agents.{name}.model must be a model name")
    return Profile(name, tuple(command), fmt, prompt, tuple(version), model)
