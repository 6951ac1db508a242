"""The write side of `serve --actions`: POST /runs/<id>/act/<action>, and the run page it answers with.

Only a token made for that run and action (infra/action_tokens.py) lets a request act: no cookie, no
session, so a page on another site cannot act through a person's browser; a request a browser
marks cross-site, or whose Origin is another site, is refused before the token is looked at. The
token comes in the form (`token`, the run page's buttons) or in an `X-Action-Token` header (a
notification's buttons), never in the address.
"""

from __future__ import annotations

import re
import time
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

from orchestrator.infra.paths import runs_dir
from orchestrator.infra.serve_config import TOKEN_HEADER
from orchestrator.record.layout import RunDir
from orchestrator.serve import actions, run_page

if TYPE_CHECKING:
    from orchestrator.serve.server import Handler

ACT_PATH = re.compile(r"/runs/([^/]+)/act/([^/]+)")
MAX_BODY = 4096


def answer(h: Handler, path: str) -> None:
    m = ACT_PATH.fullmatch(path)
    if m is None:
        h.send_plain(HTTPStatus.NOT_FOUND, "not found")
        return
    run_id, action = m.group(1), m.group(2)
    form = _form(h)
    if form is None:
        return
    if (why := _foreign(h)) is not None:
        h.send_plain(HTTPStatus.FORBIDDEN, why)
        return
    from orchestrator.serve.server import RUN_ID

    rd = RunDir(runs_dir() / run_id)
    if not RUN_ID.fullmatch(run_id) or not rd.is_run():
        h.send_plain(HTTPStatus.NOT_FOUND, "no such run")
        return
    header = h.headers.get(TOKEN_HEADER)
    token = header if header is not None else form.get("token", "")
    via = "notification" if header is not None else "page"
    out = actions.take(
        rd.path,
        action,
        token,
        key=h.server.action_key(),
        via=via,
        remote=str(h.client_address[0]),
        confirmed=form.get("confirm") == "yes",
        now=time.time(),
    )
    browser = "text/html" in (h.headers.get("Accept") or "")
    if out.confirm:
        h.send_html(HTTPStatus.OK, run_page.confirm_html(run_id, token), run_page.CSP)
    elif browser and out.status in (HTTPStatus.OK, HTTPStatus.CONFLICT):
        where = f"/runs/{quote(run_id, safe='')}?did={quote(action, safe='')}"
        h.send_plain(HTTPStatus.SEE_OTHER, out.message, {"Location": where})
    else:
        h.send_plain(out.status, out.message)


def _form(h: Handler) -> dict[str, str] | None:
    """The request's form fields (a small urlencoded body, or none); None when refused (answered)."""
    try:
        length = int(h.headers.get("Content-Length") or 0)
    except ValueError:
        length = -1
    if not 0 <= length <= MAX_BODY:
        h.close_connection = True
        h.send_plain(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body of at most {MAX_BODY} bytes")
        return None
    raw = h.rfile.read(length) if length else b""
    ctype = (h.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if raw and ctype not in ("application/x-www-form-urlencoded", "text/plain", ""):
        h.send_plain(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send a form (application/x-www-form-urlencoded)")
        return None
    try:
        fields = parse_qs(raw.decode("ascii"), max_num_fields=8) if raw and ctype != "text/plain" else {}
    except (UnicodeDecodeError, ValueError):
        h.send_plain(HTTPStatus.BAD_REQUEST, "the form could not be read")
        return None
    return {k: v[0] for k, v in fields.items() if v}


def _foreign(h: Handler) -> str | None:
    """Why the request looks sent from another site (refused), or None. A browser says where a request
    comes from (Sec-Fetch-Site); without that, an Origin naming another site (or none: "null") is refused."""
    site = (h.headers.get("Sec-Fetch-Site") or "").lower()
    if site:
        return None if site in ("same-origin", "none") else "a request from another site cannot act"
    origin = h.headers.get("Origin")
    if origin is None:
        return None  # not a browser's form or fetch (a phone app's button, curl): the token decides
    host = urlsplit(origin).hostname if origin != "null" else None
    if host is None or host not in h.server.own_hosts(h.headers.get("Host") or ""):
        return "a request from another site cannot act"
    return None
