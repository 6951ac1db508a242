"""How the user runs this tool, for the commands a page, a notice or a hint suggests.

In a source checkout (`dev.sh` beside the package) it is `./dev.sh`; installed with pip it is the
`orchestrator` console script. A page that tells a pip user to run `./dev.sh logs ...` sends them
looking for a file they do not have.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def cli_name(package_dir: Path = _PACKAGE) -> str:
    """`./dev.sh` when the package lives in a checkout with dev.sh at its root, else `orchestrator`."""
    return "./dev.sh" if (package_dir.parent / "dev.sh").is_file() else "orchestrator"


CLI = cli_name()
