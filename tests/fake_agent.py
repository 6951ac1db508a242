"""A stand-in agent for tests: its prompt (the last argument) is a script.

One step a line:
  say {"tool": "Bash", "command": "..."}   print one generic-format log line
  write PATH [TEXT]                        create or overwrite a file in the cwd
  sleep SECONDS
  spawn PIDFILE                            start a child that starts a grandchild; both sleep long
  stderr TEXT                              write a line to stderr
  exit CODE
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    script = sys.argv[-1] if len(sys.argv) > 1 else ""
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        verb, _, rest = line.partition(" ")
        if verb == "say":
            print(rest, flush=True)
        elif verb == "write":
            path, _, text = rest.partition(" ")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text((text or "x") + "\n")
        elif verb == "sleep":
            time.sleep(float(rest))
        elif verb == "spawn":
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import subprocess, sys, time\n"
                    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                    f"open({rest!r}, 'a').write(str(g.pid) + '\\n')\n"
                    "time.sleep(600)\n",
                ]
            )
            with open(rest, "a") as fh:
                fh.write(f"{os.getpid()}\n{child.pid}\n")
        elif verb == "stderr":
            print(rest, file=sys.stderr, flush=True)
        elif verb == "exit":
            return int(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
