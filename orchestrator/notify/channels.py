"""Sending notifications: apprise URLs / config, plus an optional command hook.

The one module that talks to apprise. Targets come from config.yaml
(`notify:`), an apprise config file, and `$ORCHESTRATOR_NOTIFY`. A target with
no tags gets every enabled event; a tagged one gets the events named in its
tags (`spiral`, `stalled`, `failed`, `succeeded`, `killed`, `lost`, or `ends`
for every ending).

Every attempt has one deadline (`notify.timeout_seconds`): a slow endpoint that
answers 200 within it counts as sent, and none holds the attempt past it. The
apprise targets are sent from a child process (`notify/sender.py`), killed at the
deadline: an endpoint that never answers, or drips a byte at a time, leaves no
thread or socket behind in the watcher or in a short-lived command (a read
timeout alone restarts with every byte). The hook has the same deadline. A page carries its idempotency key (run id and
notice key) as an `Idempotency-Key` header and an `idempotency_key` JSON field
for apprise's json:// / xml:// / form:// targets, and as `$ORCH_IDEMPOTENCY_KEY`
for the hook, so a receiver can drop a repeat.
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.config import UserConfig
from orchestrator.infra import yamlfile
from orchestrator.infra.errors import UserError
from orchestrator.infra.proc import CommandError, run
from orchestrator.infra.redaction import redact, redact_cut
from orchestrator.infra.serve_config import ServeConfig
from orchestrator.notify.kinds import NoticeKind, vocabulary

NO_TARGET = (
    "no notification target configured: pages and notices go nowhere "
    "(set notify.urls in config.yaml or $ORCHESTRATOR_NOTIFY)"
)
_KEYS = {
    "urls",
    "apprise_config",
    "events",
    "command",
    "retry_initial_seconds",
    "retry_max_seconds",
    "timeout_seconds",
}
TIMEOUT_S = 30.0  # one attempt's deadline (apprise's own read timeout is 4 s: a slower 200 would count as failed)
CONNECT_TIMEOUT_S = 4.0
KEY_HEADER = "Idempotency-Key"
KEY_FIELD = "idempotency_key"
_HTTP_PLUGINS = ("NotifyJSON", "NotifyXML", "NotifyForm")  # apprise's plain HTTP posts: headers are ours to add


@dataclass(frozen=True)
class Target:
    url: str
    tags: frozenset[str] = frozenset()

    def wants(self, event: str, endings: frozenset[str] = frozenset()) -> bool:
        """Untagged, every event; tagged, the events named (`ends`: every event in `endings`)."""
        return not self.tags or event in self.tags or ("ends" in self.tags and event in endings)


@dataclass
class Notifier:
    targets: list[Target] = field(default_factory=list)
    apprise_config: Path | None = None
    # the events sent (None: those the kinds of notice send by default, notify/kinds.py)
    events: tuple[str, ...] | None = None
    endings: frozenset[str] = frozenset()  # the events a target tagged `ends` gets (from the kinds)
    command: tuple[str, ...] = ()
    retry_initial_s: float = 30.0
    retry_max_s: float = 900.0
    timeout_s: float = TIMEOUT_S
    serve: ServeConfig = field(default_factory=ServeConfig)  # the run page's link and the buttons (`serve:`)

    @property
    def configured(self) -> bool:
        return bool(self.targets or self.apprise_config or self.command)

    def backoff(self, attempts: int) -> float:
        return float(min(self.retry_max_s, self.retry_initial_s * 2 ** max(0, attempts - 1)))

    def send(
        self,
        event: str,
        title: str,
        body: str,
        done: set[str],
        env: dict[str, str],
        key: str | None = None,
        progress: Callable[[str], None] | None = None,
        unanswered: set[str] | None = None,
        ntfy: dict[str, str] | None = None,
    ) -> tuple[set[str], str | None]:
        """Deliver to every channel not yet in `done`; returns (channels now done, error or None).

        Each apprise target is its own channel, so a retry after a partial
        failure goes only to the targets that failed; `progress(channel)` is
        called the moment one succeeds (the caller records it before the next).
        The whole attempt ends within `timeout_s`; each apprise target has all of it, in a sender of its
        own, so a hanging one holds up no other. `unanswered` gets the channels that got no answer in time
        (each may have been delivered). `ntfy`: what ntfy targets carry besides (`click`: the run page's
        link, `actions`: the buttons, in ntfy's X-Actions form).
        """
        if not self.configured:
            return set(), NO_TARGET
        deadline = time.monotonic() + self.timeout_s
        errors: list[str] = []
        ok: set[str] = set()
        wanted = 0

        def succeeded(channel: str) -> None:
            ok.add(channel)
            if progress is not None:
                progress(channel)

        if self.targets or self.apprise_config:
            from orchestrator.notify.sender import in_child

            wanted += in_child(self, event, title, body, done, key, deadline, succeeded, errors, unanswered, ntfy)
        if self.command:
            wanted += 1
            if "command" not in done:
                err = self._hook(event, title, body, env, max(0.1, deadline - time.monotonic()))
                if err is None:
                    succeeded("command")
                else:
                    errors.append(err)
                    if unanswered is not None and err.startswith("notify command timed out"):
                        unanswered.add("command")
        if wanted == 0 and not errors:
            errors.append(f"no notification target takes '{event}' events (check the targets' tags)")
        return ok, "; ".join(errors) if errors else None

    def deliver_apprise(
        self,
        event: str,
        title: str,
        body: str,
        done: set[str],
        key: str | None,
        deadline: float,
        succeeded: Callable[[str], None],
        errors: list[str],
        trying: Callable[[str, str], None] = lambda channel, label: None,
        ntfy: dict[str, str] | None = None,
    ) -> int:
        """Send to each apprise target not in `done` (in the sender process); returns how many want `event`.
        `trying(channel, label)` is told of each target before its request."""
        wanted = 0
        for channel, service, label in self._services(errors):
            if not Target("", frozenset(getattr(service, "tags", set()) or set())).wants(event, self.endings):
                continue
            wanted += 1
            if channel in done:
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                errors.append(f"delivery to {label} not tried: the attempt's {self.timeout_s:g} s ran out")
                continue
            _prepare(service, left, key, ntfy or {})
            import apprise

            one = apprise.Apprise()
            one.add(service)
            trying(channel, label)
            result = one.notify(body=body, title=title)
            if result:
                succeeded(channel)
            else:
                errors.append(f"delivery to {label} failed" + _why(result))
        return wanted

    def _services(self, errors: list[str]) -> list[tuple[str, Any, str]]:
        """(channel key, apprise service, printable name) for every configured target."""
        import apprise  # ~90 ms to import: only when something is actually sent

        out: list[tuple[str, Any, str]] = []
        for t in self.targets:
            one = apprise.Apprise()
            if not one.add(t.url, tag=sorted(t.tags) or None):
                errors.append(f"apprise does not understand the URL {_mask(t.url)}")
                continue
            for service in one:
                out.append((_key(t.url), service, _label(service)))
        if self.apprise_config is not None:
            conf = apprise.AppriseConfig()
            loaded = apprise.Apprise()
            if not conf.add(str(self.apprise_config)) or not loaded.add(conf) or len(loaded) == 0:
                errors.append(f"cannot read the apprise config {self.apprise_config}")
            else:
                for service in loaded:
                    url = service.url(privacy=False)  # type: ignore[no-untyped-call]  # apprise leaves url() unannotated
                    out.append((_key(url), service, _label(service)))
        return out

    def _hook(self, event: str, title: str, body: str, env: dict[str, str], timeout: float) -> str | None:
        extra = {**env, "ORCH_EVENT": event, "ORCH_TITLE": title, "ORCH_MESSAGE": body}
        try:
            rc, _, err = run(list(self.command), check=False, env=extra, timeout=timeout)
        except OSError as exc:
            return f"notify command could not run: {self.command[0]}: {exc.strerror}"
        except subprocess.TimeoutExpired:
            return f"notify command timed out after {timeout:.3g} s"
        except CommandError:
            return f"notify command not found: {self.command[0]}"
        if rc != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return f"notify command exited {rc}: {redact_cut(redact(tail[0])[:200])}"  # whole, then cut
        return None


def _why(result: Any) -> str:
    """What apprise said of a failed delivery (its last warning: the HTTP status, a refused connection),
    as `: ...`; empty when it kept nothing (older apprise)."""
    logs = getattr(result, "logs", None)
    try:
        said = [e.message for e in logs() if getattr(e, "level", "") in ("WARNING", "ERROR")] if logs else []
    except Exception:
        return ""
    return f": {' '.join(said[-1].split())[:200]}" if said else ""


def _prepare(service: Any, left: float, key: str | None, ntfy: dict[str, str]) -> None:
    """One apprise target for this attempt: its read timeout is what is left of the deadline, plus the key
    (and, for ntfy, the run page as the click URL and the buttons)."""
    # past the deadline: the parent stops the sender at the deadline, so a request that got no answer in time
    # is told from one that failed (refused, an error status): it may have arrived (notify/delivery.py)
    service.socket_read_timeout = left + 5.0
    service.socket_connect_timeout = min(CONNECT_TIMEOUT_S, left)
    if type(service).__name__ == "NotifyNtfy":
        if ntfy.get("click"):
            service.click = ntfy["click"]
        if ntfy.get("actions"):
            service._NotifyNtfy__actions = ntfy["actions"]  # apprise keeps the `actions=` argument here
    if key is None or type(service).__name__ not in _HTTP_PLUGINS:
        return
    if isinstance(getattr(service, "headers", None), dict):
        service.headers[KEY_HEADER] = key
    if isinstance(getattr(service, "payload_extras", None), dict):
        service.payload_extras[KEY_FIELD] = key


def _key(url: str) -> str:
    """A channel's name in state.json: a digest, since URLs often carry secrets."""
    return "url:" + hashlib.sha1(url.encode()).hexdigest()[:12]


def _label(service: Any) -> str:
    """How a target is named in errors and state: apprise's privacy form hides its tokens."""
    return str(service.url(privacy=True)).split("?", 1)[0]


def _mask(url: str) -> str:
    """An unparseable URL, shown by its scheme only: whatever follows may be a token."""
    return url.split("://", 1)[0] + "://..." if "://" in url else "(not a URL)"


def from_config(cfg: UserConfig, kinds: Sequence[NoticeKind], environ: dict[str, str] | None = None) -> Notifier:
    """The targets and events of config.yaml's `notify:` (and `$ORCHESTRATOR_NOTIFY`); the events it may
    name are those of `kinds` (runs/pipeline.NOTICES)."""
    environ = dict(os.environ) if environ is None else environ
    vocab = vocabulary(kinds)
    events_, tags_ = vocab.events, vocab.tags
    raw = cfg.notify or {}
    lines = cfg.lines

    def fail(key: tuple[Any, ...], msg: str) -> UserError:
        return UserError(f"{cfg.path}:{yamlfile.line_of(lines, ('notify',) + key)}: {msg}")

    for key in raw:
        if key not in _KEYS:
            raise fail((key,), f"unknown key notify.{key} (known: {', '.join(sorted(_KEYS))})")
    n = Notifier(serve=cfg.serve, endings=vocab.endings)
    urls = raw.get("urls") or []
    if not isinstance(urls, list):
        raise fail(("urls",), "notify.urls must be a list of URLs (or {url: ..., tags: [...]})")
    for i, item in enumerate(urls):
        if isinstance(item, str) and item.strip():
            n.targets.append(Target(item.strip()))
        elif isinstance(item, dict) and isinstance(item.get("url"), str) and set(item) <= {"url", "tags"}:
            tags = item.get("tags") or []
            tags = [tags] if isinstance(tags, str) else tags
            if not isinstance(tags, list) or not all(isinstance(t, str) and t in tags_ for t in tags):
                raise fail(("urls", i), f"notify.urls: tags must name events among {', '.join(tags_)}")
            n.targets.append(Target(item["url"], frozenset(tags)))
        else:
            raise fail(("urls", i), "notify.urls entries are URLs, or {url: ..., tags: [...]}")
    # whitespace only: commas belong to many apprise URLs (mailto://...?to=a@x,b@y)
    for url in environ.get("ORCHESTRATOR_NOTIFY", "").split():
        if url:
            n.targets.append(Target(url))
    if "apprise_config" in raw:
        if not isinstance(raw["apprise_config"], str):
            raise fail(("apprise_config",), "notify.apprise_config must be a path")
        n.apprise_config = Path(raw["apprise_config"]).expanduser()
    if "events" in raw:
        events = raw["events"]
        if not isinstance(events, list) or any(e not in events_ for e in events):
            raise fail(("events",), f"notify.events must list events among {', '.join(events_)}")
        n.events = tuple(events)
    if cfg.notify_on is not None:  # the top-level spelling of notify.events
        where = f"{cfg.path}:{yamlfile.line_of(lines, ('notify_on',))}"
        if "events" in raw:
            raise UserError(f"{where}: notify_on and notify.events say the same thing: keep one")
        if not isinstance(cfg.notify_on, list) or any(e not in events_ for e in cfg.notify_on):
            raise UserError(f"{where}: notify_on must list events among {', '.join(events_)}")
        n.events = tuple(cfg.notify_on)
    if "command" in raw:
        cmd = raw["command"]
        if not isinstance(cmd, list) or not cmd or not all(isinstance(c, str) and c for c in cmd):
            raise fail(("command",), "notify.command must be an argv list (no shell)")
        n.command = tuple(cmd)
    for key, attr in (
        ("retry_initial_seconds", "retry_initial_s"),
        ("retry_max_seconds", "retry_max_s"),
        ("timeout_seconds", "timeout_s"),
    ):
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise fail((key,), f"notify.{key} must be a positive number")
            setattr(n, attr, float(v))
    return n


def check_targets(n: Notifier, cfg: UserConfig) -> None:
    """Every target one apprise can send to, or a UserError naming the first it cannot (where it was
    given): a mistyped scheme would otherwise be found only by the first page, and retried for ever.
    Loads apprise (~90 ms): for `launch` and `watch`, not for every `status`."""
    if not (n.targets or n.apprise_config):
        return
    import apprise

    urls = (cfg.notify or {}).get("urls") or []
    for t in n.targets:
        if apprise.Apprise().add(t.url):
            continue
        at = next((i for i, u in enumerate(urls) if t.url in (u, u.get("url") if isinstance(u, dict) else None)), None)
        where = (
            "$ORCHESTRATOR_NOTIFY"
            if at is None
            else f"{cfg.path}:{yamlfile.line_of(cfg.lines, ('notify', 'urls', at))}"
        )
        raise UserError(f"{where}: apprise does not understand the notify URL {_mask(t.url)} (its scheme or its form)")
    if n.apprise_config is not None:
        errors: list[str] = []
        n._services(errors)
        if errors:
            raise UserError(f"{cfg.path}:{yamlfile.line_of(cfg.lines, ('notify', 'apprise_config'))}: {errors[-1]}")
