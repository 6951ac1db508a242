"""What a notification says: composed from the run's record, secrets redacted (pure)."""

from __future__ import annotations

import re

from orchestrator.record.model import RunRecord

MAX_LINE = 220
MAX_BODY = 1800

# Tokens that must never leave the machine in a page, whatever the agent printed. Redaction runs
# on the whole text before anything is cut (a cut secret no longer matches its pattern); hex
# digests (commit ids, sha256 sums) are kept: a hex secret is caught only by its name or flag.
# Names are matched from their start only and at most 80 characters long, with no backtracking
# into them (possessive), so that a long run of letters costs linear time, not quadratic.
_KEY_WORDS = (
    r"api[_-]?key|secret|token|passw(?:or)?d|pwd|passphrase|credentials?|auth"
    r"|(?:private|access|account|sharedaccess|client|master|signing|encryption|license)[_-]?key"
    r"|key[_-]?data|(?<![a-z])pass(?![a-z])"
)
_KEY_NAME = r"(?<![A-Za-z0-9_.\-])(?=[A-Za-z0-9_.\-]{0,80}?(?:" + _KEY_WORDS + r"))[A-Za-z0-9_.\-]{1,80}+"
_FLAG_NAME = (
    r"(?=[A-Za-z0-9_\-]{0,80}?(?:" + _KEY_WORDS + r"))[A-Za-z0-9_\-]{1,80}+"
    r"(?<!file)(?<!stdin)(?<!path)(?<!env)(?<!type)(?<!dir)"
)
_VALUE = r"[^\s'\",;}&]"
_LOGINS = r"(?:docker|podman|buildah|skopeo|nerdctl|oras|crane|helm(?:\s+registry)?)\s+login"
_PREFIXED = (  # vendor tokens recognisable by their prefix alone
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|gl[a-z]{1,6}-[A-Za-z0-9_\-]{20,}"
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{16,}|dckr_(?:pat|oat)_[A-Za-z0-9_\-]{16,}"
    r"|hf_[A-Za-z0-9]{20,}|api_org_[A-Za-z0-9]{20,}|xox[abposer]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{16,}|(?:gsk|xai)[_-][A-Za-z0-9]{16,}"
    r"|hv[sbr]\.[A-Za-z0-9_\-]{20,}|AT(?:BB|ATT|CTT)[A-Za-z0-9_=\-]{20,}|SK[0-9a-fA-F]{32}"
    r"|shp(?:at|ss|ca|pa)_[A-Za-z0-9]{20,}|do[opr]_v1_[A-Za-z0-9]{20,}|lin_api_[A-Za-z0-9]{20,}"
    r"|sntry[su]_[A-Za-z0-9_=\-]{20,}|PMAK-[A-Za-z0-9\-]{20,}|NRAK-[A-Z0-9]{20,}|r8_[A-Za-z0-9]{20,}"
    r"|dapi[0-9a-f]{32}|key-[0-9a-f]{32}|dp\.(?:st|ct|sa|scim)\.[A-Za-z0-9_\-.]{20,}|glsa_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}|ya29\.[A-Za-z0-9_\-]{20,}|SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}|[0-9]{8,10}:AA[A-Za-z0-9_\-]{30,}"
)
_SECRETS = [
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)",
            re.S,
        ),
        "[REDACTED-PRIVATE-KEY]",
    ),
    (re.compile(r"\b(sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,})"), "sk-[REDACTED]"),
    (re.compile(r"(?<![A-Za-z0-9])(?:" + _PREFIXED + r")(?![A-Za-z0-9])"), "[REDACTED-TOKEN]"),
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"), "https://hooks.slack.com/[REDACTED]"),
    (re.compile(r"(?i)(discord(?:app)?\.com/api/webhooks/[0-9]+/)[A-Za-z0-9_\-]+"), r"\1[REDACTED]"),
    # headers whose whole value is a credential (up to the quote or the line's end)
    (re.compile(r"(?i)(\b(?:proxy-)?authorization\s*[:=]\s*)[^'\"\n\\]+"), r"\1[REDACTED]"),
    (re.compile(r"(?i)(\b(?:set-)?cookie\s*:\s*)[^'\"\n\\]+"), r"\1[REDACTED]"),
    (re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{12,}"), r"\1 [REDACTED]"),
    # user:password@host, including an empty user and passwords holding '@'
    (
        re.compile(r"(?i)((?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{0,30}+://[^\s:/@]*:)\S{1,256}@(?=[^\s@/]+(?:[/:?\s]|$))"),
        r"\1[REDACTED]@",
    ),
    # curl -u user:password, --user user:password
    (re.compile(r"(\s(?:-u|--user)(?:\s+|=)['\"]?[^\s:'\"]+:)(?!//)[^\s'\"]+"), r"\1[REDACTED]"),
    # docker login -p PASSWORD, sshpass -p PASSWORD, redis-cli -a PASSWORD (-p elsewhere is a port, a plugin...)
    (
        re.compile(r"(?i)(\b" + _LOGINS + r"\b[^|;&\n]*?\s(?:-p|--password)(?:=|\s+))(['\"]?)[^\s'\"]+\2"),
        r"\1\2[REDACTED]\2",
    ),
    (re.compile(r"(\bsshpass\s+(?:-\w+\s+)*-p\s*)(['\"]?)[^\s'\"]+\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\bredis-cli\b[^|;&\n]*?\s-a\s+)(['\"]?)[^\s'\"]+\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\bpass:)[^\s'\"]+"), r"\1[REDACTED]"),  # openssl -passin pass:SECRET
    # echo SECRET | docker login --password-stdin (or sudo -S, chpasswd)
    (
        re.compile(
            r"(\b(?:echo|printf)\s+)(['\"]?)[^'\"|\n]{1,256}\2(?=\s*\|[^|]*(?:--password-stdin|sudo\s+-S|chpasswd|passwd\b))"
        ),
        r"\1\2[REDACTED]\2",
    ),
    # mysql -pPASSWORD (anywhere when it holds a digit, capital or sign; `tar -pxzf` is kept)
    (re.compile(r"(\s--password(?:=|\s+))(['\"]?)[^\s'\"]{3,}\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\b(?:mysql\w*|mariadb\w*)\b[^|;&\n]*?\s-p)(['\"]?)[^\s'\"]{3,}\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\s-p)(?=[^\s'\"]*[0-9A-Z!@#$%^&*+=])[^\s'\"\-:][^\s'\":]{2,}(?=\s|$)"), r"\1[REDACTED]"),
    (re.compile(r"(\s-p\s+)(['\"])(?:(?!\2).)+\2"), r"\1\2[REDACTED]\2"),
    # .netrc: machine HOST login USER password SECRET
    (re.compile(r"(?i)(\b(?:machine|login)\s+\S+\s+(?:login\s+\S+\s+)?password\s+)\S+"), r"\1[REDACTED]"),
    # aws configure set aws_secret_access_key VALUE, npm config set //host/:_authToken VALUE
    (
        re.compile(
            r"(?i)(\b(?:config|configure)\s+set\s+(?:--\S+\s+)*\S{0,80}?" + _KEY_NAME + r"\s+)(['\"]?)[^\s'\"]+\2"
        ),
        r"\1\2[REDACTED]\2",
    ),
    # --api-key VALUE, --token=VALUE, -password VALUE
    (re.compile(r"(?i)((?<![\w-])--?" + _FLAG_NAME + r"(?:=|\s+))(['\"])(?:(?!\2).)+\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(?i)((?<![\w-])--?" + _FLAG_NAME + r"(?:=|\s+))(?!-)" + _VALUE + "+"), r"\1[REDACTED]"),
    # Azure SAS signatures, AWS signatures in URLs
    (
        re.compile(r"(?i)([?&;](?:sig|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&\s'\"]+"),
        r"\1[REDACTED]",
    ),
    # name=value, name: value, "name": "value" (quoted values may hold spaces)
    (re.compile(r"(?i)(" + _KEY_NAME + r"['\"]?\s*(?:=|:(?!:))\s*)(['\"])(?:(?!\2).){3,}\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(?i)(" + _KEY_NAME + r"['\"]?\s*(?:=|:(?!:))\s*)" + _VALUE + "{4,}"), r"\1[REDACTED]"),
    (
        re.compile(
            r"((?<![A-Za-z0-9_])(?=[A-Z0-9_]{0,80}?(?:KEY|SECRET|PASS|PWD|AUTH|SIG))[A-Z0-9_]{1,80}+=)"
            + _VALUE
            + "{4,}"
        ),
        r"\1[REDACTED]",
    ),
    # anything that looks like a long random key: letters and digits mixed, not a hex digest
    (
        re.compile(
            r"(?<![A-Za-z0-9_\-])(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[A-Z])[A-Za-z0-9_\-]{32,}+"
        ),
        "[REDACTED-KEY]",
    ),
    # a 40-character base64 secret (an AWS secret access key), slashes and pluses allowed
    (
        re.compile(
            r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*[0-9])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
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
    "over_budget": "run {run} stopped at its spend ceiling",
}


def redact(text: str) -> str:
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    return text


# a path the detector shortened to its end ("...rest/of/it"): its first, partial part may be the
# tail of a secret that no pattern can recognise any more, so it is dropped up to the next "/"
# (or, in a cut file name, the run of token characters it starts with)
_CUT_PATH = re.compile(r"(?<!\S)\.\.\.[^\s/]*(/\S)")
_CUT_NAME = re.compile(r"(?<!\S)\.\.\.[A-Za-z0-9_+=~\-]+")


def redact_cut(text: str) -> str:
    """`redact`, and the partial first part of a path cut at its start dropped (evidence lines)."""
    return redact(_CUT_NAME.sub("...", _CUT_PATH.sub(r"...\1", text)))


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


def spiral_page(record: RunRecord, cli: str = "./dev.sh", episode: int = 1) -> tuple[str, str]:
    """(title, body) of the page for a run that tripped the detector in the soft band (episode 1),
    or tripped again after guidance reached the agent (episode n: what it did since)."""
    run = record.run_id
    spiral = record.spiral
    ep = next((e for e in spiral.episodes if e.n == episode), None) if episode > 1 else None
    if ep is not None:
        evidence, signals, recent, at = list(ep.evidence), list(ep.signals), ep.recent, ep.tripped_at_min
    else:
        evidence = list(spiral.page_evidence or spiral.evidence)
        signals = list(spiral.page_signals or spiral.signals)
        recent, at = spiral.page_recent, spiral.tripped_at_min
    wall = evidence.pop() if evidence and evidence[-1].endswith("expected wall-clock") else ""
    title = f"run {run} may be spiraling" + (f" again (episode {episode})" if ep is not None else "")
    lines = [
        f"Ticket {record.ticket_id} (run {run}, {record.bucket} bucket, agent {record.agent}): "
        f"{at or 0:.0f} min in" + (f", {wall}" if wall else "") + "."
    ]
    if ep is not None:
        lines.append(f"Guidance reached the agent at {ep.since_min:g} min; this is what it did since.")
    lines.append("Signals:")
    lines.extend(f"- {name}: {redact_cut(text)}" for name, text in zip(signals, evidence, strict=False))
    if recent:
        lines.append("Last tool calls:")
        lines.extend(f"  {r}" for r in recent)
    lines.append("Act:")
    lines.append(f"  {cli} logs {run}")
    lines.append(f"  {cli} report {run}   (the run's timeline as an HTML file)")
    if record.guidance_via is not None:
        lines.append(f'  {cli} nudge {run} "what to do instead"   (or --redirect, --wrap-up)')
    lines.append(f"  {cli} kill {run}")
    return redact(title), _finish(lines)


def escalation_notice(record: RunRecord, rung: int, cli: str = "./dev.sh") -> tuple[str, str]:
    """(title, body) for a rung of the run's escalation ladder."""
    run = record.run_id
    step = next((e for e in record.escalations if e.rung == rung), None)
    action = step.action if step is not None else "?"
    lines = [
        f"Ticket {record.ticket_id} (run {run}): escalation rung {rung} of {len(record.escalation)}, "
        f"{action}, at {step.at_min if step is not None else 0:g} min."
    ]
    if step is not None:
        lines.append(f"Why: {step.why}.")
        lines.extend(f"- {name}: {redact_cut(text)}" for name, text in zip(step.signals, step.evidence, strict=False))
        if step.guidance_id:
            lines.append(f"Sent to the agent as guidance {step.guidance_id}; `status` shows its receipt.")
    lines.append(f"  {cli} logs {run}")
    if action != "stop":
        lines.append(f"  {cli} kill {run}")
    return redact(f"run {run}: escalation {rung} ({action})"), _finish(lines)


def budget_notice(record: RunRecord, key: str, cli: str = "./dev.sh") -> tuple[str, str]:
    """(title, body) for a run at 70 % of its spend ceiling, or a queued run the daily ceiling holds."""
    run = record.run_id
    if key.startswith("budget-held"):
        lines = [f"Ticket {record.ticket_id} (run {run}) waits in the queue: {record.held}.", f"  {cli} status"]
        return redact(f"run {run}: held by the daily spend ceiling"), _finish(lines)
    spend = record.spend_live or record.spend
    ceilings = []
    if record.max_usd is not None:
        cost = "unpriced" if spend is None or spend.cost_usd is None else f"${spend.cost_usd:.2f}"
        ceilings.append(f"{cost} of ${record.max_usd:.2f}")
    if record.max_tokens is not None:
        ceilings.append(f"{spend.tokens if spend else 0} of {record.max_tokens} tokens")
    lines = [
        f"Ticket {record.ticket_id} (run {run}) has spent {record.budget_warned_at or 0:.0%} of its ceiling: "
        + "; ".join(ceilings)
        + ". At 100 % it is stopped (ending over_budget).",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return redact(f"run {run}: {record.budget_warned_at or 0:.0%} of its spend ceiling"), _finish(lines)


def undelivered_notice(record: RunRecord, gid: str, cli: str = "./dev.sh") -> tuple[str, str]:
    """(title, body) for guidance that never reached the agent (withdrawn from its inbox)."""
    run = record.run_id
    g = next((g for g in record.guidance if g.id == gid), None)
    why = g.undelivered if g is not None and g.undelivered else "it was not received"
    lines = [
        f"Ticket {record.ticket_id} (run {run}): guidance {gid} never reached the agent: {why}.",
        "It was taken back out of the inbox, so it will not arrive late.",
        f"  {cli} logs {run}",
        f"  {cli} kill {run}",
    ]
    return redact(f"run {run}: guidance {gid} undelivered"), _finish(lines)


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
    return redact(f"run {run}: model API failing"), _finish(lines)


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
    return redact(title), _finish(lines)
