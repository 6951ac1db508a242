"""spiral/porcelain.py: `git status --porcelain=v1` parsing, plain and -z, against real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from spiral.porcelain import parse_porcelain


def test_parse_porcelain_plain() -> None:
    text = (
        "?? tmp_x.py\n M src/a.py\nA  src/new.py\nAM src/b.py\n D gone.py\n"
        'R  old.py -> renamed.py\n?? "with\\ttab.py"\n?? "caf\\303\\251.py"\n'
        'R  "old name.py" -> "new name.py"\n'
    )
    assert parse_porcelain(text) == {
        "tmp_x.py": "??",
        "src/a.py": " M",
        "src/new.py": "A ",
        "src/b.py": "AM",
        "gone.py": " D",
        "renamed.py": "R ",
        "with\ttab.py": "??",
        "café.py": "??",
        "new name.py": "R ",
    }
    assert parse_porcelain("") == {}


def test_parse_porcelain_z_with_rename() -> None:
    text = "R  new.py\0old.py\0?? a -> b.txt\0 M dir/x y.py\0?? café.py\0"
    assert parse_porcelain(text) == {"new.py": "R ", "a -> b.txt": "??", "dir/x y.py": " M", "café.py": "??"}


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
        "PATH": "/usr/bin:/bin",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_parse_porcelain_real_git_plain_and_z_agree(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "old name.py").write_text("a = 1\n" * 20)
    (repo / "keep.py").write_text("k = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    _git(repo, "mv", "old name.py", "new name.py")
    (repo / "keep.py").write_text("k = 2\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "tmp_probe.py").write_text("print()\n")
    (repo / "tab\there.py").write_text("x\n")
    (repo / "café.py").write_text("x\n")
    expected = {"new name.py": "R ", "keep.py": " M", "sub/tmp_probe.py": "??", "tab\there.py": "??", "café.py": "??"}
    assert parse_porcelain(_git(repo, "status", "--porcelain=v1", "-uall")) == expected
    assert parse_porcelain(_git(repo, "status", "--porcelain=v1", "-uall", "-z")) == expected
