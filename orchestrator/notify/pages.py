"""What a notification says: composed from the run's record, secrets redacted (pure)."""

from __future__ import annotations

import re

from orchestrator.record.model import RunRecord

MAX_LINE = 220
MAX_BODY = 1800

# Tokens that must never leave the machine in a page, whatever the agent printed.
_KEY_NAME = r"[A-Za-z0-9_.\-]*(?:api[_-]?key|secret|token|passw(?:or)?d|pwd|passphrase|credential|auth)[A-Za-z0-9_.\-]*"
_SECRETS = [
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
        "[REDACTED-PRIVATE-KEY]",
    ),
    (re.compile(r"\b(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,})"), "sk-[REDACTED]"),
    (re.compile(r"\b((?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,})"), "[REDACTED-STRIPE-KEY]"),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "[REDACTED-GITHUB-TOKEN]"),
    (re.compile(r"\b(glpat-[A-Za-z0-9_\-]{16,})"), "[REDACTED-GITLAB-TOKEN]"),
    (re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]{10,})"), "[REDACTED-SLACK-TOKEN]"),
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"), "https://hooks.slack.com/[REDACTED]"),
    (re.compile(r"\b((?:gsk|xai)[_-][A-Za-z0-9]{16,})"), "[REDACTED-API-KEY]"),
    (re.compile(r"\b(SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,})"), "[REDACTED-SENDGRID-KEY]"),
    (re.compile(r"\b(ya29\.[A-Za-z0-9_\-]{20,})"), "[REDACTED-GOOGLE-TOKEN]"),
    (re.compile(r"\b(AKIA[0-9A-Z]{16})\b"), "[REDACTED-AWS-KEY]"),
    (re.compile(r"\b(AIza[0-9A-Za-z_\-]{30,})"), "[REDACTED-GOOGLE-KEY]"),
    (re.compile(r"\b(eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})"), "[REDACTED-JWT]"),
    (re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{12,}"), r"\1 [REDACTED]"),
    # user:password@host, including an empty user and passwords holding '@'
    (re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^\s:/@]*:)\S+@(?=[^\s@/]+(?:[/:?\s]|$))"), r"\1[REDACTED]@"),
    # curl -u user:password, mysql -pPASSWORD, docker login -p PASSWORD
    (re.compile(r"(\s-u\s+['\"]?[^\s:'\"]+:)[^\s'\"]+"), r"\1[REDACTED]"),
    (re.compile(r"(\s(?:-p|--password(?:=|\s+)))(['\"]?)[^\s'\"]{3,}\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\s-p)[^\s'\"-][^\s'\"]{2,}"), r"\1[REDACTED]"),
    (re.compile(r"(\s-p\s+)(['\"])(?:(?!\2).)+\2"), r"\1\2[REDACTED]\2"),
    # name=value, name: value, "name": "value" (quoted values may hold spaces)
    (re.compile(r"(?i)(\b" + _KEY_NAME + r"['\"]?\s*[=:]\s*)(['\"])(?:(?!\2).){3,}\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(?i)(\b" + _KEY_NAME + r"['\"]?\s*[=:]\s*)[^\s'\",;}]{4,}"), r"\1[REDACTED]"),
    # anything that looks like a long random key: letters and digits mixed, not a hex digest
    (
        re.compile(
            r"\b(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[A-Z])"
            r"[A-Za-z0-9_\-]{32,}\b"
        ),
        "[REDACTED-KEY]",
    ),
]

ENDING_TITLES = {
    "stalled": "run {run} stalled",
    "failed": "run {run} failed",
    "succeeded": "run {run} succeeded",
    "killed": "run {run} was killed",
    "lost": "run {run} was lost",
}


def redact(text: str) -> str:
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    return text


def _cut(line: str, limit: int = MAX_LINE) -> str:
    line = " ".join(line.split()) if "\n" in line else line
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _finish(lines: list[str]) -> str:
    out: list[str] = []
    total = 0
    for line in lines:
        line = _cut(redact(line))
        if total + len(line) + 1 > MAX_BODY:
            out.append("... (cut)")
            break
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)


def spiral_page(record: RunRecord, cli: str = "./dev.sh") -> tuple[str, str]:
    """(title, body) of the page for a run that tripped the detector in the soft band."""
    run = record.run_id
    spiral = record.spiral
    evidence = list(spiral.page_evidence or spiral.evidence)
    signals = list(spiral.page_signals or spiral.signals)
    wall = evidence.pop() if evidence and evidence[-1].endswith("expected wall-clock") else ""
    title = f"run {run} may be spiraling"
    lines = [
        f"Ticket {record.ticket_id} (run {run}, {record.bucket} bucket, agent {record.agent}): "
        f"{spiral.tripped_at_min or 0:.0f} min in" + (f", {wall}" if wall else "") + "."
    ]
    lines.append("Signals:")
    lines.extend(f"- {name}: {text}" for name, text in zip(signals, evidence, strict=False))
    recent = spiral.page_recent
    if recent:
        lines.append("Last tool calls:")
        lines.extend(f"  {r}" for r in recent)
    lines.append("Act:")
    lines.append(f"  {cli} logs {run}")
    lines.append(f"  {cli} kill {run}")
    return title, _finish(lines)


def provider_notice(record: RunRecord, cli: str = "./dev.sh") -> tuple[str, str]:
    """(title, body) for a run whose agent keeps failing to reach its model API (not a spiral)."""
    run = record.run_id
    p = record.provider
    what = p.text if p is not None else "retrying its model API"
    since = f" since {p.since[11:19]} UTC" if p is not None and p.since else ""
    lines = [
        f"Ticket {record.ticket_id} (run {run}, agent {record.agent}): the agent's model API is failing: "
        f"{what}{since}.",
        "This is the provider, not the agent: the time does not count toward the spiral signals.",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return f"run {run}: model API failing", _finish(lines)


def ending_notice(record: RunRecord, event: str, cli: str = "./dev.sh") -> tuple[str, str]:
    run = record.run_id
    title = ENDING_TITLES.get(event, "run {run}: " + event).format(run=run)
    lines = [
        f"Ticket {record.ticket_id} (run {run}, {record.bucket} bucket): {event}"
        + (f": {record.reason}" if record.reason else "")
        + "."
    ]
    hints = record.hints
    if hints:
        lines.append("Spiral signals seen: " + ", ".join(hints))
    lines.append(f"  {cli} logs {run}")
    return title, _finish(lines)
