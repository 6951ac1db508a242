"""An object's attributes as a dict and back, for the `__getstate__` / `__setstate__` of spiral's classes.

Compiled (mypyc: setup.py) a class has no `__dict__`: its attributes are named by the
`__mypyc_attrs__` that mypyc gives every class it compiles (with `serializable=True`); as pure
Python they are in `__dict__`. Pickles made either way load either way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

_UNSET = object()


def attrs_of(obj: object) -> dict[str, Any]:
    """The attributes set on `obj` (a copy)."""
    names: tuple[str, ...] | None = getattr(type(obj), "__mypyc_attrs__", None)
    if names is None:
        return dict(vars(obj))
    out: dict[str, Any] = {}
    for name in names:
        if name == "__dict__":
            continue
        value = getattr(obj, name, _UNSET)
        if value is not _UNSET:
            out[name] = value
    return out


def set_attrs(obj: object, state: dict[str, Any]) -> None:
    for name, value in state.items():
        setattr(obj, name, value)


def by_fields(obj: Any) -> tuple[Any, tuple[Any, ...]]:
    """`__reduce__` for a frozen dataclass: made again by its constructor, from its fields in order
    (compiled, a frozen dataclass cannot be filled in after it is made)."""
    return type(obj), tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))
