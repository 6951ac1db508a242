"""A receiver on 127.0.0.1 that speaks ntfy's JSON publish API (what apprise's ntfy:// sends: a POST of
{"topic", "title", "message"} with X-Click and X-Actions headers), and the ntfy app's side of an
action button: its X-Actions text parsed, and an `http` button's request sent as the app sends it."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from orchestrator.demo.sink import Sink


class NtfyReceiver(Sink):
    """The demo's sink, addressed as an ntfy server, answering as one."""

    reply = b'{"id": "m1", "event": "message", "topic": "runs-topic"}'

    def __init__(self) -> None:
        super().__init__(path="runs-topic")

    @property
    def url(self) -> str:
        return f"ntfy://127.0.0.1:{self.port}/{self.path}"

    def received(self) -> list[dict[str, Any]]:
        """Each message's JSON fields, with the headers ntfy reads beside the body."""
        with self._lock:
            got = list(self._received)
        names = ("X-Click", "X-Actions", "X-Title")
        return [
            {"path": r["path"], **r["body"], "headers": {k: r["headers"].get(k.lower()) for k in names}} for r in got
        ]


def parse_actions(header: str) -> list[dict[str, Any]]:
    """ntfy's short action format: `action, label, url[, key=value ...]` separated by `;`."""
    out = []
    for part in header.split(";"):
        fields = [f.strip() for f in part.split(",")]
        button: dict[str, Any] = {"action": fields[0], "label": fields[1], "url": fields[2], "headers": {}}
        for kv in fields[3:]:
            key, _, value = kv.partition("=")
            if key.startswith("headers."):
                button["headers"][key.removeprefix("headers.")] = value
            else:
                button[key] = value
        out.append(button)
    return out


def press(button: dict[str, Any]) -> tuple[int, str]:
    """An `http` button's request, as the ntfy app sends it: its method, headers and body, nothing else."""
    data = button.get("body", "").encode() if button.get("body") else None
    req = urllib.request.Request(
        button["url"], data=data, method=button.get("method", "POST"), headers=dict(button["headers"])
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
