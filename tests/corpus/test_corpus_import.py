"""`corpus import`: a real agent log becomes a corpus case that replays."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli


def test_import_turns_a_generic_log_into_a_replayable_case(tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    lines = [{"tool": "Write", "path": "tmp_a.py"}, {"tool": "Write", "path": "tmp_b.py"}]
    lines += [{"tool": "Bash", "command": "python tmp_a.py"}] * 40
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    out = tmp_path / "case-one"
    p = cli(
        "corpus",
        "import",
        str(log),
        "--format",
        "generic",
        "--bucket",
        "small",
        "--out",
        str(out),
        "--spacing",
        "60",
        "--spiral",
    )
    assert p.returncode == 0, p.stderr
    assert "42 tool calls" in p.stdout and "1 skipped" in p.stdout
    r = cli("replay", str(out), "--json")
    res = json.loads(r.stdout)
    assert res["spiral"] is True and res["pass"] is True, res
    assert "repetition" in res["signals"] and "sustained_bash" in res["signals"]
    again = cli("corpus", "import", str(log), "--format", "generic", "--bucket", "small", "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = cli("corpus", "import", str(log), "--format", "nope", "--bucket", "small", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "--format must be one of" in bad.stderr
