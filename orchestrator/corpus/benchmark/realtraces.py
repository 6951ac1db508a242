"""What the detector makes of real recorded logs (../shared/real-traces)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.corpus.importer import read_records, timestamp_records
from orchestrator.corpus.replay import walk_recording
from spiral.adapters import make_adapter
from spiral.settings import Settings

_FORMAT_BY_FOLDER = {
    "claude-stream-json": "claude-stream-json",
    "claude-transcript": "claude-transcript",
    "codex-exec-json": "codex-json",
    "codex-rollout": "codex-json",
}


def scan(root: Path, raw_buckets: dict[str, Any], bucket: str = "medium") -> list[dict[str, Any]]:
    """Each real log replayed events-only as a `bucket` run: which signals fired and when."""
    settings = Settings.from_mapping(raw_buckets)
    out = []
    for folder, fmt in _FORMAT_BY_FOLDER.items():
        for path in sorted((root / folder).glob("*")):
            if not path.is_file() or not path.name.endswith((".jsonl", ".ndjson", ".jsonl.gz")):
                continue
            records, _, _ = read_records(path)
            timed, workdir = timestamp_records(records, 5.0)
            if not timed:
                continue
            adapter = make_adapter(fmt, workdir)
            timeline = [(ts, adapter.feed(ts, obj)) for ts, obj in timed]
            start, end = timed[0][0], timed[-1][0]
            walk = walk_recording(settings, bucket=bucket, start=start, end=end, timeline=timeline, workdir=workdir)
            out.append(
                {
                    "file": f"{folder}/{path.name}",
                    "format": fmt,
                    "tool_calls": sum(len(calls) for _, calls in timeline),
                    "minutes": round((end - start) / 60, 1),
                    "first_fired_min": dict(sorted(walk.first_fired.items(), key=lambda kv: kv[1])),
                    "paged_at_min": round(walk.notified.elapsed_min, 2) if walk.notified else None,
                }
            )
    return out
