"""The spiral detector: pure functions of a run's tool calls, snapshots and settings.

The package may be compiled (setup.py: mypyc). `MODE` says which code runs: "compiled", or
"pure Python" and why (spiral_compiled.py decides, before any submodule is imported).
"""

import spiral_compiled as _build

MODE = _build.choose(__name__, __path__[0])
