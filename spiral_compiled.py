"""Whether the compiled build of `spiral/` (setup.py: mypyc) may be used; decided before any of it is imported.

Compiled modules are used only when they were built from the sources now beside them. setup.py
writes a checksum of those sources into `spiral/_compiled_from.txt` when it compiles them; this
module compares it with the sources at import. After an edit or a checkout since the last build
(or with SPIRAL_PURE=1 in the environment) every `spiral` module is loaded from its source
instead. That is all or nothing: compiled modules call each other directly, so a mix would run the
old code of the compiled ones. `./dev.sh build` recompiles. This is packaging, kept out of the
detector package so that `spiral/` itself stays free of I/O.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import zlib
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

STAMP = "_compiled_from.txt"
NOT_COMPILED = "pure Python (not compiled)"
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def sources(package_dir: str) -> list[str]:
    """The package's compiled sources, relative and sorted (its own __init__.py stays Python)."""
    out = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, package_dir)
        for name in files:
            if name.endswith(".py") and not (rel == "." and name == "__init__.py"):
                out.append(os.path.normpath(os.path.join(rel, name)))
    return sorted(out)


def checksum(package_dir: str) -> str:
    """One number for the names and bytes of every compiled source."""
    crc = 0
    for rel in sources(package_dir):
        crc = zlib.crc32(rel.encode(), crc)
        with open(os.path.join(package_dir, rel), "rb") as fh:
            crc = zlib.crc32(fh.read(), crc)
    return f"{crc:08x}"


def _has_compiled(package_dir: str) -> bool:
    return any(name.endswith(_SUFFIXES) for name in os.listdir(package_dir))


def mode(package_dir: str) -> str:
    """'compiled', or 'pure Python' and why."""
    if not _has_compiled(package_dir):
        return NOT_COMPILED
    if os.environ.get("SPIRAL_PURE"):
        return "pure Python (SPIRAL_PURE is set)"
    try:
        with open(os.path.join(package_dir, STAMP), encoding="ascii") as fh:
            built_from = fh.read().strip()
    except OSError:
        return "pure Python (no build stamp)"
    if built_from != checksum(package_dir):
        return "pure Python (sources changed since the compiled build: ./dev.sh build)"
    return "compiled"


class SourcesOnly:
    """A finder that loads the package's modules from their .py files, ahead of any extension module."""

    def __init__(self, package: str) -> None:
        self.prefix = package + "."
        self.details = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not name.startswith(self.prefix) or not path:
            return None
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, self.details).find_spec(name, target)
            if spec is not None:
                return spec
        return None


def choose(package: str, package_dir: str) -> str:
    """Decide for `package` (before its submodules are imported); returns the mode."""
    chosen = mode(package_dir)
    if chosen not in ("compiled", NOT_COMPILED):  # compiled modules are there, but not to be used
        if not any(isinstance(f, SourcesOnly) and f.prefix == package + "." for f in sys.meta_path):
            sys.meta_path.insert(0, SourcesOnly(package))
    return chosen
