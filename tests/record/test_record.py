"""The run record: typed, versioned, migrated from the untyped version-1 state.json, newer versions refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import VERSION, RunRecord, StopRequest

# a version-1 record as the first orchestrator wrote it (keys absent or null where unknown)
V1 = {
    "version": 1,
    "run_id": "t1-20260101-000000",
    "ticket_id": "t1",
    "bucket": "small",
    "agent": "claude",
    "format": "claude-stream-json",
    "argv": ["claude", "-p"],
    "prompt": None,
    "prompt_mode": "argument",
    "state": "killed",
    "reason": "stopped by a person",
    "created_at": "2026-01-01T00:00:00.000000Z",
    "started_at": "2026-01-01T00:00:01.000000Z",
    "ended_at": "2026-01-01T00:10:00.000000Z",
    "time_scale": None,
    "supervisor": {"pid": 123, "create_time": 1767225600.5},
    "stop_requested": {"as": "killed", "reason": "stopped by a person", "at": "2026-01-01T00:09:59.000000Z"},
    "spiral": {"tripped_in_soft_band": True, "tripped_at_min": 31, "page_signals": ["polling"]},
    "notices": {"spiral": {"attempts": 2, "delivered": True, "channels_done": ["abc"]}},
    "hints": None,
}


def write(run: Path, data: object) -> RunDir:
    run.mkdir(parents=True, exist_ok=True)
    (run / "state.json").write_text(json.dumps(data))
    return RunDir(run)


def test_a_version_1_record_is_read_as_the_current_one(tmp_path: Path) -> None:
    rd = write(tmp_path / "t1-20260101-000000", V1)
    rec = state_file.read(rd)
    assert rec.version == VERSION
    assert rec.state == "killed" and rec.time_scale == 1.0 and rec.hints == []
    assert rec.supervisor is not None and rec.supervisor.pid == 123
    assert rec.stop_requested == StopRequest(
        end_as="killed", reason="stopped by a person", at=V1["stop_requested"]["at"]
    )
    assert rec.spiral.tripped_at_min == 31 and rec.spiral.page_signals == ["polling"] and not rec.spiral.notified
    assert rec.notices["spiral"].delivered and rec.notices["spiral"].attempts == 2


def test_a_migrated_record_is_written_back_in_the_current_shape(tmp_path: Path) -> None:
    rd = write(tmp_path / "r", V1)
    state_file.update(rd, lambda r: None)
    raw = json.loads(rd.state_json.read_text())
    assert raw["version"] == VERSION
    assert raw["stop_requested"]["as"] == "killed"  # the JSON key stays "as"
    assert set(raw) == set(RunRecord.__struct_fields__)
    assert state_file.read(rd).notices["spiral"].channels_done == ["abc"]


def test_a_version_4_record_s_ceilings_and_ladder_move_into_their_parts(tmp_path: Path) -> None:
    v4 = {
        "version": 4,
        "state": "running",
        "max_usd": 2.5,
        "max_tokens": 90000,
        "budget_warned_at": 0.72,
        "budget_unpriced": True,
        "spend_live": {"tokens": 120, "cost_usd": 0.5},
        "escalation": [{"action": "nudge", "after_min": 3.0}],
        "escalations": [{"rung": 1, "action": "nudge", "at": "2026-01-01T00:00:00Z", "at_min": 3.5, "why": "w"}],
        "ladder_snoozed_until": "2026-01-01T01:00:00Z",
    }
    rd = write(tmp_path / "v4-run", v4)
    rec = state_file.read(rd)
    assert (rec.ceilings.max_usd, rec.ceilings.max_tokens, rec.ceilings.warned_at) == (2.5, 90000, 0.72)
    assert rec.ceilings.unpriced and rec.ceilings.live is not None and rec.ceilings.live.tokens == 120
    assert [r.action for r in rec.ladder.rungs] == ["nudge"] and rec.ladder.climbed[0].at_min == 3.5
    assert rec.ladder.snoozed_until == "2026-01-01T01:00:00Z"
    state_file.update(rd, lambda r: None)
    raw = json.loads(rd.state_json.read_text())
    assert raw["version"] == VERSION and not {k for k in v4 if k not in ("version", "state")} & set(raw)
    # a version-4 record without any of them gets empty parts
    assert state_file.read(write(tmp_path / "bare", {"version": 4, "state": "running"})).ladder.rungs == []


def test_a_minimal_hand_written_record_gets_defaults_and_its_folder_name(tmp_path: Path) -> None:
    rd = write(tmp_path / "zz-run", {"state": "running", "bucket": "small"})
    rec = state_file.read(rd)
    assert rec.run_id == "zz-run" and rec.active and rec.spiral.region == "healthy" and rec.notices == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": VERSION + 1, "state": "running"}, f"state file is version {VERSION + 1}, newer than"),
        ({"version": "two"}, "unknown version 'two'"),
        ({"time_scale": "fast"}, "not a valid run record: Expected `float`, got `str` - at `$.time_scale`"),
        ({"time_scale": 0}, "not a valid run record"),
        ({"spiral": {"tool_calls": "many"}}, "at `$.spiral.tool_calls`"),
        ([1, 2], "state file is not a JSON object"),
    ],
)
def test_a_record_that_cannot_be_read_is_one_clear_error(tmp_path: Path, data: object, message: str) -> None:
    rd = write(tmp_path / "bad", data)
    with pytest.raises(UserError) as err:
        state_file.read(rd)
    assert message in str(err.value) and str(err.value).startswith(str(rd.state_json))


def test_an_ending_is_recorded_once(tmp_path: Path) -> None:
    rec = RunRecord(run_id="r", state="running")
    assert state_file.end(rec, "failed", "agent exited 3", exit_code=3)
    assert not state_file.end(rec, "killed", "late")
    assert (rec.state, rec.reason, rec.exit_code) == ("failed", "agent exited 3", 3)


def test_what_orjson_refuses_is_still_read_as_the_json_module_reads_it(tmp_path: Path) -> None:
    rd = write(tmp_path / "r", {**V1, "time_scale": 1.0})
    text = rd.state_json.read_text()
    rd.state_json.write_text(text.replace('"ticket_id": "t1"', '"ticket_id": "t1", "pasted": "\\ud800", "n": NaN'))
    assert state_file.read(rd).ticket_id == "t1"  # unknown keys are dropped either way
    for bad in ("", "{", "\xff"):
        rd.state_json.write_text(bad, encoding="latin-1")
        with pytest.raises(UserError, match="state file is not valid JSON"):
            state_file.read(rd)


def test_a_shared_read_is_read_again_only_when_the_record_was_written(tmp_path: Path) -> None:
    import os
    import time

    rd = write(tmp_path / "zz-run", {"state": "running", "bucket": "small"})
    long_ago = time.time() - 60
    os.utime(rd.state_json, (long_ago, long_ago))
    first = state_file.read_shared(rd)
    assert state_file.read_shared(rd) is first  # unchanged, written well before: the same record, not read again
    # a file system keeping whole seconds: a rewrite in place of the same size within the same second
    # leaves the same identity; a record read less than RACY_S after its mtime is not trusted by it
    rd.state_json.write_text(json.dumps({"state": "running", "bucket": "small", "reason": "a"}))
    now = rd.state_json.stat().st_mtime_ns
    assert state_file.read_shared(rd).reason == "a"
    rd.state_json.write_text(json.dumps({"state": "running", "bucket": "small", "reason": "b"}))
    os.utime(rd.state_json, ns=(now, now))
    assert state_file.read_shared(rd).reason == "b"
    state_file.update(rd, lambda r: setattr(r, "reason", "moved on"))
    again = state_file.read_shared(rd)
    assert again is not first and again.reason == "moved on"
    assert state_file.read(rd) is not state_file.read(rd)  # `read` gives each caller its own
    rd.state_json.write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        state_file.read_shared(rd)
    rd.state_json.unlink()
    with pytest.raises(UserError, match="no state.json"):
        state_file.read_shared(rd)


def test_a_fifo_in_place_of_a_record_is_an_error_not_a_wait(tmp_path: Path) -> None:
    import os

    run = tmp_path / "fifo-run"
    run.mkdir()
    os.mkfifo(run / "state.json")  # nobody writes it: an open that waits would wait for ever
    for read in (state_file.read, state_file.read_shared):
        with pytest.raises(UserError, match="not a regular file"):
            read(RunDir(run))
