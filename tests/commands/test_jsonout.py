"""The --json envelope (orchestrator/jsonout.py): a version key on every object and every line."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from orchestrator.jsonout import JSON_VERSION, document, line, plain, records, versioned


def test_versioned_adds_the_key_first_and_keeps_an_existing_one() -> None:
    assert JSON_VERSION == 1
    assert list(versioned({"runs": []})) == ["version", "runs"]
    assert versioned({"version": 7, "x": 1}) == {"version": 7, "x": 1}


def test_document_and_line() -> None:
    doc = document({"a": 1})
    assert doc.endswith("}\n") and json.loads(doc) == {"version": 1, "a": 1} and "\n  " in doc
    one = line({"tool": "Bash"})
    assert one.count("\n") == 1 and json.loads(one) == {"version": 1, "tool": "Bash"}


def test_plain_and_records() -> None:
    assert plain([1, ("a", None), {"k": Decimal("1.5")}, date(2026, 1, 2)]) == [
        1,
        ["a", None],
        {"k": "1.5"},
        "2026-01-02",
    ]
    assert records(["a", "b"], [(1, "x"), (2, None)]) == {
        "columns": ["a", "b"],
        "rows": [{"a": 1, "b": "x"}, {"a": 2, "b": None}],
    }


def test_records_keep_every_column_and_hold_only_json_numbers() -> None:
    out = records(["run_id", "run_id", "n"], [("a", "b", float("nan")), ("c", "d", float("-inf"))])
    assert out["columns"] == ["run_id", "run_id_2", "n"]
    assert out["rows"][0] == {"run_id": "a", "run_id_2": "b", "n": "nan"} and out["rows"][1]["n"] == "-inf"
    assert json.loads(document(out), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) is not None
