"""The HTTP side of `serve`: where it may listen, who may ask, and what each path answers.

Read-only unless `--actions`: GET and HEAD only (any other method is 405); with actions, also
POST /runs/<id>/act/<action>, each allowed by a token of its own (serve/posts.py). Every request
is held to a rate per address (serve/limits.py). Bound to this machine by default;
listening beyond it needs a token, and once a token is set every request must carry it
(`?token=` once, then a cookie, or `Authorization: Bearer`). Without a token the Host
header must name this machine too, so a web page elsewhere cannot read the rows through
DNS rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from orchestrator import jsonout
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.infra.serve_config import ServeConfig
from orchestrator.record.layout import RunDir
from orchestrator.serve import limits, page, posts, rows, run_page

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
REPORT_PATH = re.compile(r"/runs/([^/]+)/report")
RUN_PATH = re.compile(r"/runs/([^/]+)")
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _loopback_literal(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return name.lower() in LOCAL_NAMES


def is_local(host: str) -> bool:
    """Whether `host` (an address or a name) is this machine only: every address it stands for is loopback."""
    if _loopback_literal(host):
        return True
    try:
        ipaddress.ip_address(host.strip("[]").split("%")[0])
        return False  # an address, and not a loopback one
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False  # not resolvable: binding will say so
    return bool(infos) and all(_loopback_literal(str(i[4][0])) for i in infos)


def check_bind(host: str, token: str | None, actions: bool = False, remote_actions: bool = False) -> None:
    if not token and not is_local(host):
        raise UserError(
            f"serve: refusing to listen on {host} (beyond this machine) without a token: "
            "pass --token or set $ORCHESTRATOR_SERVE_TOKEN"
        )
    if actions and not remote_actions and not is_local(host):
        raise UserError(
            f"serve: refusing to take actions on {host} (beyond this machine): pass --allow-remote-actions "
            "as well, or put a proxy of yours on the public address and keep serve on 127.0.0.1"
        )


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a slow client never holds up Ctrl-C
    request_queue_size = 128  # a burst of connections waits its turn instead of being refused
    token: str | None = None
    bind_host = "127.0.0.1"
    actions = False  # `--actions`: POST /runs/<id>/act/<action> (serve/posts.py)
    settings = ServeConfig()
    limiter: limits.Limiter

    def action_key(self) -> bytes:
        from orchestrator.infra.action_tokens import load_key

        return load_key()

    def own_hosts(self, host_header: str) -> set[str]:
        """The names this server answers as: the request's Host, where it listens, its public URL's host."""
        names = {_host_of(host_header), self.bind_host.strip("[]")}
        if self.settings.public_host:
            names.add(self.settings.public_host)
        return {n.lower() for n in names if n}

    @property
    def cookie_name(self) -> str:
        return f"orchestrator_serve_{self.server_address[1]}"

    def cookie_value(self) -> str:
        """What the cookie holds: a digest of the token, not the token (and no character a cookie refuses)."""
        return hmac.new((self.token or "").encode(), b"orchestrator serve cookie", hashlib.sha256).hexdigest()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return  # the client went away mid-answer
        sys.stderr.write(f"serve: {type(exc).__name__}: {exc}\n")


class Server6(Server):
    address_family = socket.AF_INET6


def make_server(
    host: str,
    port: int,
    token: str | None,
    *,
    actions_on: bool = False,
    remote_actions: bool = False,
    settings: ServeConfig | None = None,
) -> Server:
    """A server listening on host:port (not answering yet); refused beyond this machine without a token,
    and with actions beyond it without `remote_actions`."""
    check_bind(host, token, actions_on, remote_actions)
    from orchestrator.runs.monitor import list_run_dirs

    list_run_dirs()  # a state folder that cannot be one (ORCHESTRATOR_HOME is a file) is refused now, once
    cls = Server6 if ":" in host else Server
    try:
        server = cls((host.strip("[]"), port), Handler)
    except (OSError, OverflowError) as exc:
        raise UserError(f"serve: cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    server.token = token or None
    server.bind_host = host
    server.actions = actions_on
    server.settings = settings or ServeConfig()
    server.limiter = limits.Limiter()
    if actions_on:
        server.action_key()  # made now (mode 0600), so a first tap does not race another to make it
    return server


def _host_of(header: str) -> str:
    """The name in a Host header, without its port."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Handler(BaseHTTPRequestHandler):
    server: Server
    server_version = "orchestrator-serve"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    _head = False
    _cookie: str | None = None

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a page polled every few seconds would flood the terminal

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_POST(self) -> None:
        if not self.server.actions:
            self._drain()
            self._not_allowed()
            return
        self._head, self._cookie = False, None
        if not self.server.limiter.allow(str(self.client_address[0]), "write", limits.WRITES, time.monotonic()):
            self._drain()
            self.close_connection = True
            self._send(
                HTTPStatus.TOO_MANY_REQUESTS, "text/plain", b"too many requests: wait a little\n", {"Retry-After": "5"}
            )
            return
        try:
            posts.answer(self, urlsplit(self.path).path)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as exc:  # say it in one line, keep serving
            sys.stderr.write(f"serve: POST {self.path[:200]!r}: {type(exc).__name__}: {exc}\n")
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain", b"internal error (see the server's stderr)\n")

    def _drain(self) -> None:
        """Read a small body before answering without it: a socket closed on unread bytes is reset, and
        the client may lose the answer."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return
        if 0 < length <= posts.MAX_BODY:
            self.rfile.read(length)

    def send_plain(self, status: HTTPStatus, text: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, "text/plain; charset=utf-8", (text + "\n").encode(), headers)

    def send_html(self, status: HTTPStatus, body: str, csp: str) -> None:
        """A page with buttons: its forms' POSTs carry their origin (same-origin), which a cross-site one cannot."""
        heads = {"Content-Security-Policy": csp, "Referrer-Policy": "same-origin"}
        self._send(status, "text/html; charset=utf-8", body.encode(), heads)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # POST, PUT, DELETE, ...: read-only
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self._head, self._cookie = False, None
        self.close_connection = True  # its body, if any, is not read
        if self.server.actions:
            allow, text = "GET, HEAD, POST", b"GET and HEAD; POST only to /runs/<id>/act/<action>\n"
        else:
            allow, text = "GET, HEAD", b"read-only: GET and HEAD only (serve --actions takes POSTs)\n"
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", text, {"Allow": allow, "Connection": "close"})

    # ---- the request ---------------------------------------------------------------------

    def _answer(self, head: bool) -> None:
        self._head, self._cookie = head, None
        if not self.server.limiter.allow(str(self.client_address[0]), "read", limits.READS, time.monotonic()):
            self.close_connection = True
            self._send(
                HTTPStatus.TOO_MANY_REQUESTS, "text/plain", b"too many requests: wait a little\n", {"Retry-After": "5"}
            )
            return
        try:
            url = urlsplit(self.path)
            if self._allowed(url.path, parse_qs(url.query)):
                self._route(url.path, parse_qs(url.query))
        except (ConnectionError, TimeoutError):
            self.close_connection = True  # the client left (a closed tab, "back" mid-download): nothing to say
        except Exception as exc:  # say it in one line, keep serving
            sys.stderr.write(f"serve: {self.path[:200]!r}: {type(exc).__name__}: {exc}\n")
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain", b"internal error (see the server's stderr)\n")

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        if posts.ACT_PATH.fullmatch(path):
            self._not_allowed()  # a write endpoint: GET changes nothing
        elif m := RUN_PATH.fullmatch(path):
            self._run_page(unquote(m.group(1)), query.get("did", [None])[0])
        elif path == "/":
            body = page.page_html(rows.rows()).encode()
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", body, {"Content-Security-Policy": page.CSP})
        elif path == "/api/runs":
            self._send(HTTPStatus.OK, "application/json", jsonout.document({"runs": rows.rows()}).encode())
        elif m := REPORT_PATH.fullmatch(path):
            self._report(unquote(m.group(1)))
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found\n")

    def _allowed(self, path: str, query: dict[str, list[str]]) -> bool:
        token = self.server.token
        if token is None:
            host = _host_of(self.headers.get("Host") or "")
            if host and not _loopback_literal(host) and host.lower() not in self.server.own_hosts(""):
                self._send(HTTPStatus.FORBIDDEN, "text/plain", b"this page answers only to this machine's names\n")
                return False
            return True
        cookie = f"{self.server.cookie_name}={self.server.cookie_value()}; HttpOnly; SameSite=Strict; Path=/"
        given = query.get("token", [None])[0]
        if given is not None and _same(given, token):
            self._cookie = cookie  # the token once in the address, then a cookie
            if path == "/" or REPORT_PATH.fullmatch(path) or RUN_PATH.fullmatch(path):  # a page: drop the token
                rest = {k: v for k, v in query.items() if k != "token"}
                where = path + ("?" + urlencode(rest, doseq=True) if rest else "")
                self._send(HTTPStatus.SEE_OTHER, "text/plain", b"", {"Location": where})
                return False
            return True
        if _same(self._bearer() or "", token) or _same(self._cookie_token() or "", self.server.cookie_value()):
            return True
        body = b"a token is needed: ?token=..., or an Authorization: Bearer header\n"
        self._send(HTTPStatus.UNAUTHORIZED, "text/plain", body, {"WWW-Authenticate": "Bearer"})
        return False

    def _bearer(self) -> str | None:
        scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    def _cookie_token(self) -> str | None:
        try:
            jar = SimpleCookie(self.headers.get("Cookie") or "")
        except CookieError:
            return None
        morsel = jar.get(self.server.cookie_name)
        return morsel.value if morsel is not None else None

    def _run_page(self, run_id: str, did: str | None) -> None:
        root = runs_dir()
        if not RUN_ID.fullmatch(run_id) or not RunDir(root / run_id).is_run():
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"no such run\n")
            return
        key = self.server.action_key() if self.server.actions else None
        body = run_page.render(root / run_id, key, self.server.settings.action_ttl_s, did, time.time())
        self.send_html(HTTPStatus.OK, body, run_page.CSP)

    def _report(self, run_id: str) -> None:
        root = runs_dir()
        if not RUN_ID.fullmatch(run_id) or not RunDir(root / run_id).is_run():
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"no such run\n")
            return
        try:
            from orchestrator.report import render_run
        except ImportError as exc:
            note = f"the report is not available here (orchestrator.report: {exc})\n"
            self._send(HTTPStatus.NOT_IMPLEMENTED, "text/plain; charset=utf-8", note.encode())
            return
        try:
            from orchestrator.config import load

            html = render_run(root / run_id, price_overrides=load().prices)  # priced as `report` prices it
        except UserError as exc:  # no report to draw (a queued run has no log yet), or a config to fix
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", f"no report of {run_id}: {exc}\n".encode())
            return
        except Exception as exc:  # one run's report failing must not take the page down: say why in one line
            detail = f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"serve: the report of {run_id}: {detail}\n")
            body = f"the report of {run_id} could not be drawn: {detail}\n".encode()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", body)
            return
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", html.encode())

    # ---- the answer ----------------------------------------------------------------------

    def _send(self, status: HTTPStatus, ctype: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if "Referrer-Policy" not in (headers or {}):
            self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        if self._cookie:
            self.send_header("Set-Cookie", self._cookie)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not self._head:
            self.wfile.write(body)


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def serve_forever(server: Server, say: Callable[[str], None]) -> None:
    """Answer until Ctrl-C (or SIGTERM); then close the socket and return.

    The requests are answered on a thread of their own while this (the main) thread only waits
    for the signal (sigwait, with both signals blocked first, so every thread inherits the
    block): the stop is taken in one known place, never as a KeyboardInterrupt landing
    wherever the main thread happened to be (inside starting a request's thread, say).
    """
    import signal

    host, port = str(server.server_address[0]), int(server.server_address[1])
    shown = f"[{host}]" if ":" in host else host
    note = " (a token is needed: open /?token=... once)" if server.token else ""
    stops = {signal.SIGINT, signal.SIGTERM}
    waits = threading.current_thread() is threading.main_thread()
    if waits:
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    answering = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    try:
        answering.start()
        say(f"serving http://{shown}:{port}/{note}; Ctrl-C stops")
        if waits:
            signal.sigwait(stops)
        else:  # called on another thread: the signals go to the main one; until something shuts the server down
            answering.join()
    finally:
        if answering.is_alive():
            server.shutdown()
        server.server_close()
        if waits:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    say("stopped")
