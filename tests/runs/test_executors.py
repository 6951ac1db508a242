"""The executor seam (orchestrator/runs/executors): the record says where a run executes, config.yaml's
`executor:` key is checked with one-line file:line errors, and a record picks its executor."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from orchestrator import config
from orchestrator.infra.errors import UserError
from orchestrator.record import case_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Placement, RunRecord
from orchestrator.runs.executors import base, follow
from orchestrator.runs.steps import feed
from tests.helpers import BUCKETS, cli, ticket, without_module


def _load(tmp_path: Path, text: str) -> config.UserConfig:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return config.load(path)


def test_executor_key_is_read_and_checked_with_file_and_line(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        "heartbeat_seconds: 60\nexecutor:\n  kind: ray\n  address: 127.0.0.1:6379\n  resources: {agent_slot: 1}\n",
    )
    assert cfg.executor == config.ExecutorConfig("ray", "127.0.0.1:6379", {"agent_slot": 1.0})
    assert _load(tmp_path, "executor: {kind: local}\n").executor is None
    for text, needle in (
        ("executor:\n  kind: ray\n", "address"),
        ("executor:\n  kind: slurm\n", "'local' or 'ray'"),
        ("executor:\n  kind: ray\n  address: h:1\n  resources: {agent_slot: -1}\n", "resources"),
        ("executor:\n  kind: local\n  address: h:1\n", "kind"),
    ):
        with pytest.raises(UserError) as err:
            _load(tmp_path, text)
        msg = str(err.value)
        assert "config.yaml:" in msg and needle in msg and "\n" not in msg.strip(), msg


def test_a_record_picks_its_executor_and_says_where_it_runs() -> None:
    old = RunRecord(run_id="r")  # recorded before executors: local, placed nowhere yet
    assert base.for_record(old).kind == "local" and base.for_record(old).clones_here
    assert base.executes_on(old) is None
    here = RunRecord(run_id="r", executor=Placement(kind="local", where="box"))
    assert base.executes_on(here) == "local:box"
    remote = RunRecord(run_id="r", executor=Placement(kind="ray", address="h:1", resources={"agent_slot": 1}))
    ex = base.for_record(remote)
    assert ex.kind == "ray" and not ex.clones_here and base.executes_on(remote) == "ray"
    assert not ex.alive(remote) and not ex.agent_alive(remote)  # no follower yet


def test_a_ray_executor_without_ray_installed_is_refused_at_launch(tmp_path: Path, repo: Path, home: Path) -> None:
    cfg = home / "config.yaml"
    cfg.write_text(json.dumps(json.loads(cfg.read_text()) | {"executor": {"kind": "ray", "address": "127.0.0.1:1"}}))
    p = cli("launch", str(ticket(tmp_path, repo, "exit 0")), env=without_module(tmp_path, "ray"))
    assert p.returncode == 2 and "executor kind ray needs Ray here: pip install -e '.[ray]'" in p.stderr, p.stderr
    assert not (home / "runs").exists()  # nothing queued


def test_a_run_placed_on_a_node_is_read_against_the_node_s_clone(tmp_path: Path) -> None:
    """The agent's log names files under the clone it works in; on a Ray node that is the node's temp
    folder, not the run folder's clone. The detector (made before the placement, then again after it)
    and the run's case.yaml read the log against the node's clone, so a file the run made there is
    the run's own (made debris, a made probe), as it is on this machine."""
    rd = RunDir(tmp_path / "r-1")
    rd.path.mkdir()
    for f in (rd.events, rd.workspace, rd.tracked):
        f.touch()
    record = RunRecord(run_id="r-1", state="running", format="generic", bucket="small", executor=Placement(kind="ray"))
    local = feed.catch_up(rd, record, BUCKETS.settings, 0.0)
    assert local.detector.workdir == str(rd.clone) == record.agent_clone(rd.clone)
    node = "/tmp/orchestrator-r-1-abc/clone"
    change = follow.placed("10.0.0.2", "run-r-1-1", node)
    assert change(record) and record.executor is not None and record.executor.clone == node
    placed = feed.catch_up(rd, record, BUCKETS.settings, 0.0)
    assert placed is not local and placed.detector.workdir == node
    assert feed.catch_up(rd, record, BUCKETS.settings, 0.0) is placed  # kept while it holds
    assert RunRecord(executor=Placement(kind="local")).agent_clone(rd.clone) == str(rd.clone)
    rd.state_json.write_bytes(msgspec.json.encode(record))
    case_file.write_run_case(rd.path, record)
    assert f"workdir: {node}\n" in rd.case_yaml.read_text()
