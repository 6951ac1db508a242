"""The guidance inbox of a run: a folder of queued messages the agent claims at a turn boundary.

This is the documented file protocol (README, "Guidance"), the same for every agent:

    <run>/guidance/inbox/<NNNN>-<id>.json    queued, oldest first by name; {"id", "text", "kind", "queued_at"}
    <run>/guidance/claimed/<NNNN>-<id>.json  claimed: moved here by the one reader that got it (rename is atomic)
    <run>/guidance/claimed/<NNNN>-<id>.json.receipt   optional: {"received_at": epoch seconds, "via": "..."}

A message is written whole to a temp file, flushed to disk and renamed into `inbox/`, so a reader
never sees part of one. A reader claims a message by renaming it into `claimed/`: of two readers
racing, exactly one rename succeeds, and the other's fails with FileNotFoundError and it moves on.
The claim is the receipt; a reader that can, writes the `.receipt` beside it (the hooks this project
installs in Claude Code and Codex do); without one, the claimed file's ctime (set by the rename) is
the time it was received.

The agent finds the folder in `$ORCHESTRATOR_GUIDANCE_DIR`. Only the standard library and the atomic
write are used: the hook imports this module on every tool call of the agent, and must start fast.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.infra.atomic import write_bytes_atomic

ENV = "ORCHESTRATOR_GUIDANCE_DIR"
INBOX = "inbox"
CLAIMED = "claimed"
RECEIPT = ".receipt"


@dataclass(frozen=True)
class Message:
    name: str  # the file name, e.g. 0001-g1.json
    id: str
    text: str
    kind: str
    queued_at: str


@dataclass(frozen=True)
class Claimed:
    message: Message
    received_at: float  # epoch seconds
    via: str | None
    tool_use_id: str | None = None


def folder(run_dir: Path) -> Path:
    return run_dir / "guidance"


def _read(path: Path) -> Message | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
        return None
    return Message(
        path.name,
        str(raw.get("id") or path.stem),
        raw["text"],
        str(raw.get("kind") or "text"),
        str(raw.get("queued_at") or ""),
    )


def queue(gdir: Path, seq: int, msg_id: str, text: str, kind: str, queued_at: str) -> Path:
    """Put one message in the inbox (whole or not at all); its file name keeps the queue's order."""
    inbox = gdir / INBOX
    inbox.mkdir(parents=True, exist_ok=True)
    (gdir / CLAIMED).mkdir(exist_ok=True)
    target = inbox / f"{seq:04d}-{msg_id}.json"
    body = {"id": msg_id, "text": text, "kind": kind, "queued_at": queued_at}
    write_bytes_atomic(target, json.dumps(body, ensure_ascii=False).encode("utf-8"))
    return target


def highest_seq(gdir: Path) -> int:
    """The largest sequence number of any message file in the folder (queued, claimed or withdrawn)."""
    top = 0
    for sub in (INBOX, CLAIMED, "withdrawn"):
        try:
            names = os.listdir(gdir / sub)
        except OSError:
            continue
        for n in names:
            head = n.split("-", 1)[0]
            if head.isdigit():
                top = max(top, int(head))
    return top


def pending(gdir: Path) -> list[Message]:
    """The messages still queued, oldest first."""
    try:
        names = sorted(n for n in os.listdir(gdir / INBOX) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []
    out = []
    for n in names:
        m = _read(gdir / INBOX / n)
        if m is not None:
            out.append(m)
    return out


def claim_all(gdir: Path, via: str, tool_use_id: str | None = None, now: float | None = None) -> list[Message]:
    """Claim every queued message (oldest first) and write each one's receipt; what this reader got."""
    got = []
    for msg in pending(gdir):
        src, dst = gdir / INBOX / msg.name, gdir / CLAIMED / msg.name
        try:
            os.rename(src, dst)
        except FileNotFoundError:
            continue  # another reader claimed it first
        receipt = {"received_at": time.time() if now is None else now, "via": via}
        if tool_use_id:
            receipt["tool_use_id"] = tool_use_id
        try:
            write_bytes_atomic(gdir / CLAIMED / (msg.name + RECEIPT), json.dumps(receipt).encode())
        except OSError:
            pass  # the claim still stands; its ctime is the receipt
        got.append(msg)
    return got


def claimed(gdir: Path) -> list[Claimed]:
    """Every claimed message with its receipt, oldest first."""
    cdir = gdir / CLAIMED
    try:
        names = sorted(n for n in os.listdir(cdir) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []
    out = []
    for n in names:
        msg = _read(cdir / n)
        if msg is None:
            continue
        received, via, tool = None, None, None
        try:
            r = json.loads((cdir / (n + RECEIPT)).read_text(encoding="utf-8"))
            if isinstance(r, dict):
                at = r.get("received_at")
                received = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
                via = str(r["via"]) if r.get("via") else None
                tool = str(r["tool_use_id"]) if r.get("tool_use_id") else None
        except (OSError, ValueError):
            pass
        if received is None:
            try:
                received = (cdir / n).stat().st_ctime  # the rename set it: the moment it was claimed
            except OSError:
                continue
        out.append(Claimed(msg, received, via, tool))
    return out
