"""The benchmark report as Markdown (docs/benchmark.md) and as a terminal table."""

from __future__ import annotations

from typing import Any

COMMAND = "./dev.sh eval --bench"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _ci(pair: list[float | None]) -> str:
    lo, hi = pair
    return "n/a" if lo is None or hi is None else f"{100 * lo:.0f}-{100 * hi:.0f}%"


def markdown(report: dict[str, Any], *, with_timing: bool = False) -> str:
    out = [
        "# Detection benchmark",
        "",
        f"Reproduce with `{COMMAND} --markdown` (deterministic: same table on every machine).",
        "",
        f"{report['scenarios']} scenarios in {report['families']} seeded families "
        f"({report['positives']} must page, {report['scenarios'] - report['positives']} must not), "
        "across the small / medium / big buckets and the claude-stream-json, claude-transcript, "
        "codex-json and generic log formats. Positives page correctly only inside their window "
        "(from the later of onset and the soft-band start, to the stuck time): a page on a spiral "
        "before its window is counted as early, one after it as late, and both as misses.",
        "",
        "Confidence intervals are Wilson 95% intervals with the *family* as the unit (the mean of "
        "per-family rates over the number of families), since scenarios of one family are not "
        "independent.",
        "",
        "*Seed signals only* is our detector with the `rules:` section of buckets.yaml removed: the "
        "five signals of the contract, literally. *Ours without X* gives signal X weight 0; *ours "
        "without rule X* sets `rules.X.enabled: false`. Scenarios carry the outputs real tools print "
        "(pytest runs and tracebacks, build logs, linter findings, `gh` status, curl and import errors), "
        "with their volatile parts (line numbers, durations, tmp paths, ids) moving.",
        "",
        "## Side by side",
        "",
        "| detector | precision | recall (CI by family) | FPR (CI by family) | median min onset->page "
        "| early / late pages on spirals | names the expected signal |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in report["detectors"]:
        delay = "n/a" if d["median_minutes_onset_to_page"] is None else f"{d['median_minutes_onset_to_page']:.1f}"
        out.append(
            f"| {d['detector']} | {_pct(d['precision'])} | {_pct(d['recall'])} ({_ci(d['recall_ci_by_family'])}) "
            f"| {_pct(d['fpr'])} ({_ci(d['fpr_ci_by_family'])}) | {delay} "
            f"| {d['pages_before_window']} / {d['pages_after_window']} "
            f"| {_pct(d['attribution'])} |"
        )
    out += [
        "",
        "## Our detector, family by family",
        "",
        "| family | must page | scenarios | paged | rate (Wilson 95%) | expected signal named | paged in window "
        "| seed signals only: paged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    seed = getattr(report, "seed_only_paged", {})  # the Markdown's extra column (not in the JSON)
    for f in report["per_family"]:
        out.append(
            f"| {f['family']} | {'yes' if f['positive'] else 'no'} | {f['scenarios']} | {f['paged']} "
            f"| {_pct(f['rate'])} ({_ci(f['ci'])}) "
            f"| {'-' if f['attributed'] is None else f['attributed']} "
            f"| {'-' if f['paged_in_window'] is None else f['paged_in_window']} "
            f"| {seed.get(f['family'], '-')} |"
        )
    still = report["still_paging_negatives"]
    out += ["", "## Hard negatives where we still page", ""]
    out += [f"- {name}" for name in still] if still else ["- none"]
    missed = report["missed_positive_families"]
    out += ["", "## Spiral families we miss", ""]
    out += [f"- {name}" for name in missed] if missed else ["- none"]
    traces = report.get("real_traces")
    if traces:
        out += [
            "",
            "## Real recorded logs (../shared/real-traces, events only, replayed as medium-bucket runs)",
            "",
            "| file | format | tool calls | minutes | signals (first fired, min) | paged at |",
            "|---|---|---|---|---|---|",
        ]
        for t in traces:
            fired = ", ".join(f"{k} {v:g}" for k, v in t["first_fired_min"].items()) or "-"
            paged = "-" if t["paged_at_min"] is None else f"{t['paged_at_min']:g} min"
            out.append(f"| {t['file']} | {t['format']} | {t['tool_calls']} | {t['minutes']:g} | {fired} | {paged} |")
    if with_timing and "timing" in report:
        t = report["timing"]
        out += [
            "",
            f"Run time: {t['total_s']} s ({t['generate_s']} s generating, {t['evaluate_s']} s replaying, "
            f"{t['scenarios_per_s']} scenarios/s through all detectors).",
        ]
    return "\n".join(out) + "\n"
