"""A local notification sink: an HTTP receiver on 127.0.0.1 for apprise's json:// URLs.

The demo delivers its page here, so a page really goes somewhere with no
network; the tests use it as their receiver. It can be stopped and started
again on the same port (a target that goes down and comes back).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sink:
    reply = b""  # the JSON a receiver answers with (a subclass that mimics a service's API sets it)

    def __init__(self, port: int | None = None, path: str = "page") -> None:
        self.port = port or free_port()
        self.path = path
        self._received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/{self.path}"

    def start(self) -> Sink:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"raw": raw.decode(errors="replace")}
                heads = {k.lower(): v for k, v in self.headers.items()}
                with sink._lock:
                    sink._received.append({"path": self.path, "body": body, "headers": heads, "at": time.time()})
                self.send_response(200)
                if sink.reply:
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(sink.reply)))
                self.end_headers()
                self.wfile.write(sink.reply)

            def log_message(self, *args: Any) -> None:
                pass  # quiet: callers print what arrived

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Sink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bodies(self) -> list[dict[str, Any]]:
        """Each notification's JSON body, in arrival order."""
        with self._lock:
            return [r["body"] for r in self._received]

    def arrivals(self) -> list[tuple[float, dict[str, Any]]]:
        """(epoch seconds it arrived, JSON body) of each notification, in arrival order."""
        with self._lock:
            return [(r["at"], r["body"]) for r in self._received]

    def titles(self) -> list[str]:
        return [str(b.get("title", "")) for b in self.bodies()]

    def messages(self) -> list[str]:
        return [str(b.get("message", b)) for b in self.bodies()]
