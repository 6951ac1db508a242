"""A corpus case folder's case.yaml: what was recorded, and what a replay must find."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta

from orchestrator.infra import yamlfile
from orchestrator.infra.errors import UserError
from orchestrator.infra.typed_yaml import FreeMapping, Invalid, NonNegativeFloat, Paths, Strict, convert, one_of
from orchestrator.record.layout import CASE_YAML, CaseFiles
from spiral.adapters import FORMATS
from spiral.settings import BUCKET_NAMES, SIGNAL_NAMES
from spiral.timestamps import parse_ts

# how a recorded run ended by an outside verdict (a benchmark harness, the orchestrator's own ending):
# calibrate --cases learns the bands from the runs that succeeded
SUCCEEDED_OUTCOMES = ("resolved", "succeeded")
OUTCOMES = SUCCEEDED_OUTCOMES + ("unresolved", "failed")

CASE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_Minutes = Annotated[NonNegativeFloat, Meta(description="must be a number of minutes")]
_Signals = Annotated[
    tuple[Annotated[str, one_of(SIGNAL_NAMES)], ...],
    Meta(description=f"must list signals among {', '.join(SIGNAL_NAMES)}"),
]
# a ticket's or case's `scope:` (docs/corpus-format-extensions.md): globs relative to the clone
SCOPE_GLOB = r"^(?!(?:\./)*/)(?!(?:.*/)?\.\.(?:/|$))(?=.*\S)[^\x00-\x1f]+$"
Globs = Annotated[
    tuple[
        Annotated[
            str, Meta(pattern=SCOPE_GLOB, description="must be a glob relative to the clone (no leading '/', no '..')")
        ],
        ...,
    ],
    Meta(description="must be a list of globs relative to the clone"),
]


def scope_globs(globs: tuple[str, ...] | None) -> tuple[str, ...]:
    """A validated `scope:` as the detector takes it: a leading './' dropped, duplicates dropped, order kept."""
    out: dict[str, None] = {}
    for glob in globs or ():
        while glob.startswith("./"):
            glob = glob[2:]
        if glob:
            out[glob] = None
    return tuple(out)


class Expect(Strict):
    spiral: Annotated[bool, Meta(description="must be true or false")]
    notify_after_min: _Minutes | None = None
    notify_before_min: _Minutes | None = None
    signals: _Signals = ()


@dataclass
class Case:
    folder: Path
    id: str
    description: str
    format: str
    bucket: str
    started_at: float
    ended_at: float
    outputs: tuple[str, ...]
    workdir: str | None
    overrides: dict[str, Any]
    expect: Expect
    scope: tuple[str, ...] = ()  # optional: the ticket's scope globs (the drift signal); () as before
    # optional: when guidance reached the agent (epoch seconds); the detector's windows restart there
    guidance_received: tuple[float, ...] = ()
    outcome: str | None = None  # optional: how the run ended by an outside verdict (calibrate --cases)
    lines: yamlfile.Lines = field(repr=False, default_factory=dict)

    @property
    def source(self) -> str:
        return str(CaseFiles(self.folder).case_yaml)


class _File(Strict):
    id: Annotated[str, Meta(pattern=CASE_ID.pattern, description="must match [a-z0-9][a-z0-9-]*")]
    format: Annotated[str, one_of(FORMATS)]
    bucket: Annotated[str, one_of(BUCKET_NAMES)]
    started_at: Any  # ISO-8601 text, or a datetime: YAML reads unquoted times itself; epoch seconds after checking
    ended_at: Any
    expect: Expect
    description: Annotated[str, Meta(description="must be text")] = ""
    outputs: Paths | None = None
    workdir: Annotated[str, Meta(pattern="^/", description="must be an absolute path")] | None = None
    overrides: FreeMapping | None = None
    scope: Globs | None = None
    guidance_received: Annotated[list[Any], Meta(description="must be a list of ISO-8601 times")] | None = None
    outcome: Annotated[str, one_of(OUTCOMES)] | None = None

    def __post_init__(self) -> None:
        self.started_at, self.ended_at = _when(self.started_at), _when(self.ended_at)
        received = [_when(t) for t in self.guidance_received or ()]
        if any(t is None for t in received):
            raise Invalid("guidance_received", "must be a list of ISO-8601 times")
        self.guidance_received = received
        for key in ("started_at", "ended_at"):
            when = getattr(self, key)
            if when is None:
                raise Invalid(key, "must be an ISO-8601 time")
            if not _EARLIEST <= when <= _LATEST:  # a recording from year 1, or one that ends in 9999
                raise Invalid(key, "must be a time between 2000 and 2200 (a recorded run's)")
        if self.ended_at < self.started_at:
            raise Invalid("ended_at", "is before started_at")
        if self.ended_at - self.started_at > _LONGEST_S:
            raise Invalid("ended_at", "is more than 400 days after started_at: no recorded run is that long")


_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
_LATEST = datetime(2200, 1, 1, tzinfo=UTC).timestamp()
_LONGEST_S = 400 * 86400.0


def load_case(folder: Path) -> Case:
    path = CaseFiles(folder).case_yaml
    data, lines = yamlfile.load_file(path)
    doc = convert(data, _File, yamlfile.Complaints(str(path), lines), CASE_YAML)
    return Case(
        folder=folder,
        id=doc.id,
        description=doc.description.strip(),
        format=doc.format,
        bucket=doc.bucket,
        started_at=doc.started_at,
        ended_at=doc.ended_at,
        outputs=doc.outputs or (),
        workdir=doc.workdir,
        overrides=doc.overrides or {},
        expect=doc.expect,
        scope=scope_globs(doc.scope),
        guidance_received=tuple(sorted(t for t in doc.guidance_received or () if t is not None)),
        outcome=doc.outcome,
        lines=lines,
    )


def _when(value: Any) -> float | None:
    if isinstance(value, datetime):  # YAML reads unquoted timestamps itself
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return parse_ts(value) if isinstance(value, str) else None


def find_cases(dirs: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """The case folders under `dirs`, and a broken entry (`{"case", "error"}`) for each folder that
    could not be listed: a case hidden by a permission is reported, never silently left out."""
    found: list[Path] = []
    unlisted: list[dict[str, Any]] = []

    def refused(exc: OSError) -> None:
        unlisted.append({"case": str(exc.filename), "error": f"cannot list the folder: {exc.strerror or exc}"})

    for d in dirs:
        if not d.exists():
            raise UserError(f"{d}: no such folder")
        if CaseFiles(d).is_case():
            found.append(d)
            continue
        under = [Path(root) for root, subdirs, files in os.walk(d, onerror=refused) if CASE_YAML in files + subdirs]
        found.extend(sorted(under))
    return found, unlisted
