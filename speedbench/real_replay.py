"""Replay of real agent logs against the orjson floor (issue 37: reported, no goal).

Run:  .venv/bin/python speedbench/real_replay.py [--repeats 5] [--sessions]

Every log under ../shared/real-traces (Claude Code stream-json and transcripts, Codex exec JSON and
rollouts), and with --sessions every session of the real-session set found in its cache
(.cache/real-sessions, realsessions/README.md), is imported once as a case folder the way
`corpus import` makes one (untimed). Then, side by side in this process, each repeat in rotating
order over every case:

  floor:  an orjson.loads loop over the case's events.jsonl, line by line;
  replay: `replay_case`, the path `replay` and the report take, over the same folder.

Printed: the total of each over all cases (median and range of the repeats), their ratio, and the
ratio of the ten largest logs alone. A report, no assertion. The generated logs of goals.py
flatter the replay (their commands repeat a few templates); these are what agents wrote.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "speedbench" / "out"
sys.path.insert(0, str(ROOT))
FORMAT_OF = {"claude-stream-json": "claude-stream-json", "claude-transcript": "claude-transcript"}
FORMAT_OF |= {"codex-exec-json": "codex-json", "codex-rollout": "codex-json"}  # (one adapter reads both)


def traces(sessions: bool) -> list[tuple[Path, str]]:
    """(log, format) of every real log to replay."""
    found: list[tuple[Path, str]] = []
    shared = ROOT.parent / "shared" / "real-traces"
    for folder, fmt in FORMAT_OF.items():
        for path in sorted((shared / folder).glob("*")) if (shared / folder).is_dir() else []:
            if path.is_file() and not path.name.endswith(".md"):
                found.append((path, fmt))
    if sessions:
        from orchestrator.corpus.benchmark import realsessions

        for entry in realsessions.load_labels():
            path = realsessions.resolve(entry)
            if path.is_file() and not any(path == p for p, _ in found):
                found.append((path, entry["format"]))
    return found


def floor(events: Path) -> float:
    import orjson

    loads = orjson.loads
    t0 = time.perf_counter()
    with events.open("rb") as fh:
        for line in fh:
            try:
                loads(line)
            except orjson.JSONDecodeError:
                pass
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sessions", action="store_true", help="also the real-session set's cached sessions")
    args = ap.parse_args()
    from orchestrator.buckets import BucketsFile
    from orchestrator.corpus.importer import import_log
    from orchestrator.corpus.replay import replay_case
    from orchestrator.infra.errors import UserError

    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="real-", dir=OUT))
    try:
        cases: list[Path] = []
        skipped: list[str] = []
        for i, (path, fmt) in enumerate(traces(args.sessions)):
            out = base / f"case-{i:04d}"
            try:
                import_log(path, fmt=fmt, bucket="medium", out=out, case_id=None, spiral=False, spacing=3.0)
            except UserError as exc:  # (a format `corpus import` does not take: the session set's own converters)
                skipped.append(f"{path.name}: {exc}")
                continue
            cases.append(out)
        if skipped:
            print(f"  {len(skipped)} log(s) not importable, skipped; the first: {skipped[0]}")
        sizes = {c: (c / "events.jsonl").stat().st_size for c in cases}
        total_mb = sum(sizes.values()) / 1e6
        print(f"{len(cases)} real logs as case folders, {total_mb:.1f} MB of events.jsonl", flush=True)
        buckets = BucketsFile()
        largest = sorted(cases, key=lambda c: -sizes[c])[:10]
        floors: list[float] = []
        replays: list[float] = []
        big_ratio: list[float] = []
        for r in range(args.repeats):
            f_all = p_all = f_big = p_big = 0.0
            for c in cases if r % 2 == 0 else cases[::-1]:
                gc.collect()
                f = floor(c / "events.jsonl")
                t0 = time.perf_counter()
                replay_case(c, buckets)
                p = time.perf_counter() - t0
                f_all, p_all = f_all + f, p_all + p
                if c in largest:
                    f_big, p_big = f_big + f, p_big + p
            floors.append(f_all)
            replays.append(p_all)
            big_ratio.append(p_big / f_big if f_big else float("nan"))
        ratios = [p / f for p, f in zip(replays, floors, strict=True)]
        print(f"  floor (orjson loop)   {statistics.median(floors):.3f} s  ({min(floors):.3f}-{max(floors):.3f})")
        print(f"  replay_case           {statistics.median(replays):.3f} s  ({min(replays):.3f}-{max(replays):.3f})")
        print(f"  replay / floor, all logs: {statistics.median(ratios):.1f}x ({min(ratios):.1f}-{max(ratios):.1f})")
        print(f"  replay / floor, the 10 largest: {statistics.median(big_ratio):.1f}x")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
