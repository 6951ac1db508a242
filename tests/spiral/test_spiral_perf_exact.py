"""The replay's fast paths give exactly what the plain code gives (spiral/regexfast.py, spiral/shellcmd.py)."""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Sequence

import pytest

from orchestrator.buckets import BucketsFile
from spiral import regexfast, shellcmd
from spiral.alternation import boundary_first, lead_with_one
from spiral.fingerprint import Fingerprinter
from spiral.model import ToolCall
from spiral.regexfast import required, required_folded, skipping

RULES = BucketsFile().settings.rules
assert RULES.masks and RULES.error_output and RULES.error_line and RULES.poll_done
MASKS, ERROR_OUTPUT, ERROR_LINE = RULES.masks, RULES.error_output, RULES.error_line
PATTERNS = [
    MASKS,
    ERROR_OUTPUT,
    ERROR_LINE,
    RULES.poll_done,
    re.compile(r"(?:x|y)?z"),
    re.compile(r"(a)\1|b"),
    re.compile(r"[\d\-\]]+q|(?<=a)b"),
    re.compile(r"(?:ab)+|\d{2,}|\s+x"),
    re.compile(r"^x|y$", re.M),
    re.compile("é+|ß|(?=[0-9]*[a-f])[0-9a-f]{3}"),
    # the `\\b` alternatives tried first (spiral/alternation.py), or left in place where they must not move
    re.compile(r"/x|\b\d+|(?:\.y|\bz\w)"),
    re.compile(r"(a|\bb)|\bc"),
    re.compile(r"[|]x|\b\d|\||\bq\b"),
    re.compile(r"ab|\bab\d|x"),  # `ab` first where `\bab1` could match too: not moved
    re.compile(r"\s+x|\b\w+y|_z"),  # `\s` and `\w` share nothing: moved ahead of `\s+x`, not of `_z` after it
    re.compile(r"_z|\b\w+y"),  # `_` is a word character: not moved
    re.compile(r"[a-c]q|\b[c-e]r|-"),  # the classes share `c`: not moved
    # ...and each alternative's leading repeat of one character split off (`\\d{4}` as `\\d\\d{3}`)
    re.compile(r"\b\d{3}x|={2,}|\b[a-f]{2,4}\b|-+>|\b\w{1}q|/z{2}|\b1{1,2}T"),
    re.compile(r"\bx{2,3}?y|\.+z|\b\d++:|_{2}"),  # lazy and possessive repeats: left as they are
    re.compile(r"a*"),  # can match empty: left as it is
    re.compile(r"\bfoo|[^a]b"),  # a negated class: left as it is
]
ALPHABET = 'aAbcdefxyzqré ß\n\t-]/_=*~|[0123456789:.HTTP/1.1 404 Not Found status"lLine pid tmp/foo ms s KB % E  '


def _texts(seed: int, n: int, pieces: Sequence[str] = ALPHABET, lo: int = 0, hi: int = 120) -> list[str]:
    """`n` random texts of `lo` to `hi` - 1 pieces (characters of ALPHABET unless told)."""
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randrange(lo, hi))) for _ in range(n)]


@pytest.mark.parametrize("pattern", PATTERNS, ids=range(len(PATTERNS)))
def test_a_skipping_pattern_finds_exactly_the_matches_of_the_pattern(pattern: re.Pattern[str]) -> None:
    fast = skipping(pattern)
    for text in _texts(1, 3000):
        assert fast.sub("#", text) == pattern.sub("#", text), text
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in pattern.finditer(text)], text


def test_the_masks_rewritten_find_exactly_what_they_found_on_texts_made_to_match() -> None:
    fast = skipping(MASKS)
    assert fast.pattern.startswith("(?=[") and "(?:\\b(?:" in fast.pattern  # the \\b alternatives moved first
    pieces = [
        "2026-12-02T01:02:03.5Z",
        "12:03:04",
        "4.2s",
        "2m31s",
        "0x1f",
        "deadbeef1",
        "abc1234",
        "/tmp/x",
        "Line 4",
        "f.py:41:7",
        "line=9",
        "pid 42",
        "process 7",
        "[123]",
        "3 KB",
        "15%",
        "===",
        "---",
        "___",
        "x",
        "_",
        "-",
        ".",
        "/",
        "[",
        " ",
        "\n",
        "a",
        "0",
        "9",
        "é",
    ]
    for text in _texts(8, 20000, pieces, 0, 9):
        assert fast.sub("#", text) == MASKS.sub("#", text), text
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in MASKS.finditer(text)], text


def test_the_bucket_masks_are_rewritten_and_what_cannot_be_reasoned_about_is_not() -> None:
    assert skipping(MASKS) is not MASKS and skipping(ERROR_OUTPUT) is not ERROR_OUTPUT
    assert skipping(ERROR_LINE) is ERROR_LINE  # case-insensitive: left as it is
    assert skipping(PATTERNS[-2]) is PATTERNS[-2] and skipping(PATTERNS[-1]) is PATTERNS[-1]


def _lexer_tokens(text: str) -> list[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError:
        return text.split()


def test_single_quoted_commands_split_as_shlex_splits_them() -> None:
    alphabet = "ab1 '';&|()<>\t\r\n\x0b\xa0é#~=-./*?$2"
    checked = 0
    for text in _texts(4, 40000, alphabet, 1, 16):
        if "'" not in text or text.count("'") % 2:
            continue
        tokens = [t.replace("'", "") for t in shellcmd._QUOTED_TOKENS.findall(text)]
        assert tokens == _lexer_tokens(text), repr(text)
        checked += 1
    assert checked > 3000


@pytest.mark.parametrize(
    "pattern",
    [
        ERROR_OUTPUT,
        skipping(ERROR_OUTPUT),  # (a fingerprinter pickled and read back works it out from this one)
        re.compile(r"(?:foo)+bar|x\d+yzw"),
        re.compile(r"a(?=x)bcd|HTTP/\d"),
        re.compile(r"\bstatus(Code)?:"),
        re.compile(r"x{3}y|e {2,}z|ab+cde"),
    ],
    ids=range(6),
)
def test_every_match_holds_one_of_the_required_strings(pattern: re.Pattern[str]) -> None:
    needs = required(pattern)
    assert needs is not None
    pieces = [
        *needs,
        "foo",
        "bar",
        "x1yzw",
        "HTTP/2",
        "abcd",
        "axbcd",
        "status:",
        "statusCode:",
        '"status": 503',
        " ",
        "a",
        "4",
        "xxxy",
        "e   z",
        "abbcde",
    ]
    hits = 0
    for text in _texts(2, 3000, pieces, 0, 6):
        if pattern.search(text) is not None:
            hits += 1
            assert any(s in text for s in needs), text
    assert hits > 100
    assert required(ERROR_LINE) is None and required(MASKS) is None  # case-insensitive; a branch with no literal


def test_a_case_insensitive_pattern_matches_no_ascii_line_without_one_of_its_folded_strings() -> None:
    needs = required_folded(ERROR_LINE)
    assert needs is not None and "e  " in needs and all(n == n.lower() and n.isascii() for n in needs)
    assert required_folded(ERROR_OUTPUT) is None and required_folded(re.compile("(?i)\u212aelvin")) is None
    pieces = [
        *needs,
        *(n.upper() for n in needs),
        "ErRoR",
        "E   x",
        "Fatal:",
        "e ",
        " ",
        "\n",
        "\r",
        "x",
        "\u212a",
        "ſ",
        "ı",
    ]
    hits = 0
    for text in _texts(3, 4000, pieces, 0, 6):
        for line in text.splitlines():
            if ERROR_LINE.search(line) is not None and line.isascii():
                hits += 1
                assert any(n in line.lower() for n in needs), line
    assert hits > 300


def _plain_error(fp: Fingerprinter, text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if ERROR_LINE.search(line):
            return fp._mask(line) or None
    key = fp.masked(text)
    return key if any(ch.isalnum() for ch in key) else None  # only rules and masks: no key


def test_the_same_error_key_skips_lines_exactly() -> None:
    fp = Fingerprinter(MASKS, ERROR_LINE, ERROR_OUTPUT)
    pieces = [
        "Error: x",
        "TypeError: bad",
        "FAILED t.py",
        "ok",
        "no such file",
        "NOT FOUND",
        "E   assert",
        "\n",
        " ",
        "ſ",
        "12:03:04",
    ]
    for text in _texts(5, 3000, pieces, 1, 8):
        call = ToolCall(0.0, "Bash", command="x", is_error=True, result_seen=True, output_ends=text)
        assert fp.error(call) == _plain_error(fp, text), text


def test_a_short_outputs_head_and_tail_masked_once_are_what_each_masks_alone() -> None:
    fp = Fingerprinter(MASKS, ERROR_LINE, ERROR_OUTPUT)
    for i, text in enumerate(_texts(6, 2000)):
        got = (fp._head(text), fp._tail(text)) if i % 2 else (fp._tail(text), fp._head(text))[::-1]
        assert got == (fp._mask(text[:100]), fp._mask(text)[-120:]), text


def test_whitespace_folds_as_the_regex_folded_it() -> None:
    space = re.compile(r"\s+")
    chars = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u3000\u200bab#"
    for text in _texts(7, 50000, chars, 0, 12):
        assert " ".join(text.split()) == space.sub(" ", text).strip(), repr(text)


@pytest.mark.parametrize(
    "text, moved",
    [
        (r"/x|\b\d+|(?:\.y|\bz\w)", True),
        (r"\s+x|\b\w+y", True),
        (r"ab|\bab\d|x", False),  # both can match at an `a`
        (r"_z|\b\w+y", False),
        (r"[a-c]q|\b[c-e]r|-", False),
        (r"x|\b(\d)\1", False),  # a back reference: group numbers would move
        (r"(?x) x | \b y", False),  # verbose: spaces are not literal
        (r"\bx|\by", False),  # nothing to move
        (r"x|\b\d*", False),  # can match empty
    ],
)
def test_the_boundary_alternatives_move_first_only_where_no_match_can_change(text: str, moved: bool) -> None:
    assert (boundary_first(text, re.compile(text).flags, regexfast._first_items) is not None) == moved


@pytest.mark.parametrize(
    "alt, led",
    [
        (r"\d{4}-x", r"\d\d{3}-x"),
        (r"=+", r"==*"),
        (r"={2,}", r"==+"),
        (r"={3,}", r"=={2,}"),
        (r"[a-f]{7,64}\b", r"[a-f][a-f]{6,63}\b"),
        (r"x{1}y", r"xy"),
        (r"x{3}y", r"xx{2}y"),
        (r"x{1,2}", r"xx{0,1}"),
        (r"[]a]+", r"[]a][]a]*"),
        (r"\.+z", r"\.\.*z"),
        (r"x{2}?y", r"x{2}?y"),  # lazy
        (r"x{2,}+", r"x{2,}+"),  # possessive
        (r"x{0,3}", r"x{0,3}"),  # can be absent
        (r"(?:ab)+", r"(?:ab)+"),  # a group
        (r"\x41+", r"\x41+"),  # an escape of more than one character
        (r"\b\d+", r"\b\d+"),  # zero-width first
        (r" +x", r" +x"),  # a space (a verbose pattern would not read it)
        (r"x{a}", r"x{a}"),  # not a count: a literal brace
    ],
)
def test_a_leading_repeat_of_one_character_is_split_off_and_nothing_else_is(alt: str, led: str) -> None:
    assert lead_with_one(alt) == led
    texts = _texts(3, 400, "x=-]a0189bcdef.zyT \n", 0, 30)
    one, other = re.compile(alt), re.compile(led)
    assert [m.span() for t in texts for m in one.finditer(t)] == [m.span() for t in texts for m in other.finditer(t)]
