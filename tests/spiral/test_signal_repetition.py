"""The repetition signal (spiral/signals/repetition.py) at its firing points and just below."""

from __future__ import annotations

from spiral import model
from tests.helpers import (
    WORKDIR,
    S,
    at,
    bash,
    detector,
    finding,
    interleave,
    on_file,
    reads,
    script_runs,
    with_overrides,
)

# the script clause alone: the same-file count switched off
SCRIPT_ONLY = with_overrides({"signals": {"repetition": {"same_file": 1000}}})


def test_repetition_fires_at_eight_of_twenty_runs_of_an_untracked_script() -> None:
    calls = interleave(script_runs("python tmp_debug_mc.py", 8), reads(12))
    assert len(calls) == 20
    for settings in (S, SCRIPT_ONLY):
        v = detector(calls, settings=settings, tracked=["src/lib.py"]).evaluate(at(5))
        assert v.signals == ("repetition",)
        assert v.suspicion == 1
        assert finding(v, "repetition") == "8 of 20 tool calls ran tmp_debug_mc.py (made during the run)"


def test_repetition_script_clause_quiet_at_seven_of_twenty() -> None:
    calls = interleave(script_runs("python tmp_debug_mc.py", 7), reads(13))
    assert detector(calls, settings=SCRIPT_ONLY).evaluate(at(5)).signals == ()
    # with the defaults the same 7 runs still touch one file >= 6 times (the other clause)
    v = detector(calls).evaluate(at(5))
    assert finding(v, "repetition") == "7 of 20 tool calls hit tmp_debug_mc.py"


def test_repetition_script_clause_quiet_for_a_tracked_script() -> None:
    calls = interleave(script_runs("python tools/check.py", 8), reads(12))
    assert detector(calls, settings=SCRIPT_ONLY, tracked=["tools/check.py"]).evaluate(at(5)).signals == ()
    v = detector(calls, tracked=["tools/check.py"]).evaluate(at(5))
    assert "made during the run" not in finding(v, "repetition")


def test_repetition_script_clause_only_counts_the_last_twenty_events() -> None:
    calls = script_runs("python tmp_debug_mc.py", 8) + reads(13)  # the first run left the window
    assert detector(calls, settings=SCRIPT_ONLY).evaluate(at(5)).signals == ()
    calls = script_runs("python tmp_debug_mc.py", 8) + reads(12)  # all eight still inside
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


def test_inline_heredoc_snippets_are_not_a_repeated_script() -> None:
    calls = [bash(f"python3 - <<'EOF'\nimport json\nprint(json.dumps({i}))\nEOF") for i in range(10)]
    assert detector(calls).evaluate(at(75)).signals == ("mutation_stall",)
