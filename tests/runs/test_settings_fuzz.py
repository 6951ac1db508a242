"""Every buckets.yaml key, fuzzed: a value the settings check accepts never makes a run record that does
not load (issue 38: `snapshot_every_seconds: 0` passed the check, then the record refused it)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from spiral.settings import Settings, SettingsError, merge
from tests.helpers import BUCKETS

ODD = [0, -1, 0.5, 1e9, math.inf, math.nan, "x", True, None, [], {}]


def _leaves(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, str(key)))
    else:
        yield path


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return dict(out)


def test_every_key_takes_odd_values_without_a_crash_and_an_accepted_one_makes_a_loadable_record(tmp_path: Path) -> None:
    leaves = list(_leaves(BUCKETS.raw))
    assert len(leaves) > 60  # every key of the shipped file, the rules' included
    checked = accepted = 0
    for path in leaves:
        for value in ODD:
            raw = merge(BUCKETS.raw, _nested(path, value))
            checked += 1
            try:
                settings = Settings.from_mapping(raw)
            except SettingsError as exc:
                assert exc.message and exc.path, (path, value)  # one line that names the key
                continue
            accepted += 1
            # what launch writes from these settings: the record must load again
            rd = RunDir(tmp_path / f"r{checked}")
            rd.path.mkdir()
            record = RunRecord(run_id=f"r{checked}", snapshot_every_s=settings.snapshot_every_s, settings=raw)
            state_file.write(rd, record)
            again = state_file.read(rd)
            assert again.snapshot_every_s == settings.snapshot_every_s, (path, value)
            Settings.from_mapping(again.settings)  # and the frozen settings are the same settings
    assert checked == len(leaves) * len(ODD) and 0 < accepted < checked
