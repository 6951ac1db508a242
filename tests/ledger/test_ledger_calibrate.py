"""`calibrate` (orchestrator/ledger/calibrate.py): bucket timings from the runs that succeeded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.infra.errors import UserError
from orchestrator.ledger.calibrate import Calibration, apply, percentile, propose, walls_by_bucket
from orchestrator.tables import calibration_lines
from spiral.settings import Bucket
from tests.helpers import ROOT, cli, fake_run


def test_calibrate_recovers_known_percentiles(tmp_path: Path) -> None:
    walls = [float(m) for m in range(1, 101)]  # 1..100 minutes: median 50.5, p90 90.1
    for i, w in enumerate(walls):
        fake_run(f"cal-{i:03d}", wall_min=w)
    fake_run("cal-failed", state_name="failed", wall_min=500)  # only successes count
    for i in range(5):
        fake_run(f"small-{i}", bucket="small", wall_min=10)
    assert percentile(walls, 50) == pytest.approx(50.5) and percentile(walls, 90) == pytest.approx(90.1)
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text((ROOT / "buckets.yaml").read_text())
    env = {"ORCHESTRATOR_BUCKETS": str(buckets)}
    p = cli("calibrate", "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = {b["bucket"]: b for b in json.loads(p.stdout)["buckets"]}
    med = out["medium"]
    assert med["runs"] == 100 and med["median_min"] == 50.5 and med["p90_min"] == 90.1 and med["longest_min"] == 100
    assert med["proposed"] == {"expected_min": 51, "soft_start_min": 91, "stuck_min": 110}
    assert out["small"]["refused"] is True and out["small"]["runs"] == 5
    text = cli("calibrate", env=env).stdout
    assert "small: 5 succeeded runs; need at least 20" in text
    assert "expected_min         45 -> 51" in text
    w = cli("calibrate", "--write", "--json", env=env)
    assert w.returncode == 0, w.stderr
    assert json.loads(w.stdout)["written"] == str(buckets)  # one JSON document, what was written in it
    new = buckets.read_text()
    assert "medium: {expected_min: 51, soft_start_min: 91, stuck_min: 110}" in new
    assert "small:  {expected_min: 20, soft_start_min: 30,  stuck_min: 35}" in new  # untouched
    assert "# Spiral detector timings" in new  # comments kept
    none = cli("calibrate", "--write", "--min-runs", "500", env=env)
    assert none.returncode == 2 and "nothing written" in none.stderr


def test_calibrate_write_keeps_mode_and_follows_links(tmp_path: Path) -> None:
    from orchestrator.buckets import write_buckets

    real = tmp_path / "real-buckets.yaml"
    real.write_text((ROOT / "buckets.yaml").read_text())
    real.chmod(0o644)
    link = tmp_path / "buckets.yaml"
    link.symlink_to(real)
    write_buckets(link, {"medium": Bucket(50.0, 80.0, 96.0)})
    assert link.is_symlink()
    assert "medium: {expected_min: 50, soft_start_min: 80, stuck_min: 96}" in real.read_text()
    assert (real.stat().st_mode & 0o777) == 0o644


# ---- the plain functions behind the command ----------------------------------------------------


def _current() -> dict[str, Bucket]:
    return {"small": Bucket(20.0, 30.0, 35.0), "medium": Bucket(45.0, 70.0, 85.0), "big": Bucket(90.0, 135.0, 150.0)}


def test_walls_by_bucket_groups_ledger_rows() -> None:
    rows = [("medium", 30, 120), ("small", 5.5, None), ("medium", 40.25, 80)]
    walls, calls = walls_by_bucket(rows)
    assert walls == {"medium": [30.0, 40.25], "small": [5.5]}
    assert calls == {"medium": [120, 80], "small": [0]}  # a run without a count counts as unknown (0)
    assert walls_by_bucket([]) == ({}, {})


def test_propose_gives_the_bands_in_calls_by_the_same_rule() -> None:
    walls = {"small": [float(m) for m in range(1, 41)]}
    calls = {"small": list(range(10, 410, 10))}  # 10..400 calls, one run each
    (small,) = [p for p in propose(walls, _current(), 20, calls) if p.bucket == "small"]
    assert small.calls == (205.0, pytest.approx(361.0), 400)
    assert small.proposed is not None
    b = small.proposed
    assert (b.expected_calls, b.soft_start_calls, b.stuck_calls) == (205, 361, 434)  # median; p90 > 1.5x; 1.2x soft
    # too few runs with a count: the bands in minutes only
    (thin,) = [p for p in propose(walls, _current(), 20, {"small": [5] * 10}) if p.bucket == "small"]
    assert thin.proposed is not None and thin.proposed.expected_calls == 0


def test_propose_follows_the_rule_and_refuses_thin_buckets() -> None:
    walls = {"medium": [float(m) for m in range(1, 101)], "small": [10.0] * 5}
    by = {p.bucket: p for p in propose(walls, _current(), min_runs=20)}
    assert list(by) == ["small", "medium", "big"]
    med = by["medium"]
    assert (med.runs, med.median, med.longest) == (100, 50.5, 100.0) and med.p90 == pytest.approx(90.1)
    assert med.proposed == Bucket(51.0, 91.0, 110.0) and not med.refused
    assert by["small"].refused and by["small"].runs == 5 and by["small"].current == _current()["small"]
    assert by["big"].refused and by["big"].runs == 0
    # stuck never falls below the longest success
    (one,) = [p for p in propose({"small": [10.0] * 19 + [60.0]}, _current(), 20) if p.bucket == "small"]
    assert one.proposed is not None and one.proposed.stuck_min == 60


def test_calibration_json_and_text() -> None:
    walls = {"medium": [float(m) for m in range(1, 101)], "small": [10.0] * 5}
    cal = Calibration(20, propose(walls, _current(), 20))
    assert cal.accepted == {"medium": Bucket(51.0, 91.0, 110.0)}
    out = cal.to_dict()
    assert "version" not in out  # the CLI's envelope adds it
    med = next(b for b in out["buckets"] if b["bucket"] == "medium")
    assert med == {
        "bucket": "medium",
        "runs": 100,
        "median_min": 50.5,
        "p90_min": 90.1,
        "longest_min": 100.0,
        "refused": False,
        "current": {"expected_min": 45.0, "soft_start_min": 70.0, "stuck_min": 85.0},
        "proposed": {"expected_min": 51.0, "soft_start_min": 91.0, "stuck_min": 110.0},
    }
    assert next(b for b in out["buckets"] if b["bucket"] == "big")["proposed"] is None
    assert calibration_lines(cal) == [
        "small: 5 succeeded runs; need at least 20 to propose (keeping 20 / 30 / 35 min)",
        "medium: 100 succeeded runs, median 50.5 min, p90 90.1 min, longest 100.0 min",
        "    expected_min         45 -> 51",
        "    soft_start_min       70 -> 91",
        "    stuck_min            85 -> 110",
        "big: 0 succeeded runs; need at least 20 to propose (keeping 90 / 135 / 150 min)",
    ]


def test_apply_refuses_an_empty_proposal(tmp_path: Path) -> None:
    path = tmp_path / "buckets.yaml"
    path.write_text((ROOT / "buckets.yaml").read_text())
    before = path.read_text()
    with pytest.raises(UserError, match="no bucket has 20 succeeded runs yet; nothing written"):
        apply(Calibration(20, propose({}, _current(), 20)), path)
    assert path.read_text() == before
    apply(Calibration(1, propose({"big": [100.0]}, _current(), 1)), path)
    assert "big: {expected_min: 100, soft_start_min: 150, stuck_min: 180}" in path.read_text()


def _case(root: Path, name: str, minutes: float, calls: int, outcome: str | None, spiral: bool = False) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    lines = [
        json.dumps(
            {
                "ts": f"2026-05-20T09:{int(k * minutes / max(calls, 1)):02d}:00Z",
                "data": {"tool": "Bash", "command": f"ls {k}"},
            }
        )
        for k in range(calls)
    ]
    (folder / "events.jsonl").write_text("".join(line + "\n" for line in lines))
    end = f"2026-05-20T{9 + int(minutes) // 60:02d}:{int(minutes) % 60:02d}:00Z"
    (folder / "case.yaml").write_text(
        f"id: {name}\nformat: generic\nbucket: small\nstarted_at: '2026-05-20T09:00:00Z'\nended_at: '{end}'\n"
        + (f"outcome: {outcome}\n" if outcome else "")
        + f"expect: {{spiral: {str(spiral).lower()}}}\n"
    )


def test_calibrate_learns_minutes_and_calls_from_a_folder_of_cases(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    for i in range(10):
        _case(cases, f"ok-{i}", minutes=5 + i, calls=20 + 2 * i, outcome="resolved")
    _case(cases, "bad-1", minutes=50, calls=400, outcome="unresolved")  # left out: not succeeded
    _case(cases, "loop-1", minutes=55, calls=500, outcome=None, spiral=True)  # left out: expected to spiral
    _case(cases, "plain-1", minutes=9, calls=29, outcome=None)  # counted: no outcome, not a spiral
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text((ROOT / "buckets.yaml").read_text())
    env = {"ORCHESTRATOR_BUCKETS": str(buckets)}
    p = cli("calibrate", "--cases", str(cases), "--min-runs", "5", "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["false_alarms_by_rule"] is None  # the ledger's pages are not read with --cases
    small = next(b for b in out["buckets"] if b["bucket"] == "small")
    assert small["runs"] == 11 and small["longest_min"] == 14 and small["most_calls"] == 38
    proposed = small["proposed"]
    assert proposed["expected_min"] == 9 and proposed["stuck_min"] >= 14  # the median of 5..14 and 9
    assert proposed["expected_calls"] == 29 and proposed["stuck_calls"] >= 38
    p = cli("calibrate", "--cases", str(cases), "--min-runs", "5", "--write", env=env)
    assert p.returncode == 0, p.stderr
    assert "soft_start_calls" in buckets.read_text() and "tool calls: median 29" in p.stdout
    # a folder with no case is one line, not a traceback
    p = cli("calibrate", "--cases", str(tmp_path / "nothing-here"), env=env)
    assert p.returncode != 0 and p.stderr.startswith("error:") and "Traceback" not in p.stderr
