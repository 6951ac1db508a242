"""A pattern's top-level alternatives, tried `\\b` ones first where that cannot change a match (pure).

`re` tries the alternatives of an alternation in order, at every position where a match may
start. The masks of buckets.yaml join into fourteen such alternatives; ten of them start with
`\\b` and a word character, so at a position inside a word each of those ten is entered only to
fail its `\\b`. `boundary_first` rewrites `A|\\bB|C|\\bD` as `\\b(?:B|D)|A|C`: one `\\b` test for
all of them, tried first.

Alternatives are tried in order, and the first that matches at a position wins; so the rewrite
finds exactly the same matches when no alternative it moves ahead can match at a position where
one it passes can. That holds when the characters the moved one can start with (after its `\\b`)
and those the passed one can start with have none in common, which is worked out from the parsed
pattern (spiral/regexfast.py gives the first characters). Whatever cannot be reasoned about
exactly leaves the pattern as it is: a verbose pattern, comments, back references, an
alternative that can match empty, categories other than digit, word and space.

Each alternative so rewritten also starts with one character where it started with a greedy
repeat of one (`lead_with_one`: `\\d{4}-` as `\\d\\d{3}-`): `re` passes over an alternative
that starts with a literal or a class when the character at hand is not in it, but enters one
that starts with a repeat. On the bench's outputs this cut the masks' work by about a third.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from re import _constants as C  # type: ignore[attr-defined]
from typing import Any

Item = tuple[Any, Any]  # a class item as re's parser gives it: (LITERAL, code), (RANGE, (low, high)), (CATEGORY, c)
FirstItems = Callable[[str, int], "tuple[list[Item], bool] | None"]  # (text, flags) -> (first items, nullable)

_BIG_RANGE = 4096  # a range wider than this is not expanded: taken as overlapping everything
_CATEGORY = {
    C.CATEGORY_DIGIT: re.compile(r"\d"),
    C.CATEGORY_WORD: re.compile(r"\w"),
    C.CATEGORY_SPACE: re.compile(r"\s"),
    C.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    C.CATEGORY_NOT_WORD: re.compile(r"\W"),
    C.CATEGORY_NOT_SPACE: re.compile(r"\S"),
}
# categories no character belongs to both of (a digit is a word character; none is a space)
_APART = {
    frozenset(pair)
    for pair in (
        (C.CATEGORY_DIGIT, C.CATEGORY_SPACE),
        (C.CATEGORY_WORD, C.CATEGORY_SPACE),
        (C.CATEGORY_DIGIT, C.CATEGORY_NOT_DIGIT),
        (C.CATEGORY_WORD, C.CATEGORY_NOT_WORD),
        (C.CATEGORY_SPACE, C.CATEGORY_NOT_SPACE),
        (C.CATEGORY_DIGIT, C.CATEGORY_NOT_WORD),
    )
}
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def boundary_first(text: str, flags: int, first_items: FirstItems) -> str | None:
    """`text` with its `\\b` alternatives first behind one `\\b`, or None when that is not sure to be
    the same pattern (or would change nothing)."""
    if flags & re.VERBOSE or "(?#" in text or _BACKREF.search(text):
        return None
    alts = _flat(text)
    if alts is None or len(alts) < 2:
        return None
    starts: list[tuple[bool, list[Item]]] = []
    for alt in alts:
        bounded = alt.startswith("\\b") and alt[2:3] not in ("*", "+", "?", "{")
        got = first_items(alt[2:] if bounded else alt, flags)
        if got is None or got[1] or not got[0]:
            return None  # unsure, or it can match empty
        starts.append((bounded, got[0]))
    if not any(bounded for bounded, _ in starts) or all(bounded for bounded, _ in starts):
        return None
    for i, (bounded, items) in enumerate(starts):
        if bounded and any(not b and not _disjoint(passed, items) for b, passed in starts[:i]):
            return None
    moved = [lead_with_one(alt[2:]) for alt, (bounded, _) in zip(alts, starts, strict=True) if bounded]
    kept = [lead_with_one(alt) for alt, (bounded, _) in zip(alts, starts, strict=True) if not bounded]
    return "|".join(["\\b(?:" + "|".join(f"(?:{a})" for a in moved) + ")", *(f"(?:{a})" for a in kept)])


def lead_with_one(alt: str) -> str:
    """`alt` with a greedy repeat of one character that it starts with split into that character and
    the rest of the repeat: `\\d{4}-` as `\\d\\d{3}-`, `=+` as `==*`, `[a-f]{7,64}` as `[a-f][a-f]{6,63}`.

    `re` checks an alternative whose first item is one literal or one class against the character at
    hand before it enters it, and passes it over when that fails; an alternative that starts with a
    repeat is always entered. For one character the two forms match the same strings, longest first,
    so the matches do not change. Anything else (a group first, a lazy or possessive repeat, an
    escape other than a class or a punctuation mark) is left as it is.
    """
    end = _atom_end(alt)
    if end <= 0:
        return alt
    atom, rest = alt[:end], alt[end:]
    if rest[:1] == "+":
        low, high, after = 1, -1, rest[1:]  # -1: no upper bound
    else:
        got = _COUNT.match(rest)
        if got is None:
            return alt
        low = int(got[1])
        high = low if got[2] is None else (int(got[3]) if got[3] else -1)
        after = rest[got.end() :]
    if low < 1 or 0 <= high < low or after[:1] in ("?", "+"):
        return alt  # can be absent; or lazy or possessive, tried in another order
    return atom + _repeat(atom, low - 1, high - 1 if high > 0 else -1) + after


def _repeat(atom: str, low: int, high: int) -> str:
    """`atom` repeated `low` to `high` times (-1: no upper bound), greedy, as short as it can be written."""
    if high < 0:
        return atom + ("*" if low == 0 else "+" if low == 1 else f"{{{low},}}")
    if high == 0:
        return ""
    if low == high:
        return atom if low == 1 else f"{atom}{{{low}}}"
    return f"{atom}{{{low},{high}}}"


_COUNT = re.compile(r"\{(\d{1,4})(?:(,)(\d{0,4}))?\}")
_SPECIAL = frozenset("\\.^$*+?{}[]()|")


def _atom_end(alt: str) -> int:
    """Where the one-character item `alt` starts with ends (a literal, a class, `\\d` or an escaped mark), or -1."""
    first = alt[:1]
    if not first:
        return -1
    if first == "[":
        return _class_end(alt, 0)
    if first == "\\":
        nxt = alt[1:2]
        return 2 if nxt and (nxt in "dDwWsS" or (nxt.isascii() and not nxt.isalnum() and nxt.isprintable())) else -1
    return -1 if first in _SPECIAL or first.isspace() else 1


def _flat(text: str) -> list[str] | None:
    """The top-level alternatives, an alternative that is one whole `(?:...)` group opened into its own."""
    alts = split(text)
    if alts is None:
        return None
    out: list[str] = []
    for alt in alts:
        if alt.startswith("(?:") and _one_group(alt):
            inner = _flat(alt[3:-1])
            if inner is None:
                return None
            out += inner
        else:
            out.append(alt)
    return out


def split(text: str) -> list[str] | None:
    """A pattern's text cut at its top-level `|` (not in a group, a class or an escape), or None if unbalanced."""
    out: list[str] = []
    depth = start = 0
    marks = _marks(text)
    if marks is None:
        return None
    for i, ch in marks:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth:
        return None
    out.append(text[start:])
    return out


def _one_group(text: str) -> bool:
    """Whether the group `text` opens with closes at its last character."""
    depth = 0
    for i, ch in _marks(text) or ():
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


def _marks(text: str) -> list[tuple[int, str]] | None:
    """Where the `(`, `)` and `|` of a pattern's text are (not in a class or an escape); None if a class is unclosed."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _class_end(text, i)
            if i < 0:
                return None
            continue
        if ch in "()|":
            out.append((i, ch))
        i += 1
    return out


def _class_end(text: str, at: int) -> int:
    """The index after the `]` closing the class opened at `at` (-1 if none): a `]` first in it is a literal."""
    j = at + 1
    if text[j : j + 1] == "^":
        j += 1
    if text[j : j + 1] == "]":
        j += 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "]":
            return j + 1
        j += 1
    return -1


def _disjoint(a: list[Item], b: list[Item]) -> bool:
    """Whether no character is in both sets of class items."""
    return all(_apart(x, y) for x in a for y in b)


def _apart(x: Item, y: Item) -> bool:
    cx, cy = _chars(x), _chars(y)
    if cx is not None and cy is not None:
        return not (cx & cy)
    kx, ky = x[1] if x[0] is C.CATEGORY else None, y[1] if y[0] is C.CATEGORY else None
    if kx is not None and ky is not None:
        return frozenset((kx, ky)) in _APART
    if kx is not None and cy is not None:
        return _outside(cy, kx)
    if ky is not None and cx is not None:
        return _outside(cx, ky)
    return False  # a range too wide to expand: taken as sharing a character


def _chars(item: Item) -> frozenset[int] | None:
    op, av = item
    if op is C.LITERAL:
        return frozenset((av,))
    if op is C.RANGE and av[1] - av[0] <= _BIG_RANGE:
        return frozenset(range(av[0], av[1] + 1))
    return None


def _outside(chars: frozenset[int], category: Any) -> bool:
    test = _CATEGORY.get(category)
    return test is not None and not any(test.fullmatch(chr(c)) for c in chars)
