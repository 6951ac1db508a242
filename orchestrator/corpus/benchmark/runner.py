"""Run the detection benchmark: generate the families, replay every scenario
through our detector, its ablations and the baselines, and score them side by side.
"""

from __future__ import annotations

import copy
import json
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import baselines, families
from orchestrator.corpus.benchmark.metrics import Outcome, Score, score, wilson
from orchestrator.corpus.case import load_case
from orchestrator.corpus.recorded import LineCounter, distinct_snapshots, read_events, read_snapshots, read_tracked
from orchestrator.corpus.replay import walk_recording
from orchestrator.infra.errors import UserError
from orchestrator.record.layout import CaseFiles
from spiral import settings as settings_mod
from spiral.adapters import make_adapter
from spiral.model import Snapshot, ToolCall
from spiral.settings import Settings, merge

OURS = "spiral detector (ours)"
SEED_ONLY = "seed signals only (no rules:)"
RANDOM = "random, matched to our page rate"
# the contract's five signals (every signal a verdict can name, before the rules existed)
SEED_SIGNALS: tuple[str, ...] = getattr(settings_mod, "SEED_SIGNALS", settings_mod.SIGNAL_NAMES)
ABLATIONS = [f"ours without {s}" for s in SEED_SIGNALS]


def rule_names(raw: dict[str, Any]) -> list[str]:
    """The rules of a buckets mapping that can be switched off (`rules.<name>.enabled`), in file order."""
    rules = raw.get("rules")
    if not isinstance(rules, dict):
        return []
    return [k for k, v in rules.items() if isinstance(v, dict) and "enabled" in v]


def variants(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every detector variant the benchmark runs: (label, buckets mapping, overrides merged over a case's).

    Ours; the seed detector (the `rules:` section removed: the literal contract);
    ours without each of the five signals (weight 0); ours without each rule
    (`enabled: false`). Rules absent from the mapping get no row.
    """
    seed = {k: v for k, v in raw.items() if k != "rules"}
    out: list[tuple[str, dict[str, Any], dict[str, Any]]] = [(OURS, raw, {}), (SEED_ONLY, seed, {})]
    for name, label in zip(SEED_SIGNALS, ABLATIONS, strict=True):
        out.append((label, raw, {"signals": {name: {"weight": 0}}}))
    for name in rule_names(raw):
        off = copy.deepcopy(raw)
        off["rules"][name]["enabled"] = False
        out.append((f"ours without rule {name}", off, {}))
    return out


class Report(dict[str, Any]):
    """The benchmark's report (its JSON keys are a contract: tests/test_cli_contract.py), plus what only the
    Markdown shows: per family, how many scenarios the seed signals alone paged."""

    seed_only_paged: dict[str, int]


@dataclass
class Loaded:
    meta: dict[str, Any]
    timeline: list[tuple[float, list[ToolCall]]]
    snaps: list[Snapshot]
    tracked: list[str]


def _detect(case: Any, settings: Settings, loaded: Loaded) -> tuple[float | None, set[str]]:
    case_scope = getattr(case, "scope", None)  # a case's `scope:` (the drift rule), where the case reader has it
    scope: dict[str, Any] = {"scope": case_scope} if case_scope else {}
    walk = walk_recording(
        settings,
        bucket=case.bucket,
        start=case.started_at,
        end=case.ended_at,
        timeline=loaded.timeline,
        snaps=loaded.snaps,
        tracked=loaded.tracked,
        outputs=case.outputs,
        workdir=case.workdir,
        **scope,
    )
    paged = walk.notified
    return (round(paged.elapsed_min, 2) if paged else None), set(walk.fired)


def _one(args: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    folder, raw_buckets = args
    case = load_case(folder)
    meta = json.loads((folder / "scenario.json").read_text())
    adapter = make_adapter(case.format, case.workdir)
    counter = LineCounter()
    files = CaseFiles(folder)
    timeline = [(ts, adapter.feed(ts, data)) for ts, data in read_events(files.events, counter)]
    loaded = Loaded(
        meta,
        timeline,
        distinct_snapshots(read_snapshots(files.workspace, counter)),
        read_tracked(files.tracked),
    )
    results: dict[str, Any] = {}
    base = Settings.from_mapping(raw_buckets, case.overrides or None)
    for label, raw, over in variants(raw_buckets):
        merged = merge(case.overrides or {}, over) if over else case.overrides
        p, f = _detect(case, Settings.from_mapping(raw, merged or None), loaded)
        results[label] = (p, meta["signal"] in f if meta["signal"] else None)
    calls = [c for _, cs in timeline for c in cs]
    shape = baselines.RunShape(case.started_at, case.ended_at, base.bucket(case.bucket).stuck_min, calls)
    for name, fn in baselines.BASELINES.items():
        results[name] = (fn(shape), None)
    return {"id": case.id, "meta": meta, "results": results, "shape": (case.started_at, case.ended_at, len(calls))}


def run(
    per_family: int = 40,
    seed: int = 0,
    jobs: int | None = None,
    keep: Path | None = None,
    progress: Callable[[str], None] | None = None,
    real_traces: Path | None = None,
) -> Report:
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise UserError(f"--keep {keep}: already exists and is not an empty folder; choose a new one")
    raw = BucketsFile().raw
    settings = Settings.from_mapping(raw)
    work = keep or Path(tempfile.mkdtemp(prefix="spiral-bench-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        folders = families.generate(work, per_family, seed, settings=settings)
        t_gen = time.perf_counter() - t0
        say(f"generated {len(folders)} scenarios in {len(families.FAMILIES)} families ({t_gen:.1f} s)")
        jobs = jobs or os.cpu_count() or 1
        t1 = time.perf_counter()
        items = [(f, raw) for f in folders]
        if jobs > 1 and "fork" in mp.get_all_start_methods():
            with mp.get_context("fork").Pool(jobs) as pool:
                rows = pool.map(_one, items, chunksize=max(1, len(items) // (jobs * 8)))
        else:
            rows = [_one(x) for x in items]
        t_eval = time.perf_counter() - t1
        n_variants = len(variants(raw))
        detector_runs = len(rows) * n_variants
        say(
            f"replayed them through {n_variants} detector variants and {len(baselines.BASELINES)} "
            f"baselines ({t_eval:.1f} s, {detector_runs / t_eval:,.0f} detector replays/s)"
        )
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report = _report(rows, [label for label, _, _ in variants(raw)])
    report["timing"] = {
        "generate_s": round(t_gen, 2),
        "evaluate_s": round(t_eval, 2),
        "scenarios_per_s": round(len(rows) / t_eval, 1),
        "total_s": round(time.perf_counter() - t0, 2),
    }
    if real_traces is not None and real_traces.is_dir():
        from orchestrator.corpus.benchmark.realtraces import scan

        report["real_traces"] = scan(real_traces, raw)
    return report


def _outcomes(rows: list[dict[str, Any]], name: str) -> list[Outcome]:
    out = []
    for r in rows:
        m = r["meta"]
        paged, attributed = r["results"][name]
        out.append(
            Outcome(
                m["family"],
                m["must_page"],
                paged,
                m["onset_min"],
                tuple(m["window"]) if m["window"] else None,
                attributed,
            )
        )
    return out


def _report(rows: list[dict[str, Any]], detectors: list[str]) -> Report:
    names = [*detectors, *baselines.BASELINES]
    scores = {n: score(_outcomes(rows, n)) for n in names}
    ours = scores[OURS]
    rate = (ours.tp + ours.fp) / len(rows)
    pager = baselines.random_pager(rate, "bench")
    for r in rows:
        started, ended, n = r["shape"]
        r["results"][RANDOM] = (pager(baselines.RunShape(started, ended, 0.0, [None] * n)), None)  # type: ignore[list-item]  # only the count is read
    scores[RANDOM] = score(_outcomes(rows, RANDOM))
    fams = [f.name for f in families.FAMILIES if any(r["meta"]["family"] == f.name for r in rows)]
    report = Report(
        {
            "version": 1,
            "scenarios": len(rows),
            "families": len(fams),
            "positives": sum(r["meta"]["must_page"] for r in rows),
            "detectors": [_score_row(n, s) for n, s in scores.items()],
            "per_family": [_family_row(f, rows, ours) for f in fams],
            "still_paging_negatives": [f for f in fams if ours.family_fpr.get(f, 0) > 0],
            "missed_positive_families": [f for f in fams if ours.family_recall.get(f, 1) < 1],
        }
    )
    report.seed_only_paged = {
        f: sum(r["results"][SEED_ONLY][0] is not None for r in rows if r["meta"]["family"] == f) for f in fams
    }
    return report


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _score_row(name: str, s: Score) -> dict[str, Any]:
    rlo, rhi = s.recall_interval()
    flo, fhi = s.fpr_interval()
    return {
        "detector": name,
        "tp": s.tp,
        "fp": s.fp,
        "tn": s.tn,
        "fn": s.fn,
        "precision": _r(s.precision),
        "recall": _r(s.recall),
        "fpr": _r(s.fpr),
        "recall_ci_by_family": [_r(rlo), _r(rhi)],
        "fpr_ci_by_family": [_r(flo), _r(fhi)],
        "median_minutes_onset_to_page": _r(s.median_delay),
        "pages_before_window": s.early,
        "pages_after_window": s.late,
        "attribution": _r(s.attributed / s.attributable) if s.attributable else None,
    }


def _family_row(fam: str, rows: list[dict[str, Any]], ours: Score) -> dict[str, Any]:
    mine = [r for r in rows if r["meta"]["family"] == fam]
    positive = mine[0]["meta"]["must_page"]
    n = len(mine)
    paged = [r for r in mine if r["results"][OURS][0] is not None]
    k = len(paged)
    lo, hi = wilson(k, n)
    attributed = [r for r in paged if r["results"][OURS][1]]
    in_window = [
        r
        for r in paged
        if r["meta"]["window"] and r["meta"]["window"][0] <= r["results"][OURS][0] <= r["meta"]["window"][1]
    ]
    return {
        "family": fam,
        "positive": positive,
        "scenarios": n,
        "paged": k,
        "rate": _r(k / n),
        "ci": [_r(lo), _r(hi)],
        "signal": mine[0]["meta"]["signal"],
        "attributed": len(attributed) if positive else None,
        "paged_in_window": len(in_window) if positive else None,
    }
