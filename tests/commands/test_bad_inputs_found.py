"""Bad inputs an audit found (2026-12-03): each gets a clear answer, never a traceback, a hang, or a
detector that stops reading."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers import ROOT, cli, copy_case, fake_run, live_generic_run, one_line_error, ticket


def test_a_line_dated_after_the_recording_is_skipped_not_the_end_of_the_walk(tmp_path: Path) -> None:
    case = copy_case("spiral-same-error-varied-commands-generic", tmp_path)
    lines = (case / "events.jsonl").read_text().splitlines(keepends=True)
    assert '"command":"git diff --stat"' in lines[3]
    lines[3] = lines[3].replace(lines[3][7:31], "2099-01-01T00:00:00.000Z", 1)
    (case / "events.jsonl").write_text("".join(lines))
    p = cli("replay", str(case), "--json")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["spiral"] is True and "same_error" in result["signals"], result
    assert result["skipped_lines"] == 1


def test_a_huge_quoted_command_is_analysed_in_linear_time() -> None:
    # shlex took a minute over a 2 MB quoted `python -c`; the watcher's tick runs this analysis
    code = (
        "from spiral.shellcmd import analyse\n"
        "def cmd(n): return 'python -c \"' + 'x ' * n + '\" && python tmp_debug.py'\n"
        "small, huge = analyse(cmd(10)), analyse(cmd(1_000_000))\n"
        "print(small.script, huge == small)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "tmp_debug.py True", p.stderr


def test_redaction_of_a_long_hostile_line_is_not_quadratic() -> None:
    # a keyword, then a lazy scan to the end of the command: 160 KB of `openssl ` took 35 s
    code = (
        "from orchestrator.infra.redaction import redact\n"
        "for word in ('openssl ', 'redis-cli ', 'docker login ', 'mysql '):\n"
        "    assert redact(word * 20000) == word * 20000\n"
        "print('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_a_ledger_cut_short_is_set_aside_and_rebuilt(home: Path) -> None:
    fake_run("done-20260101-000000")
    assert cli("history").returncode == 0
    ledger = home / "ledger.duckdb"
    data = ledger.read_bytes()
    ledger.write_bytes(data[: len(data) // 3])
    p = cli("ledger", "rebuild")
    assert p.returncode == 0 and "could not be read" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert [x.name for x in home.glob("ledger.duckdb.unreadable-*")]
    q = cli("history", "--json")
    assert q.returncode == 0 and [r["run_id"] for r in json.loads(q.stdout)["runs"]] == ["done-20260101-000000"]


def test_logs_follow_ends_when_the_supervisor_is_gone(tmp_path: Path, home: Path) -> None:
    gone = subprocess.Popen(["sleep", "600"])  # its supervisor, which then dies (a reboot, a kill -9)
    t0 = time.time() - 120
    run = live_generic_run(home, "orphan-20260101-000000", gone.pid, t0, [(t0 + 1, {"tool": "Bash", "command": "ls"})])
    gone.kill()
    gone.wait()
    p = cli("logs", run.name, "-f", timeout=60)
    assert p.returncode == 0 and "ls" in p.stdout, p.stderr
    record = json.loads((run / "state.json").read_text())
    assert record["state"] == "lost" and "supervising process vanished" in record["reason"]


def test_nudge_of_a_run_whose_supervisor_is_gone_is_refused(home: Path) -> None:
    gone = subprocess.Popen(["sleep", "600"])
    t0 = time.time() - 120
    run = live_generic_run(home, "mute-20260101-000000", gone.pid, t0, [(t0 + 1, {"tool": "Bash", "command": "ls"})])
    record = json.loads((run / "state.json").read_text())
    record["guidance_via"] = "inbox file"  # it takes guidance, as the demo and generic agents do
    (run / "state.json").write_text(json.dumps(record))
    gone.kill()
    gone.wait()
    one_line_error(cli("nudge", run.name, "try another way"), "has ended (lost)")
    assert not list((run / "guidance").glob("inbox/*"))


def test_logs_of_a_record_without_a_format_is_one_line(home: Path) -> None:
    run = fake_run("odd-20260101-000000")
    record = json.loads((run / "state.json").read_text())
    record["format"] = None
    (run / "state.json").write_text(json.dumps(record))
    one_line_error(cli("logs", run.name), "names no known log format")


def test_corpus_import_takes_garbled_times_and_refuses_a_bad_spacing(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(
        "".join(
            json.dumps({"type": "user", "timestamp": ts, "message": {"content": "hi"}}) + "\n"
            for ts in (1e300, "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", -1e18)
        )
    )
    p = cli(
        "corpus", "import", str(src), "--format", "claude-transcript", "--bucket", "small", "--out", str(tmp_path / "c")
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert cli("replay", str(tmp_path / "c")).returncode == 0
    for bad in ("nan", "-5", "1e300"):
        q = cli(
            "corpus",
            "import",
            str(src),
            "--format",
            "generic",
            "--bucket",
            "small",
            "--out",
            str(tmp_path / bad),
            "--spacing",
            bad,
        )
        one_line_error(q, "--spacing must be a number of seconds from 0 to 86400")


def test_a_terminal_that_cannot_show_a_character_gets_a_table_not_a_traceback(home: Path) -> None:
    run = fake_run("wide-20260101-000000", state_name="failed")
    record = json.loads((run / "state.json").read_text())
    record["reason"] = "agent exited 1 … café ✗"
    (run / "state.json").write_text(json.dumps(record))
    for args in (("status",), ("status", "--wide"), ("history",)):
        p = cli(*args, env={"PYTHONIOENCODING": "ascii"})
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert "wide-2026" in p.stdout or "wide-20260101-000000"[:9] in p.stdout


def test_a_state_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    spot = tmp_path / "not-a-folder"
    spot.write_text("x")
    for args in (("status",), ("status", "--json"), ("watch", "--once")):
        one_line_error(cli(*args, env={"ORCHESTRATOR_HOME": str(spot)}), "cannot use it as the state folder")


def test_a_ticket_refused_for_its_overrides_leaves_no_run_folder(tmp_path: Path, repo: Path, home: Path) -> None:
    bad = ticket(tmp_path, repo, "say hi", overrides={"signals": {"polling": {"polls": "many"}}})
    one_line_error(cli("launch", str(bad)), "signals.polling.polls must be a non-negative integer")
    assert not list((home / "runs").glob("t1-*"))


def test_one_run_folder_the_system_refuses_does_not_stop_history(home: Path) -> None:
    fake_run("good-20260101-000000")
    bad = fake_run("bad-20260101-000000")
    (bad / "events.jsonl").unlink()
    (bad / "events.jsonl").mkdir()
    p = cli("history", "--json")
    assert p.returncode == 0, p.stderr
    assert "good-20260101-000000" in [r["run_id"] for r in json.loads(p.stdout)["runs"]]
    assert cli("ledger", "rebuild").returncode == 0


def test_eval_reports_a_broken_case_and_replays_the_others(tmp_path: Path) -> None:
    good = copy_case("spiral-same-error-varied-commands-generic", tmp_path)
    bad_yaml = copy_case("neg-edit-test-cycles", tmp_path)
    (bad_yaml / "case.yaml").write_text("expect: [\n")
    lost_log = copy_case("neg-frequent-git-status", tmp_path)
    (lost_log / "events.jsonl").unlink()  # would replay as a quiet run and pass, saying nothing
    p = cli("eval", str(tmp_path), "--json")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    summary = json.loads(p.stdout)
    assert [c["id"] for c in summary["cases"]] == [good.name] and summary["cases"][0]["pass"]
    assert (summary["passed"], summary["failed"], summary["tp"], summary["tn"]) == (1, 2, 1, 0)
    why = {Path(b["case"]).name: b["error"] for b in summary["broken"]}
    assert set(why) == {bad_yaml.name, lost_log.name}
    assert "case.yaml:2: not valid YAML" in why[bad_yaml.name] and "no events.jsonl" in why[lost_log.name]
    table = cli("eval", str(tmp_path))
    assert table.returncode == 1 and f"BROKEN {lost_log}" in table.stdout and "2 could not be replayed" in table.stdout
    alone = cli("replay", str(lost_log))
    one_line_error(alone, "no events.jsonl")


def test_kill_of_a_run_whose_supervisor_is_gone_stops_its_agent_and_says_so(home: Path) -> None:
    from orchestrator.infra.proc import ProcRef
    from orchestrator.record import state_file

    gone = subprocess.Popen(["sleep", "600"])
    agent = subprocess.Popen(["sleep", "600"], start_new_session=True)  # orphaned: nobody supervises it now
    try:
        t0 = time.time() - 120
        run = live_generic_run(
            home, "orphan-20260101-000001", gone.pid, t0, [(t0 + 1, {"tool": "Bash", "command": "ls"})]
        )
        state_file.update(run, lambda r: setattr(r, "agent_pid", ProcRef.of(agent.pid)) or True)
        gone.kill()
        gone.wait()
        p = cli("kill", run.name, timeout=60)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert agent.wait(timeout=10) is not None
        record = json.loads((run / "state.json").read_text())
        assert record["state"] == "killed", record
        assert record["reason"] == "stopped by a person; its supervisor had already vanished", record["reason"]
    finally:
        agent.kill()


def test_a_reason_or_value_that_looks_like_rich_markup_is_shown_as_it_is(home: Path) -> None:
    run = fake_run("odd-20260101-000002", state_name="failed")
    record = json.loads((run / "state.json").read_text())
    record["reason"] = "verify failed: [/bold] [red]x"  # a check's output, a git error: data, not markup
    (run / "state.json").write_text(json.dumps(record))
    for args in (("history",), ("history", "--by", "ending"), ("status",)):
        p = cli(*args)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)
        assert args[-1] == "ending" or "[/bold] [red]x" in p.stdout, (args, p.stdout)
    case = copy_case("spiral-same-error-varied-commands-generic", home)
    events = case / "events.jsonl"
    events.write_text(events.read_text().replace("returned error: 401", "returned error: [/] [bold]401"))
    r = cli("replay", str(case))
    assert r.returncode == 0 and "error: [/] [bold]401" in r.stdout, r.stdout + r.stderr  # its evidence line
    q = cli("history", "--sql", "select '[/]' as odd, '[bold]x' as markup")
    assert q.returncode == 0 and "[/]" in q.stdout and "[bold]x" in q.stdout, q.stdout + q.stderr


def test_kill_of_a_run_whose_processes_are_all_gone_records_it_lost(home: Path) -> None:
    gone = subprocess.Popen(["sleep", "600"])
    t0 = time.time() - 120
    run = live_generic_run(home, "gone-20260101-000002", gone.pid, t0, [(t0 + 1, {"tool": "Bash", "command": "ls"})])
    gone.kill()
    gone.wait()
    one_line_error(cli("kill", run.name, timeout=60), "already ended: lost (the supervising process vanished)")
    assert json.loads((run / "state.json").read_text())["state"] == "lost"


def test_a_stop_request_left_pending_is_carried_out_by_the_next_pass(home: Path) -> None:
    from orchestrator.infra.proc import ProcRef
    from orchestrator.record import state_file
    from orchestrator.record.model import StopRequest
    from spiral.timestamps import format_ts

    supervisor = subprocess.Popen(["sleep", "600"])
    agent = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        t0 = time.time() - 300
        run = live_generic_run(
            home, "stop-20260101-000003", supervisor.pid, t0, [(t0 + 1, {"tool": "Bash", "command": "ls"})]
        )

        def asked(r: Any) -> bool:  # as a `kill` cut short by Ctrl-C leaves it, two minutes ago
            r.agent_pid = ProcRef.of(agent.pid)
            r.stop_requested = StopRequest(
                end_as="killed", reason="stopped by a person", at=format_ts(time.time() - 120)
            )
            return True

        state_file.update(run, asked)
        p = cli("status", "--json", timeout=60)
        assert p.returncode == 0, p.stderr
        assert agent.wait(timeout=20) is not None
        record = json.loads((run / "state.json").read_text())
        assert (record["state"], record["reason"]) == ("killed", "stopped by a person"), record
    finally:
        agent.kill()
        supervisor.kill()


def test_a_config_caught_mid_save_keeps_the_watchers_last_good_one(home: Path, capsys: Any) -> None:
    from orchestrator.config import load
    from orchestrator.runs.watch import _reloaded

    path = home / "config.yaml"
    path.write_text("max_parallel: 1\n")
    cfg = load(path)
    path.write_text("")  # an editor truncates, then writes: a tick may fall in between
    assert _reloaded(cfg, None)[0].max_parallel == 1
    path.unlink()
    assert _reloaded(cfg, None)[0].max_parallel == 1
    assert capsys.readouterr().err.count("missing or empty") == 2
    path.write_text("max_parallel: 3\n")
    assert _reloaded(cfg, None)[0].max_parallel == 3
