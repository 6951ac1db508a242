"""The window signals' state: recent calls, taken in order once their result is known (pure).

The five signals count keys in sliding windows (spiral/window.py). The
rules of buckets.yaml (spiral/rules.py) decide, per call, whether it is
counted at all, from what the call returned and whether the tree changed:

- outcomes: a rerun of a script or test counts when it reproduces the
  failure of the previous run of the same command (fingerprints equal) or when nothing in the tree
  changed since that run; a rerun after a change that succeeds, or fails
  differently, is progress and is not counted. A Read of a file that returns
  something new (another chunk, the file after an edit) is not counted, nor
  is an edit that went through, unless the file was seen reverted to an
  earlier content (editing in circles).
- poll_progress: a poll counts when it returns what the same poll returned
  last time (or is a first look at a task still running); a poll whose
  output moved or says the task is done, and a `sleep` after a check that
  returned something new, do not count.
- same_error: failing calls keyed by their masked error text, reset when a
  real (non-debris) file changes.

With no rules (the seed detector) every call is taken at once and counted
as the contract's five signals define.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any, NamedTuple

from mypy_extensions import mypyc_attr

from spiral import model, runner_verdict
from spiral.attempts import EDIT_INTENT, EMPTY, SEARCH_INTENT, Attempts, outcome_key
from spiral.fingerprint import Facts, Fingerprinter, facts_of
from spiral.model import ToolCall
from spiral.pickling import attrs_of, set_attrs
from spiral.settings import Settings
from spiral.shellcmd import ANALYSED_CHARS, TASK_OUTPUT, unwrap
from spiral.shellwrites import Writes
from spiral.window import SlidingCounter

# what a run of a script/test (or a Read of a file) was, next to the previous one of the same target
FIRST, UNKNOWN, UNCHANGED, SAME_FAILURE, PROGRESS = "first", "unknown", "unchanged-tree", "same-failure", "progress"
SAME_READ, FRESH_READ, REVERTED, NEW_CONTENT = "same-read", "fresh-read", "reverted", "new-content"
_NOT_COUNTED = frozenset({PROGRESS, FRESH_READ, NEW_CONTENT})
_MEMORY = 4096  # targets and polls remembered, at most
_PRUNE_AT = 64  # ...past this many, those too old to be compared with are dropped (the state is pickled per tick)
# a shell command that shows or searches files: an HTTP status in its output is the file's text, not an error
_VIEWER = re.compile(
    r"\s*(?:cat|head|tail|less|more|bat|nl|grep|egrep|rg|ag|ack|sed|awk|ls|find|fd|jq|git\s+(?:log|show|diff|grep|blame))\b"
)
_POLL_HORIZON = 120  # calls back a poll or check is compared with the previous look at it
_CHANGES = 64  # recent file changes kept for the evidence


class Meaning(NamedTuple):
    """What a call is, worked out once per distinct call (spiral/detector.py)."""

    script: str | None  # repetition: an untracked script it runs
    file: str | None  # repetition: the file it touches
    target: str | None  # sustained_bash: the script or test it runs
    shell_like: bool
    poll: str | None
    path: str | None
    request: bool = False  # a shell command that is not a file viewer or search (same_error)
    moves_head: bool = False  # a git command that moves HEAD or the index (spiral/detector.py)
    intent: str | None = None  # stuck_check: the check a shell call runs (spiral/intent.py)
    intent_script: str | None = None  # ...the file it runs or compiles, workdir-relative when inside
    writes: Writes | None = None  # shell_edits: what the command changes in the tree (spiral/shellwrites.py)
    exit_masked: bool = False  # stuck_check: the line's status is another's (spiral/intent.py)
    output_picked: bool = False  # ...and a pipe kept only some lines of its output (`| grep FAIL`)


def is_request(tool: str, command: str | None) -> bool:
    """A shell command that is not a file viewer or search: an HTTP status in its output is an error."""
    return tool == model.BASH and not _VIEWER.match(unwrap((command or "")[:ANALYSED_CHARS]))


# Run(...) without the Python-level __new__ of a NamedTuple (two per call on the replay hot path)
_new_run = tuple.__new__


class Run(NamedTuple):
    """One counted-or-not run of a target, kept for the evidence."""

    target: str | None
    kind: str | None
    agent: str | None
    since: int  # tree version of the previous run of the target
    at: int  # tree version at this run


def _new_outcome(call: ToolCall, before: ToolCall, fp: Fingerprinter, *, failures_too: bool) -> bool:
    """Another command on the same target came back with something new: a pass (or, where asked, any outcome)."""
    if not (call.result_seen and before.result_seen) or (call.is_error and not failures_too):
        return False
    return not fp.same(call, before)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class CallWindows:
    def __init__(self, settings: Settings) -> None:
        s = settings
        self.rules = r = s.rules
        self.rep_scripts = SlidingCounter(s.rep_window)
        self.rep_files = SlidingCounter(s.rep_window)
        self.sb_targets = SlidingCounter(s.sb_window)
        self.polls = SlidingCounter(s.poll_window)
        self.errors = SlidingCounter(r.same_error_window)
        self.sb_runs: deque[Run] = deque(maxlen=s.sb_window)
        self.rep_runs: deque[Run] = deque(maxlen=s.rep_window)
        self.error_calls: deque[tuple[str | None, str]] = deque(maxlen=r.same_error_window)  # (key, command)
        self.pushed = 0  # calls taken into the windows
        self.tree_version = 0  # bumped on every change seen in the clone
        self.real_version = 0  # ...on every change of a non-debris file
        self.changes: deque[tuple[int, str]] = deque(maxlen=_CHANGES)
        self.reverted: set[str] = set()  # files a snapshot showed back at an earlier content
        self._queue: deque[tuple[ToolCall, Meaning, int, int]] = deque()
        self._wait = r.result_wait_s if r.needs_results else None
        self._fp = Fingerprinter(r.masks, r.error_line, r.error_output)
        self._runs: dict[str, tuple[ToolCall, int, int]] = {}  # target -> (last run, tree version, call no.)
        self._recent = max(s.sb_window, s.rep_window)  # a rerun compares with a run at most this many calls back
        self._done = r.poll_done
        self._polled: dict[str, tuple[ToolCall, int]] = {}  # poll / check command -> (its last run, call no.)
        self._check_moved = False  # whether the latest check between sleeps returned something new...
        # ...or, until a bare sleep asks, the latest check's result and its previous look's (judged then)
        self._check: tuple[Facts, Facts | None] | None = None
        # stuck_check: each intent's recent attempts; `made`: files the run created (a probe's output is its result)
        self.attempts = (
            Attempts(r.stuck_window, r.stuck_repeats, r.stuck_max_outcomes, r.batch_s if r.batches else -1.0)
            if r.stuck_check
            else None
        )
        self.made: dict[str, None] = {}
        # rules.batches: the last call that failed with an error (its time, tool and error key)
        self._last_failure: tuple[float, str, str] | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the runs and polls too old to be compared with (never looked at again)."""
        state = attrs_of(self)
        state["_runs"] = {k: v for k, v in self._runs.items() if self.pushed - v[-1] <= self._recent}
        state["_polled"] = {k: v for k, v in self._polled.items() if self.pushed - v[-1] <= _POLL_HORIZON}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        set_attrs(self, state)

    # ---- input -----------------------------------------------------------

    def note_revert(self, path: str) -> None:
        if len(self.reverted) < _MEMORY:
            self.reverted.add(path)

    def note_change(self, path: str, real: bool) -> None:
        self.tree_version += 1
        self.changes.append((self.tree_version, path))
        if real:
            self.real_version += 1
            if self.rules.same_error:  # the same error again after a real change is another situation
                self.errors = SlidingCounter(self.rules.same_error_window)
                self.error_calls.clear()

    def add(self, call: ToolCall, meaning: Meaning) -> None:
        self._queue.append((call, meaning, self.tree_version, self.real_version))
        self.resolve(call.ts)

    def resolve(self, now: float) -> None:
        """Take queued calls in order: each once its result is in, or it waited long enough.

        A call still running while nothing came after it (a long build, a slow test) waits up
        to `result_wait_alone_seconds`; once a later call has come, its result is presumably
        lost, and it waits only `result_wait_seconds`.
        """
        queue, wait = self._queue, self._wait
        while queue:
            call = queue[0][0]
            if wait is not None and not call.result_seen:
                r = self.rules  # _deadline(call), inline: the hot path of a replay
                if now < call.ts + (r.result_wait_alone_s if len(queue) == 1 else r.result_wait_s):
                    return
            self._take(*queue.popleft())

    def _deadline(self, call: ToolCall) -> float:
        alone = len(self._queue) == 1
        return call.ts + (self.rules.result_wait_alone_s if alone else self.rules.result_wait_s)

    def waiting(self) -> int:
        return len(self._queue)

    def provisional(self) -> tuple[SlidingCounter, SlidingCounter, SlidingCounter, SlidingCounter]:
        """The repetition, sustained_bash and polling windows as they would be if the calls still
        waiting for their result were taken now, as the contract counts them (copies: nothing changes)."""
        scripts, files, targets, polls = (
            c.clone() for c in (self.rep_scripts, self.rep_files, self.sb_targets, self.polls)
        )
        for _, m, _, _ in self._queue:
            scripts.push(m.script)
            files.push(m.file)
            targets.push(m.target)
            if m.shell_like:
                polls.push(m.poll)
        return scripts, files, targets, polls

    def next_deadline(self) -> float | None:
        """When the first call still waiting for its result is taken without it, if nothing else comes."""
        return self._deadline(self._queue[0][0]) if self._queue and self._wait is not None else None

    # ---- one call into the windows -------------------------------------------

    def _take(self, call: ToolCall, m: Meaning, tree: int, real: int) -> None:
        r = self.rules
        script, file, target, poll = m.script, m.file, m.target, m.poll
        if r.outcomes:
            run_key = target or (file if call.tool == model.BASH else None)
            kind = since = None
            if run_key is not None:
                kind, since = self._rerun(run_key, call, tree, suite=m.file is None)
            elif call.tool == model.READ and file is not None:
                kind, since = self._reread(file, call, tree)
            elif call.tool in model.WRITING_TOOLS and file is not None:
                kind = self._edit(file, call)
            if kind in _NOT_COUNTED:
                script = target = file = None
            before = since if since is not None else tree
            self.sb_runs.append(_new_run(Run, (target, kind, call.agent, before, tree)))
            self.rep_runs.append(_new_run(Run, (script or file, kind, call.agent, before, tree)))
        self.rep_scripts.push(script)
        self.rep_files.push(file)
        self.sb_targets.push(target)
        if m.shell_like:
            # with poll_progress, a call that never ran (refused, or cancelled with a failed sibling) polls nothing
            self.polls.push((None if call.denied else self._poll(call, poll)) if r.poll_progress else poll)
        if r.same_error:
            self._error(call, real, m.request)
        if self.attempts is not None:
            self.attempts.tick()
            if m.intent is not None and call.result_seen and not call.denied:
                self._attempt(call, m)
        self.pushed += 1

    def _attempt(self, call: ToolCall, m: Meaning) -> None:
        """One more try of the check `m.intent`, keyed by what it came back with (spiral/attempts.py)."""
        assert self.attempts is not None and m.intent is not None
        out = call.output_ends or ""
        if m.intent.startswith(EDIT_INTENT) or m.intent == SEARCH_INTENT:
            if m.intent == SEARCH_INTENT:
                if out == " ".join((call.command or "").split()):
                    out = ""  # a terminal that echoed the command back and printed nothing else (OpenHands)
                found = bool(out.strip()) and not call.is_error
                key = None if found else (outcome_key(self._fp.error(call), True, out, None) if out.strip() else EMPTY)
            else:
                key = outcome_key(self._fp.error(call), True, out, None) if call.is_error else None
            self.attempts.add(m.intent, key, call.command or call.path or "", call.ts)
            return
        failed = call.is_error or bool(call.exit_code)
        probing = m.intent.endswith((" -", " -c")) or m.intent_script in self.made
        if m.exit_masked and not probing and (not failed or m.output_picked):
            # `go test ./... | tail -30` exits with tail's 0, `| grep FAIL` with grep's 1 when nothing
            # failed: such a run is judged by its runner's own summary (spiral/runner_verdict.py)
            said = runner_verdict.verdict(out)
            if said is not None and said[0] == runner_verdict.FAILED:
                self.attempts.add(m.intent, outcome_key(said[1], True, out, None), call.command or "", call.ts)
                return
            if said is None and m.output_picked:
                return  # the lines kept say neither (`| grep overlap`): nothing learned either way
            failed = False  # a pass reported, or a run cut only at its ends (`| tail`) that says no failure
        error = self._fp.error(call, m.request) if (failed or m.request) else None
        if failed and error is None:
            error = f"[exit {call.exit_code}]"  # (with a message, the message is the failure whatever the code)
        probe = None
        if not failed and error is None and probing:
            # a probe the agent made: what it prints is its result, the error it caught first
            error = self._fp.error_line_in(out)
            probe = None if error is not None else self._fp.masked(out)
        self.attempts.add(m.intent, outcome_key(error, failed, out, probe), call.command or "", call.ts)

    def _rerun(self, target: str, call: ToolCall, tree: int, suite: bool = False) -> tuple[str, int | None]:
        """A run compared with the last run of the same command (arguments and all) or, for a
        command not run lately, with the last run of the same target."""
        cmd_key, target_key = "cmd:" + (call.command or target), "target:" + target
        same_cmd = self._recent_run(cmd_key)
        same_target = self._recent_run(target_key)
        entry = (call, tree, self.pushed)
        self._remember(self._runs, cmd_key, entry, self._recent)
        self._remember(self._runs, target_key, entry, self._recent)
        if same_cmd is None:
            # for a whole-suite target (`pytest -k a`, `pytest -k b`: not one file) a different failure is new too
            if same_target is not None and _new_outcome(call, same_target[0], self._fp, failures_too=suite):
                return FRESH_READ, same_target[1]  # another chunk, another passing case: new information
            return FIRST, None  # nothing comparable: a run like any other
        before, prev_tree = same_cmd
        if tree == prev_tree:
            return UNCHANGED, prev_tree
        if not call.result_seen or not before.result_seen:
            return UNKNOWN, prev_tree
        if call.is_error and before.is_error and self._fp.same(call, before):
            return SAME_FAILURE, prev_tree
        return PROGRESS, prev_tree

    def _recent_run(self, key: str) -> tuple[ToolCall, int] | None:
        prev = self._runs.get(key)
        if prev is None or self.pushed - prev[2] > self._recent:
            return None
        return prev[0], prev[1]

    def _edit(self, path: str, call: ToolCall) -> str | None:
        """An edit that went through and left new content is progress; a failed one, or an edit of a
        file seen reverted to an earlier content, is the edit-in-circles kind (counted)."""
        if not call.result_seen or call.is_error:
            return UNKNOWN if not call.result_seen else SAME_FAILURE
        return REVERTED if path in self.reverted else NEW_CONTENT

    def _reread(self, key: str, call: ToolCall, tree: int) -> tuple[str, int | None]:
        prev = self._recent_run("read:" + key)
        self._remember(self._runs, "read:" + key, (call, tree, self.pushed), self._recent)
        if prev is None:
            return FIRST, None
        before, prev_tree = prev
        if not call.result_seen or not before.result_seen:
            return UNKNOWN, None
        # a file's content is compared as it came back: its line numbers are not noise
        same = call.is_error == before.is_error and call.output_ends == before.output_ends
        return (SAME_READ if same else FRESH_READ), prev_tree

    def _poll(self, call: ToolCall, poll: str | None) -> str | None:
        """The poll kind when this call counts as a stale poll, else None."""
        if poll == "sleep" and not (call.output_ends or "").strip():
            return None if self._moved() else poll  # a bare sleep: as stale as the check before it
        key = (poll or "check") + ":" + (call.command or "")
        entry = self._polled.get(key)
        before = entry[0] if entry is not None and self.pushed - entry[1] <= _POLL_HORIZON else None
        self._remember(self._polled, key, (call, self.pushed), _POLL_HORIZON)
        if poll is None:  # a command checked between sleeps: did it return something new?
            self._check = (facts_of(call), facts_of(before) if before is not None else None)
            return None
        if poll in ("native", "task-output"):
            task = self._task_of(poll, call.command or "")
            seen = self._polled.get(task)
            first = seen is None or self.pushed - seen[1] > _POLL_HORIZON
            self._remember(self._polled, task, (call, self.pushed), _POLL_HORIZON)
            if first:
                return None  # a first read of a background task or subagent: collecting its result, not polling
        if poll == "until" or not call.result_seen:
            return poll  # nothing to judge by: counted, as the contract counts it
        out = call.output_ends or ""
        done = self._done is not None and "<status>running</status>" not in out and self._done.search(out) is not None
        # a first look at a running task is a poll too
        stale = not done and (before is None or self._fp.same(call, before))
        self._check_moved, self._check = not stale, None
        return poll if stale else None

    @staticmethod
    def _task_of(poll: str, command: str) -> str:
        """The task a read of background output reads: its id (BashOutput/TaskOutput), or its .output file."""
        if poll == "native":
            return "task:" + command
        m = TASK_OUTPUT.search(command)
        return "task:" + (m.group(0) if m else command)

    def _moved(self) -> bool:
        """Whether the latest check returned something new: compared only when a bare sleep asks (most
        checks are followed by no sleep), on the results as they were when the check was taken."""
        if self._check is not None:
            now, before = self._check
            self._check_moved, self._check = before is None or not self._fp.same(now, before), None
        return self._check_moved

    def _error(self, call: ToolCall, real: int, request: bool) -> None:
        if real < self.real_version:
            # a real file changed after this call (note_change restarted the count): it is not the same situation
            self.errors.push(None)
            self.error_calls.append((None, ""))
            return
        key = None
        if not call.denied and (call.is_error or request):  # a refused or cancelled call never ran
            key = self._fp.error(call, request)  # (None for a call that passed and is no request)
        if key is not None and self.rules.batches:
            last, self._last_failure = self._last_failure, (call.ts, call.tool, key)
            if last is not None and last[1:] == (call.tool, key) and call.ts - last[0] <= self.rules.batch_s:
                key = None  # a sibling issued with the last one: the agent saw neither result first
        self.errors.push(key)
        self.error_calls.append((key, call.command or call.path or call.tool))

    def _remember(self, memo: dict[str, Any], key: str, value: tuple[Any, ...], horizon: int) -> None:
        """Remember `value` (its last item the call number); forget what is too old to be compared with."""
        memo[key] = value
        if len(memo) > _PRUNE_AT:
            old = [k for k, v in memo.items() if self.pushed - v[-1] > horizon]
            for k in old:
                del memo[k]
            if len(memo) > _MEMORY:
                memo.clear()
