"""The adapter fuzz (tests/spiral/test_fuzz_adapters.py) with a much larger budget.

Run:  .venv/bin/python speedbench/fuzz.py [--examples N] [--seed S]

Feeds every adapter (claude-stream-json, claude-transcript, codex-json, generic) and
`Outcome.feed` the generators of tests/hostile.py: hostile payloads each adapter must skip,
mutations of valid corpus payloads (wrong types at every level), and raw events.jsonl lines
that are no envelope (torn, invalid UTF-8, too deep, NaN, 1 MB), mixed into the valid lines
of each format's corpus case. Exceptions are caught and tallied (type, message, format),
never stopping the run. Prints the lines fuzzed and the exceptions found; exit 1 if any.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # tests.hostile; appended, so a PYTHONPATH checkout's spiral/ wins

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from spiral.adapters import make_adapter  # noqa: E402
from spiral.envelope import parse_envelope  # noqa: E402
from spiral.outcome import Outcome  # noqa: E402
from tests.hostile import CASES, FORMATS, bad_line, envelopes, mutated, skippable  # noqa: E402

CORPUS = ROOT / "corpus"


class Tally:
    def __init__(self) -> None:
        self.lines = 0
        self.errors: Counter[tuple[str, str, str]] = Counter()


def fuzz_format(fmt: str, examples: int, seed_: int, tally: Tally) -> None:
    rows = envelopes(CORPUS / CASES[fmt] / "events.jsonl")
    raw = [line for line, _, _ in rows]
    payloads = [d for _, _, d in rows]
    item = st.one_of(mutated(payloads), skippable(fmt), bad_line(raw).map(lambda b: (b,)))

    @seed(seed_)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(rows)), item), min_size=10, max_size=60))
    def run(inserts: list[tuple[int, Any]]) -> None:
        at: dict[int, list[Any]] = {}
        for i, x in inserts:
            at.setdefault(i, []).append(x)
        adapter, outcome = make_adapter(fmt, "/home/dev/clone"), Outcome()
        for i in range(len(rows) + 1):
            for x in at.get(i, []):
                tally.lines += 1
                ts = rows[min(i, len(rows) - 1)][1]
                if isinstance(x, tuple):  # a raw line: only what parses reaches the adapter
                    env = parse_envelope(x[0])
                    if env is None:
                        continue
                    ts, x = env
                for name, feed in (("adapter", adapter.feed), ("outcome", outcome.feed)):
                    try:
                        feed(ts, x)
                    except Exception as exc:  # the tally is the point
                        tally.errors[(type(exc).__name__, f"{name}: {str(exc)[:70]}", fmt)] += 1
            if i < len(rows):
                adapter.feed(rows[i][1], rows[i][2])
                outcome.feed(rows[i][1], rows[i][2])

    run()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--examples", type=int, default=3000, help="hypothesis examples per format (default 3000)")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    tally = Tally()
    t0 = time.perf_counter()
    for fmt in FORMATS:
        fuzz_format(fmt, args.examples, args.seed, tally)
        print(f"{fmt:20s} done: {tally.lines:,} hostile lines so far, {sum(tally.errors.values()):,} exceptions")
    print(
        f"\nlines fuzzed: {tally.lines:,} in {time.perf_counter() - t0:.0f} s; exceptions: {sum(tally.errors.values()):,}"
    )
    for (kind, msg, fmt), n in tally.errors.most_common(30):
        print(f"  {n:6,}  {fmt:20s} {kind}: {msg}")
    return 1 if tally.errors else 0


if __name__ == "__main__":
    sys.exit(main())
