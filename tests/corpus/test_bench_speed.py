"""The benchmark's fast paths give what the slow ones gave: scenarios made in memory read as their case
folders do, weight ablations sharing a walk page as walked alone, and a replay reads snapshots lazily."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import families, runner, scenario
from orchestrator.corpus.replay import walk_recording
from spiral.model import Snapshot, ToolCall
from spiral.walk import resume


@pytest.mark.parametrize("fam", families.FAMILIES, ids=lambda f: f.name)
def test_a_scenario_made_in_memory_reads_as_its_case_folder(fam: families.Family, tmp_path: Path) -> None:
    settings = BucketsFile().settings
    for i in range(4):  # every bucket, two log formats
        made = scenario.make(fam, i, 0, settings)
        _, read = scenario.read(families.write_scenario(fam, i, tmp_path, 0, settings))
        assert made == read


def test_keep_writes_the_same_folder(tmp_path: Path) -> None:
    fam, settings = families.FAMILIES[0], BucketsFile().settings
    scenario.make(fam, 1, 0, settings, keep=tmp_path / "kept")
    families.write_scenario(fam, 1, tmp_path / "written", 0, settings)
    for f in sorted((tmp_path / "written").rglob("*")):
        if f.is_file():
            assert (tmp_path / "kept" / f.relative_to(tmp_path / "written")).read_bytes() == f.read_bytes()


def test_weight_ablations_walked_on_from_ours_give_what_their_own_walks_give() -> None:
    raw = BucketsFile().raw
    views, _ = runner._views(runner._settings(raw, {}))
    assert {label for label, _ in views} == set(runner.ABLATIONS)
    settings = BucketsFile().settings
    for fam in families.FAMILIES:
        for i in (0, 4):
            s = scenario.make(fam, i, 0, settings)
            every = runner._settings(raw, s.overrides)
            shared = runner._variants_of(s, raw, runner._walk(s, every[0][1]))
            for label, variant in every:
                paged, fired = runner._found(runner._walk(s, variant))
                assert shared[label] == (paged, s.meta["signal"] in fired if s.meta["signal"] else None), (s.id, label)


def test_a_view_weighing_more_than_the_detector_is_refused() -> None:
    walk = walk_recording(BucketsFile().settings, bucket="small", start=0.0, end=60.0, timeline=[])
    with pytest.raises(ValueError):
        resume(walk, [{"repetition": 99.0}])


def test_ours_alone_counts_and_times() -> None:
    settings = BucketsFile().settings
    made = [scenario.make(families.FAMILIES[0], i, 0, settings) for i in range(3)]
    n, seconds = runner.ours_alone(made, BucketsFile().raw)
    assert n == 3 and seconds > 0


def test_a_replay_reads_snapshots_lazily() -> None:
    t0, n = 1_000_000.0, 2_000
    taken: list[int] = []

    def snaps() -> Iterator[Snapshot]:
        for k in range(n):
            taken.append(k)
            yield Snapshot(t0 + 30.0 * k, {f"src/f{k % 7}.py": " M"}, {})

    def timeline() -> Iterator[tuple[float, list[ToolCall]]]:
        for k in range(n):
            if k == 20:  # minute 10: the snapshots up to it, and one ahead
                assert len(taken) <= 22, f"{len(taken)} snapshots read by the 20th call"
            yield t0 + 30.0 * k + 1, [ToolCall(t0 + 30.0 * k + 1, "Bash", command=f"ls {k}")]

    walk = walk_recording(
        BucketsFile().settings, bucket="big", start=t0, end=t0 + 30.0 * n, timeline=timeline(), snaps=snaps()
    )
    assert walk.detector.calls > 20 and len(taken) > 20


def test_the_renderers_timestamps_are_format_ts_exactly() -> None:
    import random

    from orchestrator.corpus import log_lines
    from spiral.timestamps import format_ts, parse_ts

    rng = random.Random(17)
    moments = [1_779_267_600 + rng.random() * 86_400 * 400 for _ in range(20_000)]
    moments += [1_779_267_659.9995, 1_779_267_659.99951, 1_779_267_600.0, 0.0, 1e-7, 59.9999996]
    moments += [1_779_267_600 + k / 2000 for k in range(-4000, 4000)]  # every half millisecond around midnight
    moments += [86_400 * d - 5e-7 for d in range(1, 50)] + [1_779_353_999.9999995, 1_779_353_999.9999996]
    assert [log_lines.format_ts(t) for t in moments] == [format_ts(t) for t in moments]
    # ...and a scenario made in memory takes each line's time as events.jsonl would give it back
    assert [log_lines.read_back_ts(t) for t in moments] == [parse_ts(format_ts(t)) for t in moments]


def test_replay_case_reads_the_workspace_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.corpus import replay
    from orchestrator.record import run_files as recorded
    from tests.helpers import ROOT

    taken = [0]
    at_first_call: list[int] = []
    real_read, real_adapter = recorded.read_snapshots, replay.make_adapter

    def counting(path: Path, counter: recorded.LineCounter) -> Iterator[Snapshot]:
        for snap in real_read(path, counter):
            taken[0] += 1
            yield snap

    class Recording:  # the case's adapter, noting how many snapshots were read when it gave its first call
        def __init__(self, *args: Any) -> None:
            self.inner = real_adapter(*args)

        def feed(self, ts: float, data: Any) -> list[ToolCall]:
            calls = self.inner.feed(ts, data)
            if calls and not at_first_call:
                at_first_call.append(taken[0])
            return calls

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    monkeypatch.setattr(replay, "read_snapshots", counting)
    monkeypatch.setattr(replay, "make_adapter", Recording)
    result = replay.replay_case(ROOT / "corpus" / "spiral-001-fixture-shim", BucketsFile())
    assert result.passed and result.spiral
    assert at_first_call and at_first_call[0] <= 8  # the snapshots up to the first call's time, one ahead
    assert taken[0] >= 170  # and the rest read after the walk (unreadable lines are counted over the whole file)
