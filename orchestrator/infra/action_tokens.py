"""Action tokens: what lets a tap on a phone act on one run, once, for a while.

A token is `<id>.<expires>.<mac>`: the MAC is an HMAC-SHA256 over the run id, the action, the
expiry and the token's id, keyed by a secret made once in the state folder (`serve.key`, mode
0600, never shown). So a token works only for the run and action it was made for, and only until
it expires; the run's record keeps the ids of the tokens used, so a token works once. The
comparison is in constant time. Nothing here reads the clock: callers pass `now`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import home

KEY_NAME = "serve.key"
_SHAPE = re.compile(r"([A-Za-z0-9_-]{16})\.(\d{1,12})\.([A-Za-z0-9_-]{43})")


class TokenError(ValueError):
    """A token that does not allow the action: the message says why (to the person, never the key)."""


def key_path() -> Path:
    return home() / KEY_NAME


def load_key(path: Path | None = None) -> bytes:
    """The state folder's action key, made (32 random bytes, mode 0600) the first time it is asked for."""
    path = path or key_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = _create(path)
    except OSError as exc:
        raise UserError(f"cannot read the action key {path}: {exc.strerror}") from None
    key = data.strip()
    if len(key) < 32:
        raise UserError(
            f"the action key {path} is too short: remove it and a new one is made (old tokens stop working)"
        )
    return key


def _create(path: Path) -> bytes:
    key = secrets.token_hex(32).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key + b"\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            return path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot create the action key {path}: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return key


def _mac(key: bytes, run_id: str, action: str, expires: int, token_id: str) -> str:
    msg = f"orchestrator action v1\n{run_id}\n{action}\n{expires}\n{token_id}".encode()
    return base64.urlsafe_b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode().rstrip("=")


def mint(key: bytes, run_id: str, action: str, expires: float, token_id: str | None = None) -> str:
    token_id = token_id or secrets.token_urlsafe(12)
    return f"{token_id}.{int(expires)}.{_mac(key, run_id, action, int(expires), token_id)}"


def check(key: bytes, token: str, run_id: str, action: str, now: float) -> str:
    """The token's id when it allows `action` on `run_id` at `now`; TokenError otherwise."""
    m = _SHAPE.fullmatch(token.strip()) if token else None
    if m is None:
        raise TokenError("no valid action token")
    token_id, expires, mac = m.group(1), int(m.group(2)), m.group(3)
    if not hmac.compare_digest(mac, _mac(key, run_id, action, expires, token_id)):
        raise TokenError("the action token is not valid for this run and action")
    if now >= expires:
        raise TokenError("the action token has expired: open the run page again for a fresh one")
    return token_id


def mint_many(key: bytes, run_id: str, actions: list[str], ttl_s: float, now: float) -> dict[str, str]:
    """A token for each action, good for `ttl_s` from `now` (for a page being drawn, or a notification)."""
    return {a: mint(key, run_id, a, now + ttl_s) for a in actions}
