"""spiral/window.py: the sliding counters behind the repetition and polling windows."""

from __future__ import annotations


def test_sliding_window_keeps_its_max_count_exact() -> None:
    import random

    from spiral.window import SlidingCounter

    for seed in range(100):
        rng = random.Random(seed)
        w = SlidingCounter(rng.randint(1, 30))
        for _ in range(400):
            w.push(rng.choice([None, "a", "b", "c", "d", None]))
            assert w.max_count == (max(w.counts.values()) if w.counts else 0)
            assert w.filled == sum(w.counts.values()) and len(w) <= w.size
