"""A plain (non-editable) wheel install works from any folder: `demo` and `eval --bench`.

The wheel is built like `pip install .` builds it (isolated, from the
build-system requirements; the project venv's setuptools is too old to build
without isolation) from a copy of the working tree, so no `build/` lands here.
It goes into a fresh venv that sees the project venv's dependencies through a
`.pth` line, which adds the folder to sys.path without running the editable
install's own `.pth` hook: only the wheel can supply `orchestrator`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO_CASES = ("healthy-001-steady-feature", "spiral-001-fixture-shim")


def _run(argv: list[str | Path], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    p = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{argv}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _copy_tree(dest: Path) -> None:
    """The working tree as git sees it (tracked and new files, nothing ignored), symlinks kept."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    for rel in filter(None, out.decode().split("\0")):
        src = ROOT / rel
        if not os.path.lexists(src):  # deleted in the working tree, not yet in the index
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel, follow_symlinks=False)


def _packages() -> set[str]:
    return {
        str(init.parent.relative_to(ROOT)).replace(os.sep, ".")
        for top in ("orchestrator", "spiral")
        for init in (ROOT / top).rglob("__init__.py")
    }


def _check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {p.replace(".", "/") + "/__init__.py" for p in _packages()} <= names
        assert z.read("orchestrator/data/buckets.yaml") == (ROOT / "buckets.yaml").read_bytes()
        give_up = ROOT / "orchestrator" / "data" / "give_up.yaml"  # what runs/endings.py reads
        assert z.read("orchestrator/data/give_up.yaml") == give_up.read_bytes()
        for case in DEMO_CASES:
            for f in (ROOT / "corpus" / case).iterdir():
                assert z.read(f"orchestrator/data/demo-cases/{case}/{f.name}") == f.read_bytes()
        # the symlinks' contents went in, not links (mode 0o120000 in the upper 16 bits)
        assert not [i.filename for i in z.infolist() if (i.external_attr >> 16) & 0o170000 == 0o120000]


def test_shipped_defaults_are_links_to_the_root_files() -> None:
    """So editing ./buckets.yaml or rebuilding ./corpus changes what the package reads (and ships)."""
    data = ROOT / "orchestrator" / "data"
    links = {data / "buckets.yaml": ROOT / "buckets.yaml"}
    links |= {data / "demo-cases" / c: ROOT / "corpus" / c for c in DEMO_CASES}
    for link, target in links.items():
        assert link.is_symlink() and link.resolve() == target.resolve(), link


def test_wheel_install_runs_demo_and_bench_outside_the_checkout(tmp_path: Path) -> None:
    src, dist, venv, work = tmp_path / "src", tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _copy_tree(src)
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src], tmp_path, 1800
    )  # mypyc compiles spiral/: minutes on a loaded machine
    (wheel,) = dist.glob("spiral_orchestrator-*.whl")
    _check_wheel(wheel)

    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, 60)
    py = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", wheel], tmp_path, 600
    )
    site = Path(
        _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work, 30).strip()
    ).resolve()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "project_deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "ORCHESTRATOR_BUCKETS", "ORCHESTRATOR_REAL_TRACES"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    probe = "import json, sys, orchestrator, spiral; print(json.dumps([orchestrator.__file__, spiral.__file__, sys.path, [type(f).__name__ for f in sys.meta_path]]))"
    orch_file, spiral_file, path, finders = json.loads(_run([py, "-c", probe], work, 30, env))
    assert Path(orch_file).is_relative_to(site) and Path(spiral_file).is_relative_to(site)
    project_venv = Path(sys.prefix).resolve()
    leaks = [
        e
        for e in path
        if e and Path(e).resolve().is_relative_to(ROOT) and not Path(e).resolve().is_relative_to(project_venv)
    ]
    assert not leaks, leaks
    assert not [f for f in finders if "Editable" in f]

    exe = venv / "bin" / "orchestrator"
    out = _run([exe, "demo", "--speed", "600"], work, 600, env)
    spiral_part = out.split("summary", 1)[1].split("demo-fixture-shim", 1)[1]
    assert "would have paged at" in spiral_part and "tmp_debug_mc" in spiral_part
    home = Path(env["ORCHESTRATOR_HOME"])
    (ticket,) = home.glob("demo/**/demo-fixture-shim.md")  # (the demo keeps a state folder of its own)
    assert f"demo_case: {site / 'orchestrator' / 'data' / 'demo-cases'}" in ticket.read_text()

    p = subprocess.run(
        [str(exe), "eval", "--bench", "--per-family", "4"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "real-trace table is skipped" in p.stderr
    assert "Side by side" in p.stdout
