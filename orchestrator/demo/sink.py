"""A local notification sink: an HTTP receiver on 127.0.0.1 for apprise's json://.

The demo starts one so its page is delivered somewhere real, with no network.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Sink:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"raw": raw.decode(errors="replace")}
                with sink._lock:
                    sink.received.append({"path": self.path, "body": body})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass  # quiet: the demo prints what arrived

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str = "page") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def __enter__(self) -> Sink:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.received)
