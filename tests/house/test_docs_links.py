"""Every relative link in README.md and docs/**/*.md points at something in the repository.

Markdown links (`[text](path)`, `![alt](path)`, `[label]: path`) and HTML images (`<img src=...>`)
are checked; web links (http, https, mailto) are not, and a `#fragment` is dropped before the path
is looked up (a bare `#anchor` is skipped). Links inside code (fenced blocks, `inline spans`) are
not links and are left alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
INLINE = re.compile(r"!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)[^)]*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
IMG = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto: ...


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) for every link outside code."""
    found: list[tuple[int, str]] = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        prose = INLINE_CODE.sub("", line)
        for pattern in (INLINE, REFERENCE, IMG):
            found += [(number, m.group(1).strip("<>")) for m in pattern.finditer(prose)]
    return found


def broken(page: Path) -> list[str]:
    out = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if EXTERNAL.match(target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (page.parent / path).resolve()
        inside = resolved == ROOT or ROOT in resolved.parents
        if not inside or not resolved.exists():
            out.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_point_at_files(page: Path) -> None:
    bad = broken(page)
    assert not bad, "links to nothing in the repository:\n" + "\n".join(bad)


def test_no_page_points_at_the_shared_spec() -> None:
    """A clone of this repository has no ../shared/spec: its contracts are in docs/reference/."""
    bad = [str(p.relative_to(ROOT)) for p in PAGES if "shared/spec" in p.read_text(encoding="utf-8")]
    assert not bad, f"these point at ../shared/spec, which a clone does not have (use docs/reference/): {bad}"


def test_the_checker_sees_links() -> None:
    text = "\n".join(
        [
            "[a](docs/x.md#part) and ![img](docs/img/y.png 'title')",
            '<img src="docs/img/z.png" width="300">',
            "[ref]: docs/w.md",
            "`[not](a-link.md)` [web](https://example.org) [here](#anchor)",
            "```",
            "[in](code.md)",
            "```",
        ]
    )
    assert [t for _, t in links(text)] == [
        "docs/x.md#part",
        "docs/img/y.png",
        "docs/img/z.png",
        "docs/w.md",
        "https://example.org",
        "#anchor",
    ]
