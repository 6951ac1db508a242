"""The house rules of docs/architecture.md, checked on the source tree itself."""

from __future__ import annotations

import ast
import re
import statistics
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# top to bottom: a unit may import only units below it (and itself)
LAYERS = [
    "orchestrator.cli",
    "orchestrator.commands",  # the options and output of the commands cli.py registers
    "orchestrator.serve",  # the live page (`serve`): read-only rows, their HTML, the HTTP server
    "orchestrator.jsonout",
    "orchestrator.demo",
    "orchestrator.tables",  # rendering of results: used by the CLI and the demo's console
    "orchestrator.report",  # a run's timeline as an HTML file (`report`, `replay --report`, `serve`'s links)
    "orchestrator.runs",
    "orchestrator.telemetry",  # OpenTelemetry export of ended runs: read by runs, reads notify's redaction
    "orchestrator.notify",
    "orchestrator.config",
    "orchestrator.guidance",  # the hand-over to the agent: inbox, hook, wiring, the ladder's rules
    "orchestrator.ledger",
    "orchestrator.corpus",
    "orchestrator.record",
    "orchestrator.buckets",
    "orchestrator.data",
    "orchestrator.infra",
    "spiral",
]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for top in ("orchestrator", "spiral"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            out.append((".".join(rel.parts).removesuffix(".__init__"), path))
    return out


def _unit(module: str) -> str | None:
    for unit in LAYERS:
        if module == unit or module.startswith(unit + "."):
            return unit
    return None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in ("orchestrator", "spiral")}


def test_every_import_points_down() -> None:
    wrong = []
    for module, path in _modules():
        src = _unit(module)
        if src is None:
            continue
        for target in _imports(path):
            dst = _unit(target)
            if dst is None or dst == src:
                continue
            if LAYERS.index(dst) < LAYERS.index(src):
                wrong.append(f"{module} imports {target} ({dst} is above {src})")
    assert not wrong, "\n".join(wrong)


def test_runs_and_the_ledger_read_run_folders_without_the_corpus() -> None:
    """Reading a run folder's files (its log, snapshots, case.yaml) is record/'s; the corpus keeps to
    corpus work (replay, eval, the benchmark, import), so the run pass and the ledger never import it."""
    wrong = [
        f"{module} imports {target}"
        for module, path in _modules()
        if module.startswith(("orchestrator.runs", "orchestrator.ledger"))
        for target in _imports(path)
        if target.startswith("orchestrator.corpus")
    ]
    assert not wrong, "\n".join(wrong)


def test_the_detector_imports_nothing_of_the_orchestrator_and_does_no_io() -> None:
    banned = re.compile(r"^\s*(import|from)\s+(orchestrator|os|subprocess|time|random|socket|pathlib)\b", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "spiral").rglob("*.py") if banned.search(p.read_text())]
    assert not offenders


RUN_FILES = re.compile(
    r"""["'](events\.jsonl|workspace\.jsonl|tracked\.txt|case\.yaml|state\.json|detector\.pickle|"""
    r"""supervisor\.log|agent\.stderr)["']"""
)


def test_only_the_record_package_names_run_folder_files() -> None:
    offenders = []
    for module, path in _modules():
        if module.startswith(("orchestrator.record", "spiral")):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if RUN_FILES.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_subprocess_goes_through_the_wrapper() -> None:
    call = re.compile(r"\bsubprocess\.(run|Popen|call|check_call|check_output)\(")
    offenders = [
        str(path.relative_to(ROOT))
        for module, path in _modules()
        if module != "orchestrator.infra.proc" and call.search(path.read_text())
    ]
    assert not offenders


SOFT_LINES = 400  # past it, a module is named in a warning: worth splitting when it is next touched
HARD_LINES = 600  # past it, a module fails the suite


def test_modules_stay_small() -> None:
    """A size that warns rather than cuts: a module over 400 lines is named (a hint to split it along
    its concerns), never forced under the line by moving a few lines elsewhere; only 600 fails."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for _, p in _modules()}
    assert statistics.median(sizes.values()) < 150
    big = {k: v for k, v in sizes.items() if v > SOFT_LINES}
    if big:
        warnings.warn(f"modules over {SOFT_LINES} lines: {big}", stacklevel=1)
    assert not {k: v for k, v in sizes.items() if v > HARD_LINES}


def test_a_step_writes_only_its_own_part_of_the_record() -> None:
    """Each step of the watcher pass names the parts of the run record it writes (`owns`); the suite
    runs with ORCHESTRATOR_CHECK_STEP_PARTS=1 (conftest.py), so every pass of every test refuses a
    step that wrote outside them. Here: the names are real parts, and a step module's own
    assignments to the record keep to them."""
    from orchestrator.record.model import RunRecord
    from orchestrator.runs.pipeline import STEPS

    fields = set(RunRecord.__struct_fields__)
    for step in STEPS:
        assert step.owns <= fields, (step.name, step.owns - fields)
    owns = {step.name: step.owns for step in STEPS}
    wrong = []
    for path in sorted((ROOT / "orchestrator" / "runs" / "steps").glob("*.py")):
        if path.stem not in owns:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                part = _record_part(t)
                if part is not None and part not in owns[path.stem]:
                    wrong.append(f"{path.stem}.py:{t.lineno} writes record.{part}")
    assert not wrong, wrong


def _record_part(target: ast.expr) -> str | None:
    """`record.x = ...`, `p.record.x.y = ...`, `record.x[k] = ...`: the part `x`; None for anything else."""
    chain: list[str] = []
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            chain.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in ("record", "r"):
        return chain[-1] if chain else None
    if "record" in chain:  # p.record.x
        i = chain.index("record")
        return chain[i - 1] if i > 0 else None
    return None
