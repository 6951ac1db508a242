"""Claude usage per message (and Codex usage per response), summed as lines arrive, in bounded memory (pure).

Claude Code writes one line per content block of a message, each carrying the
message's usage, and it writes each message twice: on its stdout (stream-json,
message_start figures, output not final) and in its session transcript (final
figures). A message counts once, each figure at the largest value its lines gave.

The lines of one message come together in each source, so an id needs
remembering only for a short while: `MessageTally` keeps the last WINDOW ids and
keeps the sums by (model, prompt tier) up to date as figures grow, so the total
costs nothing to read however long the run is.

Across the two sources, the transcript wins for every message it has; the
stream counts the messages after the last one the transcript has shown
(`StreamTail`), at most TAIL of them. A stream read far ahead of its transcript
(a first pass over a long run reads the whole stream before the transcript)
keeps its last TAIL messages, which is exact as long as the transcript has
every message older than those, which is what the CLI writes. Once a session
has a transcript, a message only ever seen on the stream, older than one the
transcript has, is not counted: the CLI writes every message to its transcript.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

# (model, input, output, cache read, cache write, of which 1 hour)
Entry = tuple[str, int, int, int, int, int]

WINDOW = 64  # ids remembered per source: a message's lines come one after another
TAIL = 64  # stream messages the transcript may lag behind (it is written with the stream: a few)


# prompt sizes where some price steps up (every tier start in genai-prices' database;
# tests/test_ledger_prices.py checks that none is missing)
PROMPT_TIERS = (32_000, 100_000, 128_000, 199_999, 200_000, 256_000, 272_000, 512_000, 524_288)


def tier_of(prompt_tokens: int) -> int:
    """The largest tier start the prompt is above (0: below every tier)."""
    i = bisect_left(PROMPT_TIERS, prompt_tokens)  # the first start the prompt is not above
    return PROMPT_TIERS[i - 1] if i else 0


def tier_key(entry: Entry) -> tuple[str, int]:
    """A message's row: its model and the tier of its prompt (input, cache read and cache write)."""
    return entry[0], tier_of(entry[1] + entry[3] + entry[4])


def merged(before: Entry | None, model: str, counts: tuple[int, ...]) -> Entry:
    if before is None:
        return (model, *counts)  # type: ignore[return-value]
    return (model, *(max(a, b) for a, b in zip(before[1:], counts, strict=True)))  # type: ignore[return-value]


Rows = dict[tuple[str, int], list[int]]


def floored(rows: Rows, floor: Rows) -> Rows:
    """`rows`, each figure at least its `floor` (what was counted before the source was read again)."""
    if not floor:
        return rows
    out = {k: list(v) for k, v in floor.items()}
    for k, row in rows.items():
        out[k] = [max(a, b) for a, b in zip(out.get(k, [0] * 5), row, strict=True)]
    return out


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class _Tally:
    """Sums by (model, tier), kept up to date as entries come and change; the last WINDOW keys remembered."""

    rows: Rows = field(default_factory=dict)
    recent: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    n: int = 0  # entries counted
    # the sums before the source was rewritten and read again from its start (`restart`): what it
    # counts now is at least that, each figure (billed messages stay billed, none counts twice)
    floor: Rows = field(default_factory=dict)

    def _store(self, key: str, before: Any, entry: Any) -> None:
        """`entry` in place of `before` (None: a key not remembered, a new entry)."""
        if before is not None:
            self.recent.move_to_end(key)
            self._add(before, -1)
        else:
            self.n += 1
        self.recent[key] = entry
        self._add(entry, 1)
        if len(self.recent) > WINDOW:
            self.recent.popitem(last=False)

    def _add(self, entry: Any, sign: int) -> None:
        key, counts = self._row(entry)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0, 0, 0, 0, 0]
        a, b, c, d, e = counts  # (written out: every message of a first pass comes here)
        row[0] += sign * a
        row[1] += sign * b
        row[2] += sign * c
        row[3] += sign * d
        row[4] += sign * e

    def _row(self, entry: Any) -> tuple[tuple[str, int], tuple[int, ...]]:
        raise NotImplementedError

    def totals(self) -> Rows:
        """The sums by (model, tier), none below what was counted before a restart."""
        return floored(self.rows, self.floor)

    def restart(self) -> None:
        """The source is read again from its start (it was rewritten): count it anew above what it had."""
        self.floor, self.rows, self.recent = self.totals(), {}, OrderedDict()


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class MessageTally(_Tally):
    """One Claude source's messages, each figure at the largest any of its lines gave."""

    def put(self, key: str | None, model: str, counts: tuple[int, ...]) -> None:
        """One line's figures for message `key` (None: a line without an id, a message of its own)."""
        if key is None:
            key = f"#{self.n}"
        before = self.recent.get(key)
        if before is None:  # a new message: nearly every line of a first pass
            self._store(key, None, (model, *counts))
            return
        entry = merged(before, model, counts)
        if entry != before:
            self._store(key, before, entry)
        else:
            self.recent.move_to_end(key)

    def _row(self, entry: Entry) -> tuple[tuple[str, int], tuple[int, ...]]:
        return tier_key(entry), entry[1:]

    def seen(self, key: str) -> bool:
        return key in self.recent


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class StreamTail:
    """Stream messages the transcript has not shown yet (at most TAIL, the newest kept)."""

    entries: OrderedDict[str, Entry] = field(default_factory=OrderedDict)

    def put(self, key: str, model: str, counts: tuple[int, ...]) -> None:
        entries = self.entries
        before = entries.get(key)
        if before is None:
            entries[key] = (model, *counts)  # type: ignore[assignment]  # (five counts: an Entry)
        else:
            entries[key] = merged(before, model, counts)
            entries.move_to_end(key)
        if len(entries) > TAIL:
            entries.popitem(last=False)

    def confirm(self, key: str) -> None:
        """The transcript has message `key`: it and every stream message before it are the transcript's
        (it writes them in order; one it has not written yet counts once it does)."""
        if key not in self.entries:
            return
        while self.entries:
            first, _ = self.entries.popitem(last=False)
            if first == key:
                return


# (model, counts, prompt tier) of one Codex response
Response = tuple[str, tuple[int, ...], int]


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
@dataclass
class ResponseTally(_Tally):
    """Codex responses: each id's latest figures (a record written again replaces its own), summed as they
    come; the last WINDOW ids remembered (a rollout writes a response's record once, in order)."""

    def put(self, key: str | None, entry: Response) -> None:
        if key is None:
            key = f"#{self.n}"
        self._store(key, self.recent.get(key), entry)

    def _row(self, entry: Response) -> tuple[tuple[str, int], tuple[int, ...]]:
        model, counts, tier = entry
        return (model, tier), counts
