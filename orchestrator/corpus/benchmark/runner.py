"""Run the detection benchmark: generate the families, replay every scenario
through our detector, its ablations and the baselines, and score them side by side.
"""

from __future__ import annotations

import copy
import json
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.benchmark import baselines, families, scenario
from orchestrator.corpus.benchmark.metrics import Outcome, Score, score, wilson
from orchestrator.corpus.benchmark.scenario import Scenario
from orchestrator.corpus.replay import walk_recording
from orchestrator.infra.collector import no_collections
from orchestrator.infra.errors import UserError
from spiral import settings as settings_mod
from spiral.observe import SHELL_LIKE, observe
from spiral.settings import Settings, merge
from spiral.walk import TickWalk, Watch, resume

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
    """The benchmark's report (its JSON keys are a contract: tests/commands/test_cli_contract.py), plus what only the
    Markdown shows: per family, how many scenarios the seed signals alone paged."""

    seed_only_paged: dict[str, int]


def _settings(raw: dict[str, Any], overrides: dict[str, Any]) -> list[tuple[str, Settings]]:
    """Every variant's settings for a case with these overrides (worked out once per distinct overrides)."""
    # keyed by the mapping's identity (kept alive by the entry) and the overrides' text: dumping the
    # whole mapping per scenario cost a twentieth of a walk
    mapped = _SETTINGS.get(id(raw))
    if mapped is None or mapped[0] is not raw:
        mapped = _SETTINGS[id(raw)] = (raw, {})
    key = json.dumps(overrides, sort_keys=True, default=str) if overrides else ""
    got = mapped[1].get(key)
    if got is None:
        got = mapped[1][key] = []
        for label, mapping, over in variants(raw):
            merged = merge(overrides, over) if over else overrides
            got.append((label, Settings.from_mapping(mapping, merged or None)))
    return got


_SETTINGS: dict[int, tuple[dict[str, Any], dict[str, list[tuple[str, Settings]]]]] = {}


def _views(every: list[tuple[str, Settings]]) -> tuple[list[tuple[str, dict[str, float]]], list[tuple[str, Settings]]]:
    """The variants after ours that differ from it only in lower signal weights (they walk on from its walk
    as views, `replay.resume`: the same findings, reweighted), and those walked alone."""
    own = every[0][1]
    views, alone = [], []
    for label, s in every[1:]:
        if replace(s, weights=own.weights) == own and all(0 <= w <= own.weights[k] for k, w in s.weights.items()):
            views.append((label, s.weights))
        else:
            alone.append((label, s))
    return views, alone


def _walk(s: Scenario, settings: Settings) -> TickWalk:
    return walk_recording(
        settings,
        bucket=s.bucket,
        start=s.started_at,
        end=s.ended_at,
        timeline=s.timeline,
        snaps=s.snaps,
        tracked=s.tracked,
        outputs=s.outputs,
        workdir=s.workdir,
        scope=s.scope,
    )


def _found(w: Watch) -> tuple[float | None, set[str]]:
    return (round(w.notified.elapsed_min, 2) if w.notified else None), w.fired


def ours(scenarios: Iterable[Scenario], raw: dict[str, Any]) -> tuple[list[TickWalk], float]:
    """Each scenario replayed once through our detector only (each walk stops at its page): the walks, and
    the CPU seconds they took (this process's: a busy machine does not count against the detector)."""
    t0 = time.process_time()
    with no_collections():  # as a worker's chunk runs (_chunk); its closing pass is timed too
        walks = [_walk(s, _settings(raw, s.overrides)[0][1]) for s in scenarios]
    return walks, time.process_time() - t0


def ours_alone(scenarios: Iterable[Scenario], raw: dict[str, Any]) -> tuple[int, float]:
    """How many scenarios, and in how many CPU seconds, our detector alone replays (one process)."""
    walks, seconds = ours(scenarios, raw)
    return len(walks), seconds


def _variants_of(s: Scenario, raw: dict[str, Any], walk: TickWalk) -> dict[str, Any]:
    """Every variant's (page minute, expected signal named) on `s`, given our walk of it (walked on here)."""
    every = _settings(raw, s.overrides)
    views, alone = _views(every)
    found = {OURS: _found(walk)}
    inert = _inert_rules(s, set(walk.fired), every[0][1])  # before `resume` walks on past our page
    found[OURS] = (found[OURS][0], set(found[OURS][1]))
    found.update((label, _found(w)) for (label, _), w in zip(views, resume(walk, [v for _, v in views]), strict=True))
    found.update((label, found[OURS] if label in inert else _found(_walk(s, settings))) for label, settings in alone)
    signal = s.meta["signal"]
    return {label: (found[label][0], signal in found[label][1] if signal else None) for label, _ in every}


def _inert_rules(s: Scenario, fired: set[str], settings: Settings) -> set[str]:
    """The "ours without rule X" variants that are ours on this scenario, so need no walk of their own.

    From spiral/detector.py and call_windows.py: the subagents rule acts only on calls a subagent made;
    poll_progress only on calls that are polls; same_error, drift and stuck_check only add their own finding (their
    ablation differs from ours only once that finding fired, which `fired`, our walk's signals up to
    its page, tells). tests/corpus/test_bench_speed.py walks every variant alone and compares.
    """
    calls = list(scenario.calls(s))
    out = {f"ours without rule {name}" for name in ("same_error", "drift", "stuck_check") if name not in fired}
    if not any(c.agent is not None for c in calls):
        out.add("ours without rule subagents")
    if not any(c.tool in SHELL_LIKE and observe(c, s.workdir, settings.poll_max_sleep_s).poll for c in calls):
        out.add("ours without rule poll_progress")
    return out


_JOB: tuple[dict[str, Any], int, Settings, Path | None] | None = (
    None  # (buckets, seed, settings, keep): set before the fork
)


def _chunk(items: list[tuple[int, int]]) -> tuple[list[dict[str, Any]], float, float, float]:
    """Scenarios (family index, i) made, replayed through every variant and baseline: their rows, and the
    seconds spent making them, replaying them through ours alone, and through everything."""
    assert _JOB is not None
    raw, seed, settings, keep = _JOB
    with no_collections():  # a few scenarios' worth of objects: one young pass at the end
        t0 = time.perf_counter()
        made = [scenario.make(families.FAMILIES[f], i, seed, settings, keep) for f, i in items]
        t_gen = time.perf_counter() - t0
        walks, t_ours = ours(made, raw)
        rows = []
        for s, walk in zip(made, walks, strict=True):
            results = _variants_of(s, raw, walk)
            calls = list(scenario.calls(s))
            stuck = _settings(raw, s.overrides)[0][1].bucket(s.bucket).stuck_min
            shape = baselines.RunShape(s.started_at, s.ended_at, stuck, calls)
            for name, fn in baselines.BASELINES.items():
                results[name] = (fn(shape), None)
            rows.append(
                {"id": s.id, "meta": s.meta, "results": results, "shape": (s.started_at, s.ended_at, len(calls))}
            )
        return rows, t_gen, t_ours, time.perf_counter() - t0 - t_gen


def run(
    per_family: int = 40,
    seed: int = 0,
    jobs: int | None = None,
    keep: Path | None = None,
    progress: Callable[[str], None] | None = None,
    real_traces: Path | None = None,
) -> Report:
    """Make the scenarios and replay them in the worker processes (each its share, nothing on disk unless
    `keep`); the generation and replay times are the pool's wall time split in their proportion."""
    global _JOB
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise UserError(f"--keep {keep}: already exists and is not an empty folder; choose a new one")
    raw = BucketsFile().raw
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    _JOB = (raw, seed, Settings.from_mapping(raw), keep)
    items = [(f, i) for f in range(len(families.FAMILIES)) for i in range(per_family)]
    jobs = jobs or os.cpu_count() or 1
    size = max(1, min(8, len(items) // (jobs * 4)))
    chunks = [items[k : k + size] for k in range(0, len(items), size)]
    traces = None
    if jobs > 1 and len(chunks) > 1 and "fork" in mp.get_all_start_methods():
        with mp.get_context("fork").Pool(jobs) as pool:
            pending = pool.map_async(_chunk, chunks, chunksize=1)
            traces = _real_traces(real_traces, raw)  # here, while the workers replay (this process waits otherwise)
            done = pending.get()
    else:
        done = [_chunk(c) for c in chunks]
    wall = time.perf_counter() - t0
    rows = [r for c in done for r in c[0]]
    gen_s, ours_s, eval_s = sum(c[1] for c in done), sum(c[2] for c in done), sum(c[3] for c in done)
    t_gen = wall * gen_s / (gen_s + eval_s)
    t_eval = wall - t_gen
    say(f"generated {len(rows)} scenarios in {len(families.FAMILIES)} families ({t_gen:.1f} s)")
    n_variants = len(variants(raw))
    say(
        f"replayed them through {n_variants} detector variants and {len(baselines.BASELINES)} "
        f"baselines ({t_eval:.1f} s, {len(rows) * n_variants / t_eval:,.0f} detector replays/s)"
    )
    say(
        f"our detector alone: {len(rows)} scenarios in {ours_s:.2f} CPU s "
        f"({len(rows) / ours_s:,.0f} scenarios/s on one CPU)"
    )
    report = _report(rows, [label for label, _, _ in variants(raw)])
    report["timing"] = {
        "generate_s": round(t_gen, 2),
        "evaluate_s": round(t_eval, 2),
        "scenarios_per_s": round(len(rows) / t_eval, 1),
        "total_s": round(time.perf_counter() - t0, 2),
    }
    if traces is None:
        traces = _real_traces(real_traces, raw)
    if traces is not None:
        report["real_traces"] = traces
    return report


def _real_traces(folder: Path | None, raw: dict[str, Any]) -> Any:
    """The real traces' table (realtraces.scan), or None without a folder of them."""
    if folder is None or not folder.is_dir():
        return None
    from orchestrator.corpus.benchmark.realtraces import scan

    return scan(folder, raw)


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
