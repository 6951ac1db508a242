"""Print a session's tool calls, numbered, as the project's adapters count them: for labelling by reading.

    .venv/bin/python tools/show_session.py FORMAT FILE [--from N] [--to M] [--width W]

FORMAT is claude-transcript, claude-stream-json, codex-json or generic (realsessions/labels.yaml's
`format:`). One line per call: its number (1-based), minute since the first record, agent (a
subagent's id, shortened), tool, command or path, `exit N` / `ERR` / `DENIED`, and the start of
its output. The last line gives `tool_calls` and `minutes` as labels.yaml records them. It runs no
detector: a label is made by reading, before anyone looks at what the detector says.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.corpus.benchmark.realsessions import FORMATS, timeline  # noqa: E402
from spiral.adapters import make_adapter  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("format", choices=FORMATS)
    ap.add_argument("file", type=Path)
    ap.add_argument("--from", dest="first", type=int, default=1)
    ap.add_argument("--to", dest="last", type=int, default=10**9)
    ap.add_argument("--width", type=int, default=220)
    args = ap.parse_args(argv)
    if not args.file.is_file():
        print(f"show_session: no file {args.file}", file=sys.stderr)
        return 2
    timed, workdir = timeline(args.file, args.format)
    adapter = make_adapter(args.format, workdir)
    calls = [c for ts, obj in timed for c in adapter.feed(ts, obj)]
    start, end = (timed[0][0], timed[-1][0]) if timed else (0.0, 0.0)
    for n, c in enumerate(calls, 1):
        if not args.first <= n <= args.last:
            continue
        what = " ".join((c.command or c.path or "").split())
        status = (
            "DENIED" if c.denied else f"exit {c.exit_code}" if c.exit_code is not None else "ERR" if c.is_error else ""
        )
        who = f"[{c.agent[:8]}] " if c.agent else ""
        line = f"{n:4} {(c.ts - start) / 60:7.1f}m {who}{c.tool:10} {what[:110]:110} {status:8} | {c.output or ''}"
        print(line[: args.width])
    print(f"tool_calls: {len(calls)}  minutes: {round((end - start) / 60, 1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
