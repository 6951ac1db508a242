"""The secrets corpus: no part of a secret reaches a page, wherever the agent put it.

Every shape of tests/secret_shapes.py is placed in a command, a tool output, a provider
error, an ending reason and (the shapes recognisable alone) a file path, with the secret
starting at every offset from 120 to 160 characters, around the 150-character cut of the
page's "last tool calls". No 6-character piece of the secret may appear in the page's title or
body, the provider notice or the ending notice. Then the same end to end: a fake agent loops on
commands holding the secrets, and the HTTP receiver's pages and `status --json` are checked.

Kept readable on purpose (tests/secret_shapes.HEALTHY): git, pytest -k names, paths, ports, and
hex digests (a 40-hex sha1 commit id is a commit id, not a secret: a hex secret is caught only by
its name or flag, e.g. TWILIO_AUTH_TOKEN=...).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.notify.pages import ending_notice, provider_notice, redact, spiral_page
from orchestrator.record.model import ProviderStatus, RunRecord, SpiralState
from orchestrator.runs.evaluator import _brief
from spiral import model
from spiral.model import ToolCall
from spiral.signals._count import short
from tests.helpers import TINY, Receiver, cli, launch, spiral_pages, state, status_json, ticket, wait, write_config
from tests.secret_shapes import HEALTHY, PATH_SAFE, SHAPES

OFFSETS = range(120, 161)
PIECE = 6


def leaked(text: str, secret: str) -> list[str]:
    """The 6-character pieces of `secret` that appear in `text` (any longer piece holds one)."""
    return sorted({secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1) if secret[i : i + PIECE] in text})


def padded(text: str, secret: str, offset: int, tool: str = model.BASH) -> str:
    """`text` with a harmless prefix so that, in the page's brief, the secret starts at `offset`."""
    at = len(tool) + 1 + text.index(secret)  # the brief is "TOOL command"
    lead = "python tmp_loop.py --case " if tool == model.BASH else "/srv/"
    room = offset - at - len(lead) - 3
    if room < 1:  # the secret sits further in than `offset` already: it is tried where it is
        return text
    return lead + "7" * room + (" ; " if tool == model.BASH else "/x/") + text


def record(calls: list[ToolCall], evidence: list[str], *, provider: str, reason: str) -> RunRecord:
    return RunRecord(
        run_id="t1-20261201-000000",
        ticket_id="t1",
        bucket="small",
        agent="fake",
        state="killed",
        reason=reason,
        spiral=SpiralState(
            tripped_in_soft_band=True,
            tripped_at_min=3,
            page_signals=["repetition"] * len(evidence),
            page_evidence=evidence,
            page_recent=[_brief(c) for c in calls],
        ),
        provider=ProviderStatus(episode=1, text=provider, error=provider, attempt=4),
        hints=["repetition"],
    )


def pages_of(rec: RunRecord) -> str:
    parts = [*spiral_page(rec), *provider_notice(rec), *ending_notice(rec, "killed"), *ending_notice(rec, "failed")]
    return "\n".join(parts)


@pytest.mark.parametrize("name, text, secret", SHAPES, ids=[s[0] for s in SHAPES])
def test_no_piece_of_a_secret_reaches_a_page_at_any_offset(name: str, text: str, secret: str) -> None:
    starts: set[int] = set()  # where the secret began in the brief
    for offset in OFFSETS:
        cmd = padded(text, secret, offset)
        failed = ToolCall(ts=1, tool=model.BASH, command="python tmp_loop.py", is_error=True)
        failed.output = cmd
        calls = [ToolCall(ts=0, tool=model.BASH, command=cmd), failed]
        evidence = ["12 of 20 tool calls ran tmp_loop.py (made during the run)"]
        if name in PATH_SAFE:
            path = padded(f"data/{secret}/config.json", secret, offset, model.READ)
            calls.append(ToolCall(ts=2, tool=model.READ, path=path))
            evidence.append(f"9 of 20 tool calls hit {short(path)}")
        rec = record(calls, evidence, provider=f"retrying: 401 {cmd}", reason=f"agent exited 1: {cmd}")
        out = pages_of(rec)
        assert not leaked(out, secret), (name, offset, leaked(out, secret), out)
        assert "logs t1-20261201-000000" in out
        starts.add(len(model.BASH) + 1 + cmd.index(secret))
    natural = len(model.BASH) + 1 + text.index(secret)
    assert starts >= {o for o in OFFSETS if o > natural + 30}, sorted(starts)


def test_the_corpus_is_broad() -> None:
    names = [s[0] for s in SHAPES]
    assert len(names) == len(set(names)) >= 40
    assert PATH_SAFE <= set(names)
    for name, text, secret in SHAPES:
        assert secret in text and len(secret) >= 8, name
    # no piece of a secret may be shown text elsewhere ("tpassw" of a password in `htpasswd`):
    # the end-to-end check would then fail on whichever commands a page happened to show
    shown = [t.replace(s, " ") for _, t, s in SHAPES] + list(HEALTHY)
    for name, _, secret in SHAPES:
        assert not [(t, leaked(t, secret)) for t in shown if leaked(t, secret)], name


@pytest.mark.parametrize("text", HEALTHY)
def test_ordinary_commands_stay_readable(text: str) -> None:
    assert redact(text) == text
    brief = _brief(ToolCall(ts=0, tool=model.BASH, command=text))
    assert brief == f"{model.BASH} {text}"


def test_the_brief_is_redacted_whole_then_cut() -> None:
    key = "AKIAZ7QW3RT5YU9OP1LM"
    cmd = "x" * 140 + " " + key + " && echo done"
    brief = _brief(ToolCall(ts=0, tool=model.BASH, command=cmd))
    assert not leaked(brief, key) and len(brief) <= len(model.BASH) + 1 + 150
    url = "git clone https://bob:s3cretp4ssw0rd@example.com/r.git"
    brief = _brief(ToolCall(ts=0, tool=model.BASH, command="y" * 120 + " " + url))
    assert not leaked(brief, "s3cretp4ssw0rd")


# ---- end to end: a spiraling fake agent, the receiver, status --json ------------------------------


def _loop(n: int, start: int) -> str:
    steps = ["write tmp_loop.py"]
    for i in range(start, start + n):
        name, text, secret = SHAPES[i % len(SHAPES)]
        cmd = padded(text, secret, OFFSETS[i % len(OFFSETS)])
        call = {"tool": "Bash", "command": cmd, "output": f"error: {text}", "exit_code": 1 if i % 3 else 0}
        steps.append("say " + json.dumps(call))
        if name in PATH_SAFE:
            steps.append("say " + json.dumps({"tool": "Read", "path": f"/srv/data/{secret}/config.json"}))
        steps.append("sleep 0.04")
    steps.append("sleep 60")  # still running when the page goes out
    return "\n".join(steps)


@pytest.mark.parametrize("start", [0, 24, 48])  # which shapes are the last calls when the page goes out
def test_a_spiraling_run_full_of_secrets_pages_none_of_them(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver, start: int
) -> None:
    write_config(home, notify={"urls": [receiver.url], "events": ["spiral", "provider", "killed"]})
    body = _loop(2 * len(SHAPES), start)
    assert len(body) < 120_000  # the fake agent's script is one argument
    run_id = launch(ticket(tmp_path, repo, body, overrides=TINY))
    rows: list[dict[str, object]] = []

    def paged() -> bool:
        rows.extend(r for r in status_json()["runs"] if r["id"] == run_id)
        return spiral_pages(receiver, run_id) == 1

    wait(paged, timeout=30, what="the page")
    wait(lambda: len(state(home, run_id).get("spiral", {}).get("page_recent", [])) > 0, what="the page's calls")
    assert cli("kill", run_id).returncode == 0
    wait(lambda: bool(status_json()) and f"run {run_id} was killed" in receiver.titles(), what="the ending notice")
    sent = "\n".join(receiver.titles() + receiver.messages())
    assert "tmp_loop.py" in sent and "[REDACTED" in sent and f"kill {run_id}" in sent
    st = state(home, run_id)
    kept = json.dumps({k: st["spiral"][k] for k in ("evidence", "page_evidence", "page_recent")})
    shown = json.dumps([r["evidence"] for r in rows + status_json()["runs"] if r["id"] == run_id])
    for name, _, secret in SHAPES:
        assert not leaked(sent, secret), (name, leaked(sent, secret))
        assert not leaked(kept, secret), (name, kept)
        assert not leaked(shown, secret), (name, shown)


def test_the_page_drops_the_partial_start_of_a_path_the_detector_cut() -> None:
    from tests.secret_shapes import GITHUB

    for j in range(1, 57 - 12):  # the detector keeps a path's last 57 characters: cut at every point of the token
        path = "/srv/data/cache/" + GITHUB + "/" + "n" * j + "/config.json"
        shown = short(path)
        assert shown.startswith("...")
        rec = record([], [f"9 of 20 tool calls hit {shown}"], provider="x", reason="")
        out = pages_of(rec)
        assert not leaked(out, GITHUB), (shown, out)
        assert "/config.json" in out
    for j in range(1, 57 - 12):  # and a token in the file's name
        shown = short("/srv/data/cache/" + GITHUB + "_" + "n" * j + ".json")
        out = pages_of(record([], [f"9 of 20 tool calls hit {shown}"], provider="x", reason=""))
        assert not leaked(out, GITHUB), (shown, out)
        assert ".json" in out


def test_status_evidence_of_a_secret_path_is_redacted() -> None:
    """The detector (pure) names the path as it is; the run record stores its evidence redacted
    (runs/monitor.py), so status --json and every page show it without the token."""
    from orchestrator.notify.pages import redact
    from tests.helpers import detector
    from tests.secret_shapes import GITHUB

    path = f"data/{GITHUB}/config.json"
    det = detector([ToolCall(ts=0, tool=model.READ, path=path) for _ in range(30)])
    raw = det.evaluate(1_700_000_000.0 + 3600).evidence
    assert any(GITHUB in e for e in raw)  # the detector names the path
    stored = " ".join(redact(e) for e in raw)
    assert "config.json" in stored
    assert not leaked(stored, GITHUB)


def test_every_gate_lets_through_every_text_its_pattern_would_change() -> None:
    # a gate skips a pattern over a text; it must never skip one the pattern would have changed, at any
    # step of the redaction (the text as the patterns before it left it)
    from orchestrator.infra import redaction
    from tests.secret_shapes import HEALTHY, SHAPES

    texts = [text for _, text, _ in SHAPES] + list(HEALTHY)
    # letters IGNORECASE folds to ASCII and str.lower() does not (dotless i, long s, dotted capital I)
    texts += ["paſſword=hunter2hunter2", "ſecret: abcd1234", "credentıals=abcd1234", "credentİal=abcd1234"]
    texts += ["--paſſword hunter2hunter2", "--ſecret=abcd1234", "KEY=\u212aabcd1234", "aPİ_KEY=abcd1234efgh"]
    texts += [f"{a} && {b}" for a in texts[:40] for b in texts[-40:]]
    for original in texts:
        text = original
        for i, (pattern, repl, gate) in enumerate(redaction._GATED):
            after = pattern.sub(repl, text)
            if after != text:
                assert gate is None or gate(text), (i, text)
            text = after
        assert redaction.redact(original) == text  # the gated redaction is the plain one
