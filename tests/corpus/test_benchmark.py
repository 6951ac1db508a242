"""The detection benchmark: families, metrics, baselines, and the committed table."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import baselines, families
from orchestrator.corpus.benchmark.metrics import Outcome, score, wilson
from orchestrator.corpus.replay import replay_case
from spiral.model import ToolCall
from tests.helpers import ROOT


def test_enough_families_and_scenarios() -> None:
    assert len(families.FAMILIES) >= 15
    assert len({f.name for f in families.FAMILIES}) == len(families.FAMILIES)
    assert sum(f.positive for f in families.FAMILIES) >= 7
    assert 40 * len(families.FAMILIES) >= 600


@pytest.mark.parametrize("fam", families.FAMILIES, ids=lambda f: f.name)
def test_each_family_writes_replayable_labelled_cases(fam: families.Family, tmp_path: Path) -> None:
    folders = [families.write_scenario(fam, i, tmp_path) for i in range(4)]
    again = families.write_scenario(fam, 0, tmp_path / "again")
    assert (folders[0] / "events.jsonl").read_bytes() == (again / "events.jsonl").read_bytes()  # seeded
    formats = set()
    for folder in folders:
        meta = json.loads((folder / "scenario.json").read_text())
        assert meta["family"] == fam.name and meta["must_page"] == fam.positive
        formats.add(meta["format"])
        result = replay_case(folder, BucketsFile())
        assert result.skipped_lines == 0 and result.tool_calls > 10
        if fam.positive:
            assert meta["signal"] and meta["window"] and meta["onset_min"] is not None
    assert len(formats) >= 2


def test_wilson_known_values() -> None:
    lo, hi = wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson(0, 0) == (0.0, 1.0)


def test_score_counts_and_family_intervals() -> None:
    outs = [
        Outcome("a", True, 32.0, 10.0, (30.0, 35.0), True),
        Outcome("a", True, None, 10.0, (30.0, 35.0), None),
        Outcome("b", True, 5.0, 10.0, (30.0, 35.0), False),
        Outcome("b", True, 31.0, 10.0, (30.0, 35.0), False),
        Outcome("b", True, 40.0, 10.0, (30.0, 35.0), True),
        Outcome("c", False, 40.0, None, None),
        Outcome("c", False, None, None, None),
        Outcome("d", False, None, None, None),
    ]
    s = score(outs)
    assert (s.tp, s.fp, s.tn, s.fn) == (2, 1, 2, 3)  # early and late pages on spirals are misses
    assert (s.early, s.late) == (1, 1) and s.delays == [22.0, 21.0]
    assert (s.attributed, s.attributable) == (1, 2)
    assert s.family_recall == {"a": 0.5, "b": 1 / 3} and s.family_fpr == {"c": 0.5, "d": 0.0}
    assert s.recall_interval() == wilson(0.5 + 1 / 3, 2)


def _shape(cmds: list[str], gap_s: float = 20, minutes: float = 60) -> baselines.RunShape:
    t0 = 1_000_000.0
    calls = [ToolCall(t0 + i * gap_s, "Bash", command=c) for i, c in enumerate(cmds)]
    return baselines.RunShape(t0, t0 + minutes * 60, 35.0, calls)


def test_baselines() -> None:
    loop = _shape(["ls", "python x.py", "python x.py", "python x.py", "git status"])
    assert baselines.consecutive_repeats(3)(loop) == pytest.approx(3 * 20 / 60, abs=0.01)
    assert baselines.consecutive_repeats(5)(loop) is None
    assert baselines.step_cap(4)(loop) == 1.0 and baselines.step_cap(6)(loop) is None
    assert baselines.wall_clock_cap()(loop) == 35.0
    assert baselines.wall_clock_cap()(_shape(["ls"], minutes=20)) is None
    assert baselines.heartbeat(1800)(_shape(["ls"], minutes=20)) is None
    assert baselines.heartbeat(1800)(_shape(["ls", "ls"], gap_s=2000)) == pytest.approx(30.0)
    pager = baselines.random_pager(0.5, "t")
    hits = [pager(_shape(["ls"] * random.Random(i).randint(1, 50))) is not None for i in range(200)]
    assert 60 < sum(hits) < 140
    assert pager(loop) == pager(loop)  # seeded: the same run, the same answer


def test_committed_table_is_reproduced() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "eval", "--bench", "--markdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    committed = (ROOT / "docs" / "benchmark.md").read_text()
    marker = "## Real recorded logs"
    if marker not in p.stdout:  # ../shared/real-traces absent: compare the generated part only
        committed = committed.split(marker)[0].rstrip() + "\n"
    assert p.stdout == committed, "docs/benchmark.md is stale: regenerate it with ./dev.sh eval --bench --markdown"


def test_variants_seed_only_and_one_ablation_per_rule() -> None:
    from orchestrator.corpus.benchmark import runner

    raw = BucketsFile().raw
    seedless = {k: v for k, v in raw.items() if k != "rules"}
    labels = [label for label, _, _ in runner.variants(seedless)]
    assert labels == [runner.OURS, runner.SEED_ONLY, *runner.ABLATIONS]  # no rules: no rule rows
    rows = runner.variants(raw)
    seed = dict((label, m) for label, m, _ in rows)[runner.SEED_ONLY]
    assert "rules" not in seed and seed["signals"] == raw["signals"]
    rules = raw.get("rules") or {}
    switchable = [n for n, v in rules.items() if isinstance(v, dict) and "enabled" in v]
    assert [label for label, _, _ in rows][2 + len(runner.ABLATIONS) :] == [
        f"ours without rule {n}" for n in switchable
    ]
    for label, mapping, _ in rows:
        if label.startswith("ours without rule "):
            name = label.removeprefix("ours without rule ")
            assert mapping["rules"][name]["enabled"] is False
            assert raw["rules"][name]["enabled"] is True  # the buckets mapping itself is left alone


def test_rule_families_present_and_every_format_rotated() -> None:
    names = {f.name for f in families.FAMILIES}
    assert {
        "same-failure-masked",
        "rerun-unchanged-tree",
        "same-error-varied-commands",
        "subagent-loop",
        "drift-out-of-scope",
        "poll-same-status",
        "lint-fix-one-by-one",
        "test-failures-shrinking",
        "build-log-timings",
        "taskoutput-collect-subagents",
        "varied-errors-while-fixing",
        "scope-brief-excursion",
        "healthy-subagents",
    } <= names


def test_subagent_and_scope_families_render_what_the_rules_read(tmp_path: Path) -> None:
    by_name = {f.name: f for f in families.FAMILIES}
    stream = families.write_scenario(by_name["subagent-loop"], 0, tmp_path)  # index 0: claude-stream-json
    lines = [json.loads(x)["data"] for x in (stream / "events.jsonl").read_text().splitlines()]
    assert any(d.get("parent_tool_use_id") for d in lines if d.get("type") == "assistant")
    transcript = families.write_scenario(by_name["subagent-loop"], 3, tmp_path)  # index 3: claude-transcript
    lines = [json.loads(x)["data"] for x in (transcript / "events.jsonl").read_text().splitlines()]
    assert any(d.get("isSidechain") is True and d.get("agentId") for d in lines)
    drift = families.write_scenario(by_name["drift-out-of-scope"], 0, tmp_path)
    assert "scope:" in (drift / "case.yaml").read_text()
    assert "Exit code 1\n" in (stream / "events.jsonl").read_text().replace("\\n", "\n")  # Claude's failed Bash
