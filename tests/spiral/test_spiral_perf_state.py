"""The spiral state the live watcher pickles every tick (detector.pickle) is bounded and loses nothing.

Memos are dropped on pickling and rebuilt as calls come; every structure that grows with the run
has a cap. So a detector pickled after many calls is about as small as one after a few, and a
detector that was pickled and unpickled goes on giving exactly the verdicts of a twin that never was.
"""

from __future__ import annotations

import pickle
import random
import zlib
from typing import Any

from orchestrator.buckets import BucketsFile
from spiral.adapters import Adapter, make_adapter
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.outcome import Outcome

WORKDIR = "/home/dev/clone"
START = 1_780_000_000.0
SRC = [f"src/pkg{p}/mod{n}.py" for p in range(8) for n in range(12)]
TESTS = [f"tests/test_mod{n}.py" for n in range(24)]
SETTINGS = BucketsFile().settings


def _use(i: int, name: str, inp: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_{i:07d}", "name": name, "input": inp}
    return {"type": "assistant", "message": {"content": [block]}, "parent_tool_use_id": parent}


def _result(i: int, text: str, error: bool) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"toolu_{i:07d}", "content": text, "is_error": error}
    return {"type": "user", "message": {"content": [block]}}


def _step(rng: random.Random, i: int, spiral: bool) -> tuple[str, dict[str, Any], str, bool]:
    """One call: a healthy mix, or (in a spiral stretch) the same failing test and the same error."""
    r = rng.random()
    if spiral and r < 0.5:
        t = TESTS[i % 2]
        return "Bash", {"command": f"pytest {t} -q"}, f"FAILED {t}:41 - assert 1 == 2\n1 failed in 0.{i % 90}s", True
    if spiral and r < 0.7:
        return "Bash", {"command": f"python -c 'import m{i % 7}'"}, "ModuleNotFoundError: No module named 'm'", True
    if r < 0.2:
        t = rng.choice(TESTS)
        return "Bash", {"command": f"pytest {t} -q"}, f"{rng.randrange(1, 40)} passed in {rng.random():.2f}s", False
    if r < 0.27:
        return "Bash", {"command": f"python tmp_debug{rng.randrange(12)}.py"}, f"value {rng.randrange(9)}", False
    if r < 0.3:
        return "Bash", {"command": "sleep 20 && gh run view 42"}, rng.choice(["queued", "in_progress"]), False
    if r < 0.33:
        return "Bash", {"command": f"grep -rn sym{i} src/"}, "", rng.random() < 0.5
    if r < 0.55:
        path = rng.choice(SRC)
        return "Read", {"file_path": f"{WORKDIR}/{path}"}, f"     1\tcontent of {path} v{rng.randrange(3)}", False
    if r < 0.85:
        return "Edit", {"file_path": f"{WORKDIR}/{rng.choice(SRC)}", "old_string": "a", "new_string": "b"}, "ok", False
    if r < 0.9:
        return "Write", {"file_path": f"{WORKDIR}/src/gen/new{i}.py", "content": "x"}, "ok", False
    return "Write", {"file_path": f"{WORKDIR}/scratch_{rng.randrange(30)}.py", "content": "x"}, "ok", False


def _timeline(n: int, seed: int) -> list[tuple[float, Any]]:
    """(ts, payload or Snapshot) of a run of `n` calls: stretches of work and of spiralling,
    parallel calls whose results come later, subagent calls, snapshots (some reverting a file)."""
    rng = random.Random(seed)
    out: list[tuple[float, Any]] = []
    ts = START
    held: list[tuple[int, str, bool]] = []  # results still to come
    for i in range(n):
        spiral = (i // 400) % 3 == 2
        name, inp, text, error = _step(rng, i, spiral)
        out.append((ts, _use(i, name, inp, "toolu_task" if i % 50 < 5 else None)))
        if i % 9 == 0:
            out.append((ts, _use(i, name, inp)))  # the same block again on another line of the message
        held.append((i, text, error))
        if rng.random() < 0.7:
            ts += rng.uniform(1.0, 40.0)
            for j, t, e in held:
                out.append((ts, _result(j, t, e)))
            held = []
        if i % 10 == 9:
            paths = rng.sample(SRC, 6) + ["scratch_1.py"]
            k = rng.randrange(3)  # a few contents per file: some snapshots show a file back at one
            out.append(
                (
                    ts,
                    Snapshot(
                        ts, {p: " M" for p in paths}, {p: f"{zlib.crc32(p.encode()) & 0xFFFF:x}{k}" for p in paths}
                    ),
                )
            )
        ts += rng.uniform(1.0, 20.0)
    for j, t, e in held:
        out.append((ts, _result(j, t, e)))
    out.append((ts, {"type": "result", "permission_denials": [{"tool_use_id": f"toolu_{n - 1:07d}"}]}))
    return out


State = tuple[Detector, Adapter, Outcome]


def _fresh() -> State:
    detector = Detector(
        SETTINGS, bucket="medium", started_at=START, workdir=WORKDIR, tracked=SRC + TESTS, scope=("src/**",)
    )
    return detector, make_adapter("claude-stream-json", WORKDIR), Outcome()


def _feed(state: State, items: list[tuple[float, Any]], tick: list[float]) -> list[Any]:
    """Feed items, evaluating on a 30 s tick as the watcher does; what it saw, for comparison."""
    detector, adapter, outcome = state
    seen: list[Any] = []
    for ts, item in items:
        while tick[0] <= ts:
            seen.append(detector.evaluate(tick[0]))
            seen.append(detector.next_change_after(tick[0]))
            tick[0] += 30.0
        if isinstance(item, Snapshot):
            detector.add_snapshot(item)
            continue
        outcome.feed(ts, item)
        calls: list[ToolCall] = adapter.feed(ts, item)
        seen.append([(c.tool, c.command, c.path, c.agent) for c in calls])
        for call in calls:
            detector.add_call(call)
    seen.append((detector.evaluate(tick[0]), adapter.skipped, outcome.tool_calls, outcome.denied, detector.calls))
    return seen


def _round_trip(state: State) -> State:
    back: State = pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    return back


def test_a_detector_unpickled_halfway_gives_exactly_the_verdicts_of_one_never_pickled() -> None:
    items = _timeline(3000, seed=5)
    half = len(items) // 2
    twin, twin_tick = _fresh(), [START]
    expected = _feed(twin, items[:half], twin_tick) + _feed(twin, items[half:], twin_tick)
    state, tick = _fresh(), [START]
    got = _feed(state, items[:half], tick)
    got += _feed(_round_trip(state), items[half:], tick)
    assert got == expected
    verdicts = [v for v in expected if hasattr(v, "findings")]
    assert any(v.findings for v in verdicts) and any(not v.findings for v in verdicts)  # both kinds compared
    assert expected[-1][3] == 1  # the result line's denial was joined after the round trip too


def test_a_detector_pickled_every_tick_gives_exactly_the_verdicts_of_one_never_pickled() -> None:
    items = _timeline(2000, seed=11)
    twin_tick = [START]
    twin = _fresh()
    expected = [x for k in range(0, len(items), 97) for x in _feed(twin, items[k : k + 97], twin_tick)]
    state, tick = _fresh(), [START]
    got = []
    for k in range(0, len(items), 97):
        state = _round_trip(state)
        got += _feed(state, items[k : k + 97], tick)
    assert got == expected


def test_the_pickled_state_stays_bounded_however_many_calls() -> None:
    sizes = {}
    for n in (1500, 15000):
        state, tick = _fresh(), [START]
        _feed(state, _timeline(n, seed=3), tick)
        assert state[0].calls >= n
        sizes[n] = len(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    assert sizes[15000] < 1.3 * sizes[1500], sizes
    assert sizes[15000] < 300_000, sizes


def test_a_clone_dirtier_than_the_touched_cap_still_shows_a_stall() -> None:
    """More dirty files than the cap (an untracked venv, an uncommitted codemod), then one file edited in
    circles: a file dirty since the last snapshot is not new, so the stall is seen."""
    from spiral import detector as detector_mod

    det = Detector(SETTINGS, bucket="medium", started_at=START, workdir=WORKDIR)
    dirty = {f"src/f{i:05d}.py": " M" for i in range(detector_mod._PATHS + 900)}
    for k in range(200):
        det.add_snapshot(Snapshot(START + 60 * k, dict(dirty), {"src/f00000.py": f"blob{k % 2}"}))
    assert det.touched_grew_at == START  # only the first snapshot grew the touched set
    assert "mutation_stall" in det.evaluate(START + 60 * 200).signals
