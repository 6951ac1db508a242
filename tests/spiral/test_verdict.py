"""The vote and the timing model (spiral/verdict.py, spiral/detector.py): the spec's numbers,
region boundaries, when a trip pages, and determinism."""

from __future__ import annotations

import json

import pytest

from spiral import model
from spiral.model import Snapshot, ToolCall
from spiral.verdict import HEALTHY, SOFT, STUCK
from tests.helpers import S, at, bash, detector, interleave, on_file, polls, reads, script_runs, snap

# ---- the numbers are the spec's -----------------------------------------------


def test_buckets_yaml_holds_the_spec_defaults() -> None:
    assert S.threshold == 2
    assert S.weights == {"debris": 1, "repetition": 1, "mutation_stall": 1, "sustained_bash": 2, "polling": 2}
    assert (S.debris_min, S.progress_quiet_min) == (2, 10)
    assert (S.rep_window, S.rep_same_script, S.rep_same_file) == (20, 8, 6)
    assert (S.stall_min, S.stall_expected_factor) == (10, 1.5)
    assert (S.sb_window, S.sb_same_target) == (30, 10)
    assert (S.poll_window, S.poll_count, S.poll_max_sleep_s) == (20, 6, 60)
    assert {k: (b.expected_min, b.soft_start_min, b.stuck_min) for k, b in S.buckets.items()} == {
        "small": (20, 30, 35),
        "medium": (45, 70, 85),
        "big": (90, 135, 150),
    }


# ---- vote and timing --------------------------------------------------------------------------


@pytest.mark.parametrize(("bucket", "soft", "stuck"), [("small", 30, 35), ("medium", 70, 85), ("big", 135, 150)])
def test_region_boundaries(bucket: str, soft: float, stuck: float) -> None:
    det = detector(bucket=bucket)
    assert det.evaluate(at(0)).region == HEALTHY
    assert det.evaluate(at(soft) - 1).region == HEALTHY
    assert det.evaluate(at(soft)).region == SOFT
    assert det.evaluate(at(stuck) - 1).region == SOFT
    assert det.evaluate(at(stuck)).region == STUCK
    assert det.evaluate(at(stuck) + 3600).region == STUCK


def test_should_page_only_in_the_soft_band() -> None:
    # polling alone weighs 2: tripped in every region, a page only in the soft band
    det = detector(polls(), bucket="small")
    for minute, region, page in [(29.9, HEALTHY, False), (30, SOFT, True), (34.9, SOFT, True), (35, STUCK, False)]:
        v = det.evaluate(at(minute))
        assert "polling" in v.signals
        assert (v.region, v.tripped, v.should_page) == (region, True, page)
        assert v.to_dict()["page"] is page


def test_no_page_below_the_threshold_in_the_soft_band() -> None:
    # small: soft band 30-35 min, 1.5x expected = 30 min. src/other.py joined the touched
    # set at 22 min (so no stall before 32), but it is not the declared output.
    calls = interleave(script_runs("python tmp_debug_mc.py", 8), reads(12))
    det = detector(calls, [snap(22, {"src/other.py": " M"})], bucket="small", outputs=["src/out.py"])
    v = det.evaluate(at(31))
    assert v.region == SOFT
    assert v.signals == ("repetition",)
    assert v.suspicion == 1
    assert not v.tripped and not v.should_page
    # two weight-1 signals reach the threshold: debris appears, the output never changed
    det.add_snapshot(snap(31, {"src/other.py": " M", "tmp_debug_mc.py": "??", "tmp_debug_mc2.py": "??"}))
    v = det.evaluate(at(31.9))
    assert v.signals == ("debris", "repetition")
    assert v.suspicion == 2 and v.tripped and v.should_page
    assert any("tmp_debug_mc2.py" in e for e in v.evidence)
    assert v.evidence[-1] == "1.6x expected wall-clock"
    assert det.evaluate(at(32)).signals == ("debris", "repetition", "mutation_stall")


# ---- determinism ---------------------------------------------------------------------------


def _scenario() -> tuple[list[ToolCall], list[Snapshot]]:
    calls = []
    for i in range(12):
        calls.append(bash(f"python tmp_debug_mc.py --n {i}", at(40 + i)))
        calls.append(bash("sleep 5", at(40 + i + 0.5)))
        calls.append(on_file(model.EDIT, "tmp_debug_mc.py", at(40 + i + 0.7)))
    snaps = [
        snap(30, {"src/a.py": " M"}, {"src/a.py": "1"}),
        snap(
            45,
            {"src/a.py": " M", "tmp_debug_mc.py": "??", "debug_out.txt": "??"},
            {"src/a.py": "1", "tmp_debug_mc.py": "2", "debug_out.txt": "3"},
        ),
    ]
    return calls, snaps


def test_same_inputs_same_verdict_byte_for_byte() -> None:
    calls, snaps = _scenario()
    a = detector(calls, snaps)
    b = detector(list(calls), list(snaps))
    va, vb = a.evaluate(at(75)), b.evaluate(at(75))
    assert va.to_dict() == vb.to_dict()
    assert json.dumps(va.to_dict()) == json.dumps(vb.to_dict())
    assert va.signals == ("debris", "repetition", "mutation_stall", "sustained_bash", "polling")
    # asking again, or at another moment in between, changes nothing
    a.evaluate(at(50))
    assert json.dumps(a.evaluate(at(75)).to_dict()) == json.dumps(va.to_dict())
