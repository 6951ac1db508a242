"""What the detector makes of real recorded logs (../shared/real-traces)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.corpus.benchmark.realsessions import replay

_FORMAT_BY_FOLDER = {
    "claude-stream-json": "claude-stream-json",
    "claude-transcript": "claude-transcript",
    "codex-exec-json": "codex-json",
    "codex-rollout": "codex-json",
}


def scan(root: Path, raw_buckets: dict[str, Any], bucket: str = "medium") -> list[dict[str, Any]]:
    """Each real log replayed events-only as a `bucket` run: which signals fired and when."""
    out = []
    for folder, fmt in _FORMAT_BY_FOLDER.items():
        for path in sorted((root / folder).glob("*")):
            if not path.is_file() or not path.name.endswith((".jsonl", ".ndjson", ".jsonl.gz")):
                continue
            r = replay(path, fmt, raw_buckets, (bucket,))
            if not r["events"]:
                continue
            out.append(
                {
                    "file": f"{folder}/{path.name}",
                    "format": fmt,
                    "tool_calls": r["tool_calls"],
                    "minutes": r["minutes"],
                    "first_fired_min": r[bucket]["first_fired_min"],
                    "paged_at_min": r[bucket]["paged_at_min"],
                }
            )
    return out
