"""An HTTP receiver on 127.0.0.1 that speaks ntfy's JSON publish API (what apprise's ntfy:// sends: a
POST of {"topic", "title", "message"} with X-Click and X-Actions headers), and the ntfy app's side
of an action button: its X-Actions text parsed, and an `http` button's request sent as the app sends it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from orchestrator.demo.sink import free_port


class NtfyReceiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"ntfy://127.0.0.1:{self.port}/runs-topic"

    def start(self) -> NtfyReceiver:
        me = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                heads = {k: self.headers.get(k) for k in ("X-Click", "X-Actions", "X-Title")}
                with me._lock:
                    me.messages.append({"path": self.path, **body, "headers": heads})
                out = json.dumps({"id": "m1", "event": "message", "topic": body.get("topic")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.messages)


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
