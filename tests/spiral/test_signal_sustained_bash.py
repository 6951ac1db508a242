"""The sustained_bash signal (spiral/signals/sustained_bash.py) at its firing points and just below."""

from __future__ import annotations

from spiral.model import ToolCall
from spiral.verdict import SOFT
from tests.helpers import at, bash, detector, finding, interleave, reads


def _test_runs(n: int) -> list[ToolCall]:
    forms = [
        "pytest tests/test_y.py::case_{i}",
        "python -m pytest tests/test_y.py -k c{i} -q",
        "/bin/bash -lc 'pytest -x tests/test_y.py::TestY::test_{i}'",
    ]
    return [bash(forms[i % 3].format(i=i)) for i in range(n)]


def test_sustained_bash_fires_at_ten_of_thirty_on_a_tracked_test_file() -> None:
    # the runs come first, so the 20-event repetition window holds only distinct reads
    calls = _test_runs(10) + reads(20)
    v = detector(calls, tracked=["tests/test_y.py"]).evaluate(at(5))
    assert v.signals == ("sustained_bash",)
    assert v.suspicion == 2
    assert finding(v, "sustained_bash") == "10 of the last 30 tool calls ran tests/test_y.py"


def test_sustained_bash_quiet_at_nine_of_thirty() -> None:
    assert detector(_test_runs(9) + reads(21), tracked=["tests/test_y.py"]).evaluate(at(5)).signals == ()
    # ten runs, but the first has left the 30-event window
    assert detector(_test_runs(10) + reads(21), tracked=["tests/test_y.py"]).evaluate(at(5)).signals == ()


def test_sustained_bash_with_repetition_in_the_soft_band_pages() -> None:
    # the seed's spiral-002: a tracked test file rerun in a tight loop
    calls = interleave(_test_runs(10), reads(10))
    v = detector(calls, tracked=["tests/test_y.py"]).evaluate(at(75))
    assert v.signals == ("repetition", "mutation_stall", "sustained_bash")
    assert v.suspicion == 4
    assert v.region == SOFT and v.should_page
