"""Build step for the extension modules; everything else about the package is in pyproject.toml.

The detector package `spiral/` is compiled with mypyc (part of mypy, pinned in pyproject's
build requirements) into C extension modules beside its sources: the same code, typed as
`./dev.sh lint` checks it, run 1.5-2.2x as fast (docs/speed.md). The extensions are optional: without
a C compiler and Python's headers, or with SPIRAL_PURE_BUILD=1, the package installs as pure
Python and behaves the same. `spiral/__init__.py` falls back to the sources at import time when a
compiled module is older than its source (an edit since the last build) or SPIRAL_PURE=1 is set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import spiral_compiled  # noqa: E402  (beside this file: the checksum the import-time check compares)

# the setup.py commands that build code; the metadata steps (egg_info, dist_info) need no compile
BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def compiled_modules() -> list[Any]:
    if os.environ.get("SPIRAL_PURE_BUILD") or not BUILDS.intersection(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # an install without the build requirements (e.g. --no-build-isolation)
        return []
    package = HERE / "spiral"
    # spiral/__init__.py stays Python: at import it decides whether the compiled modules are usable
    sources = [f"spiral/{rel}" for rel in spiral_compiled.sources(str(package))]
    os.chdir(HERE)  # mypycify takes paths relative to the project
    # the sources as they are now: the stamp must name what is compiled, even if they change meanwhile
    StampAfterBuild.checksum = spiral_compiled.checksum(str(package))
    (package / spiral_compiled.STAMP).unlink(missing_ok=True)  # until this build is done, nothing is vouched for
    extensions = mypycify(sources, opt_level="3", debug_level="0")
    for ext in extensions:
        ext.optional = True  # a failed compile leaves the pure-Python package, with a warning
    return extensions


class StampAfterBuild(build_ext):
    """build_ext, then the stamp that lets the compiled modules run, written only once every one of
    them was built. Written before, a compile that failed (optional extensions only warn) or was
    interrupted would leave the last build's modules beside newer sources, vouched for by the stamp."""

    checksum: str | None = None

    def run(self) -> None:
        self._failed: list[str] = []
        super().run()
        if self.checksum is None or self._failed or not self.extensions:
            return
        folders = {HERE / "spiral"} | ({Path(self.build_lib) / "spiral"} if not self.inplace else set())
        for folder in folders:
            if folder.is_dir():
                (folder / spiral_compiled.STAMP).write_text(self.checksum + "\n", encoding="ascii")

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception:
            self._failed.append(ext.name)
            raise


setup(ext_modules=compiled_modules(), cmdclass={"build_ext": StampAfterBuild})
