"""Secrets out of any text we show or send: pages, the record's reasons, `logs`, replay evidence (pure).

Used wherever text that came from an agent, a ticket or a remote reaches a person or a file of
ours; orchestrator/notify/pages.py applies it to every page.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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
_LOGINS = r"(?:docker|podman|buildah|skopeo|nerdctl|oras|crane|helm(?:\s+registry)?|az|oc)\s+login"
_HTPASSWD_FLAGS = r"(?:-\w+\s+)"
_HTPASSWD = (  # up to the password: after USER with -n (no file), after FILE USER without
    r"\bhtpasswd\s+(?="
    + _HTPASSWD_FLAGS
    + r"*-\w*b)(?:(?="
    + _HTPASSWD_FLAGS
    + r"*-\w*n)"
    + _HTPASSWD_FLAGS
    + r"+\S+\s+|(?!"
    + _HTPASSWD_FLAGS
    + r"*-\w*n)"
    + _HTPASSWD_FLAGS
    + r"+\S+\s+\S+\s+)"
)
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
        re.compile(r"(?i)(\b" + _LOGINS + r"\b[^|;&\n]{0,512}?\s(?:-p|--password)(?:=|\s+))(['\"]?)[^\s'\"]+\2"),
        r"\1\2[REDACTED]\2",
    ),
    (re.compile(r"(\bsshpass\s+(?:-\w+\s+)*-p\s*)(['\"]?)[^\s'\"]+\2"), r"\1\2[REDACTED]\2"),
    (re.compile(r"(\bredis-cli\b[^|;&\n]{0,512}?\s-a\s+)(['\"]?)[^\s'\"]+\2"), r"\1\2[REDACTED]\2"),
    (
        re.compile(r"(\bopenssl\b[^|;&\n]{0,512}?\s-k\s+)(['\"]?)[^\s'\"]+\2"),
        r"\1\2[REDACTED]\2",
    ),  # openssl enc -k PASS
    # htpasswd -b FILE USER PASSWORD, htpasswd -nb USER PASSWORD (-c, -B... may join the -b)
    (
        re.compile(r"(" + _HTPASSWD + r")(['\"])(?:(?!\2).)+\2"),
        r"\1\2[REDACTED]\2",
    ),
    (re.compile(r"(" + _HTPASSWD + r")[^\s'\"]+"), r"\1[REDACTED]"),
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
    (re.compile(r"(\b(?:mysql\w*|mariadb\w*)\b[^|;&\n]{0,512}?\s-p)(['\"]?)[^\s'\"]{3,}\2"), r"\1\2[REDACTED]\2"),
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
        re.compile(
            r"(?i)([?&;](?:sig|signature|key|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&\s'\"]+"
        ),
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


# A gate per pattern: something every match of the pattern contains, looked for before the pattern
# runs (a pattern with a lookahead over up to 80 characters at every position costs ~0.3 s a MB; a
# literal, a hundredth of that). A gate is looked for again only when a substitution changed the
# text ("[REDACTED-TOKEN]" holds a key word of its own). tests/notify/test_secrets.py holds each gate to
# its pattern on every secret shape we know.
_KEY_PARTS = ("key", "secret", "token", "pass", "pwd", "auth", "credential")  # every key word holds one
_ASSIGN = re.compile(r"(?i)(?:" + _KEY_WORDS + r")[A-Za-z0-9_.\-]*['\"]?\s*(?:=|:(?!:))")  # a key word, = or :
_FLAG = re.compile(r"(?i)-[A-Za-z0-9_\-]{0,80}?(?:" + _KEY_WORDS + r")")  # a flag holding a key word


# what re's IGNORECASE takes for an ASCII letter and str.lower() does not: dotless i, long s, and the
# combining dot that "İ".lower() leaves after its i
_FOLD = {0x131: "i", 0x17F: "s", 0x307: None}


def _key_part(text: str) -> bool:
    low = text.lower()
    if not low.isascii():
        low = low.translate(_FOLD)
    return any(part in low for part in _KEY_PARTS)


def secret_name(name: str) -> bool:
    """A mapping's key that names a secret (`password`, `api_key`, `authToken`...), as `name=` would."""
    return _ASSIGN.search(name + "=") is not None


def _assign_gate(text: str) -> bool:
    return _key_part(text) and _ASSIGN.search(text) is not None


def _flag_gate(text: str) -> bool:
    return _key_part(text) and _FLAG.search(text) is not None


def _found(pattern: str) -> Callable[[str], bool]:
    search = re.compile(pattern).search

    def gate(text: str) -> bool:
        return search(text) is not None

    return gate


_GATES: dict[int, Callable[[str], bool]] = {
    0: _found(r"-----BEGIN "),
    1: _found(r"sk-"),
    3: _found(r"hooks\.slack\.com"),
    4: _found(r"(?i)discord"),
    5: _found(r"(?i)authorization"),
    6: _found(r"(?i)cookie"),
    7: _found(r"(?i)bearer|token|basic"),
    8: _found(r"://"),
    9: _found(r"-u"),
    10: _found(r"(?i)login"),
    11: _found(r"sshpass"),
    12: _found(r"redis-cli"),
    13: _found(r"openssl"),
    14: _found(r"htpasswd"),
    15: _found(r"htpasswd"),
    16: _found(r"pass:"),
    17: _found(r"echo|printf"),
    18: _found(r"--password"),
    19: _found(r"mysql|mariadb"),
    20: _found(r"-p"),
    21: _found(r"-p"),
    22: _found(r"(?i)password"),
    23: _found(r"(?i)\bconfig(?:ure)?\s+set\b"),
    24: _flag_gate,
    25: _flag_gate,
    26: _found(r"(?i)[?&;](?:sig|signature|key|x-amz-)"),
    27: _assign_gate,
    28: _assign_gate,
    29: _found(r"KEY|SECRET|PASS|PWD|AUTH|SIG"),
}
_GATED = [(pattern, repl, _GATES.get(i)) for i, (pattern, repl) in enumerate(_SECRETS)]


def redact(text: str) -> str:
    seen: dict[Callable[[str], bool], tuple[str, bool]] = {}  # gate -> (the text it was asked of, its answer)
    for pattern, repl, gate in _GATED:
        if gate is not None:
            known = seen.get(gate)
            if known is None or known[0] is not text:
                known = (text, gate(text))
                seen[gate] = known
            if not known[1]:
                continue
        text = pattern.sub(repl, text)
    return text


# a path the detector shortened to its end ("...rest/of/it"): its first, partial part may be the
# tail of a secret that no pattern can recognise any more, so it is dropped up to the next "/"
# (or, in a cut file name, the run of token characters it starts with); also where a quote or a
# bracket opens before it, as a finding's `'...text'` does
_CUT_PATH = re.compile(r"(?<![^\s'\"(\[])\.\.\.[^\s/]*(/\S)")
_CUT_NAME = re.compile(r"(?<![^\s'\"(\[])\.\.\.[A-Za-z0-9_+=~\-]+")


def redact_cut(text: str) -> str:
    """`redact`, and the partial first part of a path cut at its start dropped (evidence lines)."""
    return redact(_CUT_NAME.sub("...", _CUT_PATH.sub(r"...\1", text)))
