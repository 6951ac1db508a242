"""A stand-in agent for tests: its prompt (the last argument) is a script.

One step a line:
  say {"tool": "Bash", "command": "..."}   print one generic-format log line
  write PATH [TEXT]                        create or overwrite a file in the cwd
  sleep SECONDS
  spawn PIDFILE                            start a child that starts a grandchild; both sleep long
  abandon PIDFILE [DIR]                    start a daemon: a helper starts a long sleeper in a session of its
                                           own (no output shared, working in DIR, default the cwd) and exits,
                                           so the sleeper is nobody's child
  stderr TEXT                              write a line to stderr
  exit CODE
  on-guidance LABEL                        from now on, read the guidance inbox ($ORCHESTRATOR_GUIDANCE_DIR)
                                           after each `say` (a turn boundary); once a message is claimed, go
                                           on from the line `label LABEL` (`-`: read it and carry on anyway)
  label NAME                               a place to go on from
  await-guidance SECONDS                   between turns: wait (at most SECONDS) until a message is queued in
                                           the inbox, without claiming it (a test's nudge, however slow)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def _queued(gdir: str) -> bool:
    try:
        return any(n.endswith(".json") and not n.startswith(".") for n in os.listdir(Path(gdir) / "inbox"))
    except OSError:
        return False


def _claim(gdir: str) -> bool:
    """The inbox protocol (README, "Guidance"): claim each queued message by rename; True if one was got."""
    got = False
    inbox, claimed = Path(gdir) / "inbox", Path(gdir) / "claimed"
    try:
        names = sorted(n for n in os.listdir(inbox) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return False
    for name in names:
        try:
            os.rename(inbox / name, claimed / name)
        except FileNotFoundError:
            continue
        print(f"fake agent: got guidance {name}", file=sys.stderr, flush=True)
        got = True
    return got


def main() -> int:
    script = sys.argv[-1] if len(sys.argv) > 1 else ""
    lines = [raw.strip() for raw in script.splitlines()]
    watch: str | None = None  # the label to go on from once guidance arrives
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("#"):
            continue
        verb, _, rest = line.partition(" ")
        if verb == "on-guidance":
            watch = rest
        elif verb == "label":
            pass
        elif verb == "say":
            print(rest, flush=True)
            gdir = os.environ.get("ORCHESTRATOR_GUIDANCE_DIR")
            if watch is not None and gdir and _claim(gdir) and watch != "-":
                i = lines.index(f"label {watch}") + 1
                watch = None
        elif verb == "write":
            path, _, text = rest.partition(" ")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text((text or "x") + "\n")
        elif verb == "sleep":
            time.sleep(float(rest))
        elif verb == "await-guidance":
            gdir = os.environ.get("ORCHESTRATOR_GUIDANCE_DIR")
            deadline = time.monotonic() + float(rest)
            while gdir and not _queued(gdir) and time.monotonic() < deadline:
                time.sleep(0.05)
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
        elif verb == "abandon":  # a daemon: a helper starts it in a session of its own and exits
            pidfile, _, where = rest.partition(" ")
            starter = (
                "import subprocess, sys\n"
                "d = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True,"
                f" cwd={where or None!r},"
                " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                f"open({pidfile!r}, 'a').write(str(d.pid) + '\\n')\n"
            )
            subprocess.run([sys.executable, "-c", starter], check=True)
        elif verb == "stderr":
            print(rest, file=sys.stderr, flush=True)
        elif verb == "exit":
            return int(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
