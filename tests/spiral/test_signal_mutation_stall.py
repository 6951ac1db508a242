"""The mutation_stall signal (spiral/signals/mutation_stall.py) at its firing points and just below."""

from __future__ import annotations

from spiral import model
from spiral.verdict import HEALTHY
from tests.helpers import at, detector, finding, on_file, snap

# medium: expected 45 min, so 1.5x is 67.5 min


def test_mutation_stall_fires_at_one_and_a_half_expected_after_ten_still_minutes() -> None:
    det = detector(snaps=[snap(50, {"src/lib.py": " M"})])
    v = det.evaluate(at(67.5))
    assert v.signals == ("mutation_stall",)
    assert v.suspicion == 1
    assert v.region == HEALTHY  # 67.5 < 70: fires, but nobody is paged
    assert not v.should_page
    assert "(1 touched in all) at 1.5x expected" in finding(v, "mutation_stall")
    assert det.evaluate(at(67.4)).signals == ()


def test_mutation_stall_quiet_until_ten_minutes_after_the_set_grew() -> None:
    det = detector(snaps=[snap(50, {"src/lib.py": " M"}), snap(60, {"src/lib.py": " M", "src/new.py": "??"})])
    assert det.evaluate(at(67.5)).signals == ()
    assert det.evaluate(at(69.9)).signals == ()
    v = det.evaluate(at(70))
    assert v.signals == ("mutation_stall",)
    assert "no new file touched for 10 min (2 touched in all)" in finding(v, "mutation_stall")


def test_mutation_stall_ignores_debris_and_edits_of_already_touched_files() -> None:
    snaps = [
        snap(50, {"src/lib.py": " M"}, {"src/lib.py": "h1"}),
        # new content in a file already in the set, and a new debris file: no growth
        snap(65, {"src/lib.py": " M", "tmp_probe.py": "??"}, {"src/lib.py": "h2"}),
    ]
    v = detector(snaps=snaps).evaluate(at(67.5))
    assert "mutation_stall" in v.signals
    assert "(1 touched in all)" in finding(v, "mutation_stall")


def test_mutation_stall_empty_set_last_grew_at_launch() -> None:
    det = detector()
    assert det.evaluate(at(67.4)).signals == ()
    v = det.evaluate(at(67.5))
    assert v.signals == ("mutation_stall",)
    assert "(0 touched in all)" in finding(v, "mutation_stall")


def test_mutation_stall_touched_set_comes_from_snapshots_only() -> None:
    # build/gen.txt is git-ignored: the agent writes it, no snapshot ever lists it
    det = detector(
        [on_file(model.WRITE, "build/gen.txt", at(60))],
        [snap(50, {"src/lib.py": " M"}), snap(61, {"src/lib.py": " M"})],
    )
    assert det.evaluate(at(67.5)).signals == ("mutation_stall",)
