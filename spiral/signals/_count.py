from __future__ import annotations


def short(path: str, limit: int = 60) -> str:
    return path if len(path) <= limit else "..." + path[-(limit - 3) :]
