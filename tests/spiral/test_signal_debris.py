"""The debris signal (spiral/signals/debris.py) and the names that count as debris (spiral/paths.py),
against ../shared/spec/spiral.md with the numbers of buckets.yaml."""

from __future__ import annotations

import pytest

from spiral import model
from spiral.paths import is_debris
from spiral.verdict import HEALTHY
from tests.helpers import S, at, detector, finding, on_file, snap

# ---- 1. debris ---------------------------------------------------------------------


def test_debris_fires_at_two_files_after_ten_quiet_minutes() -> None:
    det = detector(snaps=[snap(1, {"tmp_debug_mc.py": "??", "debug_out.txt": "??"})], tracked=["src/lib.py"])
    v = det.evaluate(at(10))  # nothing but debris changed since launch: quiet exactly 10 min
    assert v.signals == ("debris",)
    assert v.suspicion == 1
    assert v.region == HEALTHY
    ev = finding(v, "debris")
    assert ev.startswith("2 debris files in the clone")
    assert "tmp_debug_mc.py" in ev and "debug_out.txt" in ev
    assert "no other file changed for 10 min" in ev
    assert det.evaluate(at(9.9)).signals == ()


def test_debris_quiet_with_one_debris_file_or_lookalike_names() -> None:
    det = detector(
        snaps=[snap(1, {"tmp_debug_mc.py": "??", "template.py": "??", "debugger.py": "??", "test_v.py": "??"})]
    )
    assert det.debris_files == ("tmp_debug_mc.py",)
    assert det.evaluate(at(30)).signals == ()
    det = detector(snaps=[snap(1, {"tmp_debug_mc.py": "??"})])
    assert "debris" not in det.evaluate(at(30)).signals


def test_debris_kept_quiet_by_a_non_debris_change_within_ten_minutes() -> None:
    snaps = [
        snap(1, {"tmp_a.py": "??", "scratch_b.py": "??"}),
        snap(5, {"tmp_a.py": "??", "scratch_b.py": "??", "src/lib.py": " M"}, {"src/lib.py": "h1"}),
    ]
    det = detector(snaps=snaps)
    assert det.evaluate(at(14.9)).signals == ()
    v = det.evaluate(at(15))
    assert v.signals == ("debris",)
    # a new content hash under an unchanged " M" status is a change too
    det.add_snapshot(snap(20, {"tmp_a.py": "??", "scratch_b.py": "??", "src/lib.py": " M"}, {"src/lib.py": "h2"}))
    assert det.evaluate(at(29.9)).signals == ()
    assert det.evaluate(at(30)).signals == ("debris",)


def test_debris_with_declared_outputs_only_counts_output_changes() -> None:
    snaps = [
        snap(1, {"tmp_a.py": "??", "repro_v2.py": "??"}),
        snap(5, {"tmp_a.py": "??", "repro_v2.py": "??", "src/other.py": " M"}),
    ]
    det = detector(snaps=snaps, outputs=["src/out.py"])
    v = det.evaluate(at(10))  # src/other.py changed 5 min ago, but it is not a declared output
    assert v.signals == ("debris",)
    assert "no declared output changed for 10 min" in finding(v, "debris")
    assert "repro_v2.py" in finding(v, "debris")
    # an Edit of the declared output (a tool call, workdir-relative) is progress
    det.add_call(on_file(model.EDIT, "src/out.py", ts=at(12)))
    assert "debris" not in det.evaluate(at(21.9)).signals
    assert "debris" in det.evaluate(at(22)).signals


def test_debris_counts_only_untracked_or_added_files() -> None:
    # a tracked file with a debris name, merely modified, is not debris in the clone
    det = detector(snaps=[snap(1, {"tmp_legacy.py": " M", "debug_new.py": "??"})], tracked=["tmp_legacy.py"])
    assert det.debris_files == ("debug_new.py",)
    assert "debris" not in det.evaluate(at(30)).signals
    # a staged new debris file ("A ") counts
    det = detector(snaps=[snap(1, {"scratch_x.py": "A ", "debug_new.py": "??"})])
    assert sorted(det.debris_files) == ["debug_new.py", "scratch_x.py"]
    assert "debris" in det.evaluate(at(11)).signals


def test_debris_from_tool_calls_when_there_are_no_snapshots() -> None:
    calls = [on_file(model.WRITE, "tmp_probe.py", at(1)), on_file(model.WRITE, "case_test3.sh", at(2))]
    det = detector(calls)
    v = det.evaluate(at(10))
    assert v.signals == ("debris",)
    assert "case_test3.sh" in finding(v, "debris") and "tmp_probe.py" in finding(v, "debris")
    det.add_call(on_file(model.EDIT, "src/real.py", at(5)))
    assert "debris" not in det.evaluate(at(14.9)).signals
    assert "debris" in det.evaluate(at(15)).signals


# ---- paths.is_debris ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "debris"),
    [
        ("tmp_x.py", True),
        ("src/tmp_probe.sh", True),
        ("debug_out.txt", True),
        ("scratch_1.py", True),
        ("repro_v2.py", True),
        ("pkg/case_test3.sh", True),
        ("try_again_v10", True),
        ("tmp_dir/", True),
        ("test_v.py", False),
        ("template.py", False),
        ("debugger.py", False),
        ("src/tmp/real.py", False),
        ("tmp_dir/real.py", False),
        ("my_tmp_x.py", False),
        ("v2_notes.md", False),
        ("case_test.py", False),
        ("notes_v2x.md", False),
        ("test3.py", False),
        ("README.md", False),
    ],
)
def test_is_debris(path: str, debris: bool) -> None:
    assert is_debris(path, S.debris_basename, S.debris_stem) is debris
