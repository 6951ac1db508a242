"""The five signals at their firing points and just below, against the contract
(../shared/spec/spiral.md) with the numbers of buckets.yaml.

Each test drives spiral.detector.Detector directly with ToolCall / Snapshot
objects and asks for a verdict at an explicit moment.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from orchestrator.buckets import BucketsFile
from spiral import model
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.paths import is_debris
from spiral.porcelain import parse_porcelain
from spiral.settings import Settings
from spiral.shellcmd import analyse
from spiral.verdict import HEALTHY, SOFT, STUCK

BUCKETS = BucketsFile()
S = BUCKETS.settings
T0 = 1_700_000_000.0  # launch
MIN = 60.0
WORKDIR = "/home/dev/runs/r42/clone"


# ---- helpers -------------------------------------------------------------------


def bash(cmd: str, ts: float = T0, cwd: str | None = None) -> ToolCall:
    return ToolCall(ts=ts, tool=model.BASH, command=cmd, cwd=cwd)


def on_file(tool: str, path: str, ts: float = T0) -> ToolCall:
    return ToolCall(ts=ts, tool=tool, path=path)


def reads(n: int, prefix: str = "docs/page") -> list[ToolCall]:
    """n Read calls, each on a different file: window filler that matches nothing."""
    return [on_file(model.READ, f"{prefix}{i}.md") for i in range(n)]


def listings(n: int) -> list[ToolCall]:
    """n Bash calls that poll nothing and run no script."""
    return [bash(f"ls -la src/pkg{i}") for i in range(n)]


def detector(
    calls: Iterable[ToolCall] = (),
    snaps: Iterable[Snapshot] = (),
    *,
    bucket: str = "medium",
    settings: Settings = S,
    tracked: Iterable[str] = (),
    outputs: Iterable[str] = (),
    workdir: str | None = WORKDIR,
) -> Detector:
    det = Detector(settings, bucket=bucket, started_at=T0, tracked=tracked, outputs=outputs, workdir=workdir)
    det.add_calls(calls)
    for snap in snaps:
        det.add_snapshot(snap)
    return det


def snap(minute: float, status: dict[str, str], hashes: dict[str, str] | None = None) -> Snapshot:
    return Snapshot(ts=T0 + minute * MIN, status=status, hashes=hashes or {})


def at(minute: float) -> float:
    return T0 + minute * MIN


def interleave(hits: list[ToolCall], filler: list[ToolCall]) -> list[ToolCall]:
    """hits spread through filler (one hit, then filler...), the last call a hit."""
    out: list[ToolCall] = []
    fill = iter(filler)
    per = len(filler) // max(1, len(hits))
    for hit in hits:
        out.extend(next(fill) for _ in range(per))
        out.append(hit)
    rest = list(fill)
    return rest + out


def finding(verdict, signal: str) -> str:
    return next(f.evidence for f in verdict.findings if f.signal == signal)


def with_overrides(overrides: dict) -> Settings:
    return Settings.from_mapping(BUCKETS.raw, overrides)


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


# ---- 2. repetition -------------------------------------------------------------------

# the script clause alone: the same-file count switched off
SCRIPT_ONLY = with_overrides({"signals": {"repetition": {"same_file": 1000}}})


def _runs(script_cmd: str, n: int) -> list[ToolCall]:
    return [bash(f"{script_cmd} --case {i}") for i in range(n)]


def test_repetition_fires_at_eight_of_twenty_runs_of_an_untracked_script() -> None:
    calls = interleave(_runs("python tmp_debug_mc.py", 8), reads(12))
    assert len(calls) == 20
    for settings in (S, SCRIPT_ONLY):
        v = detector(calls, settings=settings, tracked=["src/lib.py"]).evaluate(at(5))
        assert v.signals == ("repetition",)
        assert v.suspicion == 1
        assert finding(v, "repetition") == "8 of 20 tool calls ran tmp_debug_mc.py (made during the run)"


def test_repetition_script_clause_quiet_at_seven_of_twenty() -> None:
    calls = interleave(_runs("python tmp_debug_mc.py", 7), reads(13))
    assert detector(calls, settings=SCRIPT_ONLY).evaluate(at(5)).signals == ()
    # with the defaults the same 7 runs still touch one file >= 6 times (the other clause)
    v = detector(calls).evaluate(at(5))
    assert finding(v, "repetition") == "7 of 20 tool calls hit tmp_debug_mc.py"


def test_repetition_script_clause_quiet_for_a_tracked_script() -> None:
    calls = interleave(_runs("python tools/check.py", 8), reads(12))
    assert detector(calls, settings=SCRIPT_ONLY, tracked=["tools/check.py"]).evaluate(at(5)).signals == ()
    v = detector(calls, tracked=["tools/check.py"]).evaluate(at(5))
    assert "made during the run" not in finding(v, "repetition")


def test_repetition_script_clause_only_counts_the_last_twenty_events() -> None:
    calls = _runs("python tmp_debug_mc.py", 8) + reads(13)  # the first run left the window
    assert detector(calls, settings=SCRIPT_ONLY).evaluate(at(5)).signals == ()
    calls = _runs("python tmp_debug_mc.py", 8) + reads(12)  # all eight still inside
    assert detector(calls, settings=SCRIPT_ONLY).evaluate(at(5)).signals == ("repetition",)


def test_repetition_script_is_the_same_modulo_arguments_and_form() -> None:
    hits = [
        bash("bash tmp_x.sh"),
        bash("./tmp_x.sh --retry"),
        bash("bash ./tmp_x.sh 3"),
        bash(f"bash {WORKDIR}/tmp_x.sh"),
        bash("sh -c './tmp_x.sh a b'"),
        bash("/bin/bash -lc 'bash tmp_x.sh -v'"),
        bash(f"cd {WORKDIR} && ./tmp_x.sh 2>&1 | tail -3"),
        bash("./tmp_x.sh", cwd=WORKDIR),
    ]
    v = detector(interleave(hits, reads(12)), settings=SCRIPT_ONLY).evaluate(at(5))
    assert finding(v, "repetition") == "8 of 20 tool calls ran tmp_x.sh (made during the run)"


def test_repetition_fires_at_six_events_on_one_file() -> None:
    hits = [
        on_file(model.READ, "src/lib.py"),
        on_file(model.EDIT, "src/lib.py"),
        bash("cat src/lib.py"),
        on_file(model.WRITE, "src/lib.py"),
        bash("sed -n 1,40p src/lib.py"),
        on_file(model.READ, "src/lib.py"),
    ]
    v = detector(interleave(hits, reads(14)), tracked=["src/lib.py"]).evaluate(at(5))
    assert v.signals == ("repetition",)
    assert finding(v, "repetition") == "6 of 20 tool calls hit src/lib.py"
    below = detector(interleave(hits[:5], reads(15)), tracked=["src/lib.py"]).evaluate(at(5))
    assert below.signals == ()


# ---- 3. mutation_stall -----------------------------------------------------------------
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


# ---- 4. sustained_bash -------------------------------------------------------------------


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


# ---- 5. polling ------------------------------------------------------------------------------

TASK_FILE = "/tmp/claude-0/x/tasks/abc.output"


def _polls() -> list[ToolCall]:
    return [
        bash("sleep 5"),
        bash(f"cat {TASK_FILE}"),
        bash("until grep -q PASSED build.log; do sleep 2; done"),
        ToolCall(ts=T0, tool=model.BASH_OUTPUT),
        bash(f"sleep 30 && tail -5 {TASK_FILE}"),
        bash("sleep 60"),
    ]


def test_polling_fires_at_six_of_twenty_shell_calls() -> None:
    calls = interleave(_polls(), listings(14))
    v = detector(calls).evaluate(at(5))
    assert v.signals == ("polling",)
    assert v.suspicion == 2
    assert finding(v, "polling") == (
        "6 of the last 20 shell calls polled a background task "
        "(sleep x2, task-output reads x2, until-waits x1, background-output tool calls x1)"
    )


def test_polling_quiet_at_five_of_twenty() -> None:
    assert detector(interleave(_polls()[:5], listings(15))).evaluate(at(5)).signals == ()


def test_polling_long_sleeps_do_not_count() -> None:
    calls = [bash("sleep 120") for _ in range(6)] + [bash("sleep 61") for _ in range(6)]
    assert detector(calls).evaluate(at(5)).signals == ()
    calls = [bash("sleep 120") for _ in range(6)] + _polls()[:5]
    assert detector(calls).evaluate(at(5)).signals == ()


def test_polling_window_counts_bash_like_events_only() -> None:
    # 30 Reads after the polls do not push them out of the 20 shell-call window
    assert detector(_polls() + reads(30)).evaluate(at(5)).signals == ("polling",)
    # 15 other shell calls do: only 5 polls remain among the last 20
    assert detector(_polls() + listings(15)).evaluate(at(5)).signals == ()


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
    det = detector(_polls(), bucket="small")
    for minute, region, page in [(29.9, HEALTHY, False), (30, SOFT, True), (34.9, SOFT, True), (35, STUCK, False)]:
        v = det.evaluate(at(minute))
        assert "polling" in v.signals
        assert (v.region, v.tripped, v.should_page) == (region, True, page)
        assert v.to_dict()["page"] is page


def test_no_page_below_the_threshold_in_the_soft_band() -> None:
    # small: soft band 30-35 min, 1.5x expected = 30 min. src/other.py joined the touched
    # set at 22 min (so no stall before 32), but it is not the declared output.
    calls = interleave(_runs("python tmp_debug_mc.py", 8), reads(12))
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


# ---- shellcmd.analyse ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("python x.py", "x.py"),
        ("python3 x.py --flag 3 other.txt", "x.py"),
        ("bash x.sh", "x.sh"),
        ("./x.sh", "./x.sh"),
        ("./x.sh arg1 arg2", "./x.sh"),
        ("pytest tests/test_y.py::case", "tests/test_y.py"),
        ("pytest -q tests/test_y.py::TestY::test_z[p-1]", "tests/test_y.py"),
        ("python -m pytest tests/test_y.py::case -x", "tests/test_y.py"),
        ("node x.js", "x.js"),
        ("sh -c 'python x.py --n 1'", "x.py"),
        ("/bin/bash -lc 'python x.py'", "x.py"),
        ('/bin/bash -lc "cd sub && ./run.sh 2>&1 | tail -5"', "sub/run.sh"),
        ("uv run python tmp_x.py", "tmp_x.py"),
        ("timeout 30 env FOO=1 python x.py > out.txt 2>&1", "x.py"),
        ("mix test test/a_test.exs:42", "test/a_test.exs"),
        ("bash -lc ls", None),
        ("cat x.py", None),
        ("python -c 'print(1)'", None),
        ("git status", None),
    ],
)
def test_analyse_script(command: str, script: str | None) -> None:
    assert analyse(command).script == script


def test_analyse_file_and_polling_facts() -> None:
    assert analyse("cat x.py").file == "x.py"
    assert analyse("sed -n 1,20p src/a.py").file == "src/a.py"
    assert analyse("sleep 5").sleep_s == 5
    assert analyse("sleep 5s").sleep_s == 5
    assert analyse("sleep 120").sleep_s == 120
    facts = analyse(f"cat {TASK_FILE}")
    assert facts.task_output and facts.file == TASK_FILE
    assert analyse("/bin/bash -lc 'tail -20 /tmp/claude-1000/-home-x/tasks/bd0afab.output'").task_output
    assert analyse("until grep -q DONE log.txt; do sleep 5; done").until_wait
    assert analyse("until [ -s out.txt ]; do sleep 2; done").until_wait
    assert not analyse("while true; do sleep 2; done").until_wait
    assert not analyse("cat /tmp/notes.txt").task_output


@pytest.mark.parametrize("command", ["python -W ignore x.py", "python3 -X dev x.py --n 1"])
def test_analyse_python_option_values_are_not_the_script(command: str) -> None:
    assert analyse(command).script == "x.py"


def test_analyse_newline_separates_commands() -> None:
    assert analyse("echo start\npython tmp_x.py").script == "tmp_x.py"
    assert analyse("echo waiting\nsleep 5").sleep_s == 5


def test_analyse_heredoc_body_is_not_a_script() -> None:
    assert analyse("python3 - <<'EOF'\nimport sys\nprint(sys.argv)\nEOF").script is None
    assert analyse("cat > tmp_x.py <<'EOF'\nimport os\nEOF\npython tmp_x.py").script == "tmp_x.py"


def test_inline_heredoc_snippets_are_not_a_repeated_script() -> None:
    calls = [bash(f"python3 - <<'EOF'\nimport json\nprint(json.dumps({i}))\nEOF") for i in range(10)]
    assert detector(calls).evaluate(at(75)).signals == ("mutation_stall",)


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


# ---- porcelain.parse_porcelain ----------------------------------------------------------


def test_parse_porcelain_plain() -> None:
    text = (
        "?? tmp_x.py\n M src/a.py\nA  src/new.py\nAM src/b.py\n D gone.py\n"
        'R  old.py -> renamed.py\n?? "with\\ttab.py"\n?? "caf\\303\\251.py"\n'
        'R  "old name.py" -> "new name.py"\n'
    )
    assert parse_porcelain(text) == {
        "tmp_x.py": "??",
        "src/a.py": " M",
        "src/new.py": "A ",
        "src/b.py": "AM",
        "gone.py": " D",
        "renamed.py": "R ",
        "with\ttab.py": "??",
        "café.py": "??",
        "new name.py": "R ",
    }
    assert parse_porcelain("") == {}


def test_parse_porcelain_z_with_rename() -> None:
    text = "R  new.py\0old.py\0?? a -> b.txt\0 M dir/x y.py\0?? café.py\0"
    assert parse_porcelain(text) == {"new.py": "R ", "a -> b.txt": "??", "dir/x y.py": " M", "café.py": "??"}


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
        "PATH": "/usr/bin:/bin",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_parse_porcelain_real_git_plain_and_z_agree(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "old name.py").write_text("a = 1\n" * 20)
    (repo / "keep.py").write_text("k = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    _git(repo, "mv", "old name.py", "new name.py")
    (repo / "keep.py").write_text("k = 2\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "tmp_probe.py").write_text("print()\n")
    (repo / "tab\there.py").write_text("x\n")
    (repo / "café.py").write_text("x\n")
    expected = {"new name.py": "R ", "keep.py": " M", "sub/tmp_probe.py": "??", "tab\there.py": "??", "café.py": "??"}
    assert parse_porcelain(_git(repo, "status", "--porcelain=v1", "-uall")) == expected
    assert parse_porcelain(_git(repo, "status", "--porcelain=v1", "-uall", "-z")) == expected


def test_sliding_window_keeps_its_max_count_exact() -> None:
    import random

    from spiral.window import SlidingCounter

    for seed in range(100):
        rng = random.Random(seed)
        w = SlidingCounter(rng.randint(1, 30))
        for _ in range(400):
            w.push(rng.choice([None, "a", "b", "c", "d", None]))
            assert w.max_count == (max(w.counts.values()) if w.counts else 0)
            assert w.filled == sum(w.counts.values()) and len(w) <= w.size
