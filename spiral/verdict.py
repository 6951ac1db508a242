"""What one evaluation concludes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spiral.pickling import by_fields

HEALTHY, SOFT, STUCK = "healthy", "soft", "stuck"


# Read-only by convention, not frozen: frozen=True costs 0.8 us a construction, and one verdict is
# made per evaluated tick. The __init__ is written out so the compiled build makes it native (the
# one dataclasses generates runs as Python).
@dataclass(slots=True, unsafe_hash=True, init=False)
class Finding:
    signal: str
    weight: float
    evidence: str
    target: str | None = None  # the script, test or file a window signal counted (its evidence names it)
    since: tuple[float, int] | None = None  # (time, calls before it) of the first call its evidence counts
    attempts: int = 0  # the tries of one check its evidence counts (stuck_check); 0: none

    def __init__(
        self,
        signal: str,
        weight: float,
        evidence: str,
        target: str | None = None,
        since: tuple[float, int] | None = None,
        attempts: int = 0,
    ) -> None:
        self.signal, self.weight, self.evidence, self.target = signal, weight, evidence, target
        self.since, self.attempts = since, attempts

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


@dataclass(slots=True, unsafe_hash=True, init=False)  # (as Finding)
class Verdict:
    elapsed_min: float
    expected_min: float
    region: str  # healthy | soft | stuck
    findings: tuple[Finding, ...]
    suspicion: float
    threshold: float
    sustained: str | None  # the sustained-loop rule held: why a page may come before the soft band

    def __init__(
        self,
        elapsed_min: float,
        expected_min: float,
        region: str,
        findings: tuple[Finding, ...],
        suspicion: float,
        threshold: float,
        sustained: str | None = None,
    ) -> None:
        self.elapsed_min, self.expected_min, self.region = elapsed_min, expected_min, region
        self.findings, self.suspicion, self.threshold = findings, suspicion, threshold
        self.sustained = sustained

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(f.signal for f in self.findings)

    @property
    def ratio(self) -> float:
        return self.elapsed_min / self.expected_min if self.expected_min else 0.0

    @property
    def evidence(self) -> tuple[str, ...]:
        lines = tuple(f.evidence for f in self.findings)
        if not lines:
            return lines
        if self.sustained is not None and self.region == HEALTHY:
            lines += (self.sustained,)
        return lines + (f"{self.ratio:.1f}x expected wall-clock",)

    @property
    def tripped(self) -> bool:
        """Suspicion at or over the threshold, whatever the region."""
        return bool(self.findings) and self.suspicion >= self.threshold

    @property
    def should_page(self) -> bool:
        """A spiral pages a person in the soft band, or before it when the sustained-loop rule held
        (strong loop evidence for long enough: rules.sustained); never once the run is stuck."""
        return self.tripped and (self.region == SOFT or (self.region == HEALTHY and self.sustained is not None))

    def to_dict(self) -> dict[str, object]:
        return {
            "region": self.region,
            "elapsed_min": round(self.elapsed_min, 2),
            "expected_min": self.expected_min,
            "signals": list(self.signals),
            "suspicion": self.suspicion,
            "evidence": list(self.evidence),
            "page": self.should_page,
            **({"sustained": self.sustained} if self.sustained is not None else {}),
        }

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return by_fields(self)


def json_number(x: float) -> float | int:
    """Whole numbers as integers in JSON output: suspicion 2, not 2.0 (weights are floats)."""
    return int(x) if float(x).is_integer() else x
