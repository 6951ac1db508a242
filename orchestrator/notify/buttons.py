"""What a page or notice carries to act from the phone: the run page's link (`serve.public_url`),
and for ntfy targets, with `serve.actions` on, up to three buttons: nudge and "false alarm" (each
an HTTP POST carrying a token made for that run and action alone, in a header, never in the
address) and "open" (the run page)."""

from __future__ import annotations

from orchestrator.infra.errors import UserError
from orchestrator.infra.serve_config import TOKEN_HEADER, ServeConfig, action_path
from orchestrator.record.model import RunRecord

BUTTON_LABELS = {"nudge": "Nudge", "false-alarm": "False alarm"}


def for_notice(record: RunRecord, key: str, serve: ServeConfig, now: float) -> tuple[str | None, dict[str, str]]:
    """(the run page's link or None, what ntfy targets carry: `click` and `actions`)."""
    link = serve.run_url(record.run_id)
    if link is None or serve.public_url is None:
        return None, {}
    ntfy = {"click": link}
    if not (serve.actions and key.split("-", 1)[0] == "spiral"):
        return link, ntfy
    from orchestrator.infra.action_tokens import load_key, mint_many

    wanted = (["nudge"] if record.active and record.guidance_via is not None else []) + ["false-alarm"]
    try:
        made = mint_many(load_key(), record.run_id, wanted, serve.action_ttl_s, now)
    except UserError:
        return link, ntfy  # no key to sign with (an unwritable state folder): the link alone
    buttons = [
        f"http, {BUTTON_LABELS[a]}, {serve.public_url}{action_path(record.run_id, a)}, method=POST, "
        f"headers.{TOKEN_HEADER}={token}, clear=true"
        for a, token in made.items()
    ]
    ntfy["actions"] = "; ".join([*buttons, f"view, Open, {link}"])
    return link, ntfy
