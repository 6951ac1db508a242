"""The page says *why* a rerun counted: a real fake-agent run, a real watcher, a real HTTP receiver.

The agent edits a tracked module for real (the clone's snapshots see it), logs the edit, and reruns
one tracked test that fails the same way each time (line numbers and durations differ). The page
must name the reproduced failure and the files edited in between.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import TINY, Receiver, cli, launch, spiral_pages, status_json, ticket, wait, write_config


def _same_failure_after_edits(n: int = 60) -> str:
    steps = []
    for k in range(n):
        out = (
            f"tests/test_store.py:{40 + k}: in test_flush\nE   AssertionError: assert 2 == 3\n"
            f"FAILED tests/test_store.py::test_flush\n1 failed, 11 passed in 0.{k % 10}{k % 7}s"
        )
        steps += [
            f"write src/store.py value = {k}",
            "say " + json.dumps({"tool": "Edit", "path": "src/store.py"}),
            "say "
            + json.dumps({"tool": "Bash", "command": "pytest tests/test_store.py -x", "exit_code": 1, "output": out}),
            "sleep 0.05",
        ]
    return "\n".join(steps)


def test_page_explains_the_reproduced_failure(tmp_path: Path, repo: Path, home: Path, receiver: Receiver) -> None:
    write_config(home, notify={"urls": [receiver.url]})
    run_id = launch(ticket(tmp_path, repo, _same_failure_after_edits(), overrides=TINY))
    wait(lambda: bool(status_json()) and spiral_pages(receiver, run_id) == 1, timeout=30, what="the page")
    body = "\n".join(receiver.messages())
    assert "tests/test_store.py" in body and "it failed identically" in body, body
    assert "of them after edits to src/store.py" in body, body
    cli("kill", run_id)
