"""Ledger benchmark: rebuild from N run folders, incremental refresh, history query.

    .venv/bin/python speedbench/ledger.py [--runs 10000] [--lines 20]

Generates run folders (state.json + a Claude stream-json events.jsonl with
usage) in a temporary state folder under speedbench/out/, then prints timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"


def make_runs(home: Path, n: int, lines: int) -> None:
    from spiral.timestamps import format_ts

    runs = home / "runs"
    runs.mkdir(parents=True)
    start = 1_780_000_000.0
    states = ["succeeded"] * 7 + ["failed", "stalled", "killed"]
    for i in range(n):
        d = runs / f"ticket-{i % 500:03d}-{i:05d}"
        d.mkdir()
        t0 = start + i * 600
        wall = 10 + (i * 7919) % 120
        st = {
            "run_id": d.name,
            "ticket_id": f"ticket-{i % 500:03d}",
            "bucket": ["small", "medium", "big"][i % 3],
            "agent": "claude",
            "format": "claude-stream-json",
            "state": states[i % 10],
            "reason": "agent exited 0",
            "created_at": format_ts(t0),
            "started_at": format_ts(t0),
            "ended_at": format_ts(t0 + wall * 60),
            "exit_code": 0,
            "spiral": {"signals_seen": ["repetition"] if i % 4 == 0 else [], "tool_calls": lines},
        }
        (d / "state.json").write_text(json.dumps(st))
        ev = []
        for k in range(lines):
            data = {
                "type": "assistant",
                "message": {
                    "id": f"m{k}",
                    "model": "claude-sonnet-4-5",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"t{i}-{k}",
                            "name": "Bash",
                            "input": {"command": f"pytest tests/test_{k % 7}.py"},
                        }
                    ],
                    "usage": {
                        "input_tokens": 100,
                        "output_tokens": 20,
                        "cache_read_input_tokens": 5000,
                        "cache_creation_input_tokens": 0,
                    },
                },
            }
            ev.append(json.dumps({"ts": format_ts(t0 + k * 30), "data": data}))
        ev.append(json.dumps({"ts": format_ts(t0 + wall * 60), "data": {"type": "result", "total_cost_usd": 0.12}}))
        (d / "events.jsonl").write_text("\n".join(ev) + "\n")


def timed(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]  # a zero-argument callable
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--lines", type=int, default=20)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="ledger-", dir=OUT))
    os.environ["ORCHESTRATOR_HOME"] = str(home)
    try:
        from orchestrator.ledger import queries
        from orchestrator.ledger import store as ledger

        print(
            f"ledger benchmark: {args.runs:,} run folders x {args.lines + 1} log lines, python {sys.version.split()[0]}"
        )
        print(f"  generated folders in {timed(lambda: make_runs(home, args.runs, args.lines)):.1f} s")
        stats = ledger.refresh(rebuild=True)
        print(
            f"  rebuild:              {stats.seconds:6.2f} s  ({stats.indexed:,} runs indexed, "
            f"{stats.indexed / stats.seconds:,.0f} runs/s)"
        )
        again = [ledger.refresh().seconds for _ in range(3)]
        print(f"  refresh, no change:   {statistics.median(again):6.2f} s  (stat of every folder, nothing re-read)")
        q = [timed(lambda: queries.history(since=None, ticket=None, state=None, limit=200)) for _ in range(5)]
        print(f"  history query (200):  {statistics.median(q) * 1000:6.1f} ms")
        q = [timed(lambda: queries.history(since=None, ticket=None, state=None, limit=args.runs)) for _ in range(3)]
        print(f"  history query (all):  {statistics.median(q) * 1000:6.1f} ms")
        q = [timed(lambda: queries.history(since=None, ticket="ticket-042", state=None, limit=200)) for _ in range(5)]
        print(f"  history --ticket:     {statistics.median(q) * 1000:6.1f} ms")
        cmd = [sys.executable, "-m", "orchestrator", "history", "--json"]
        walls = [timed(lambda: subprocess.run(cmd, capture_output=True, cwd=ROOT, check=True)) for _ in range(3)]
        print(f"  `history --json` CLI: {statistics.median(walls):6.2f} s  (process start + refresh + query + print)")
        sql = [
            sys.executable,
            "-m",
            "orchestrator",
            "history",
            "--sql",
            "SELECT count(*) FROM events WHERE data->>'type' = 'result'",
        ]
        print(
            f"  `history --sql` over raw events.jsonl: "
            f"{timed(lambda: subprocess.run(sql, capture_output=True, cwd=ROOT, check=True)):6.2f} s"
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
