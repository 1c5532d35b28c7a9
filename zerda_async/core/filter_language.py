"""The metadata filter language: conditions that restrict retrieval (and a store's search).

A filter is a mapping from metadata key to a condition:

* a JSON value — the key's value equals it (JSON equality: ``True`` is not
  ``1``, ``1`` equals ``1.0``, lists and objects compare whole);
* ``{"$in": [v1, v2, ...]}`` — the value equals one of them;
* ``{"$gt" | "$gte" | "$lt" | "$lte": number, ...}`` — the value is a number
  (not a boolean) within the bounds; several bounds combine with AND.

Every key's condition must hold (AND).  A chunk without the key never matches.
A key starting with ``$`` is refused (it is an operator such as ``$and``, not
a metadata key; the framework adapters translate those forms, see
:mod:`zerda_async.integrations`).  Anything else raises
:class:`~zerda_async.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError

__all__ = [
    "Condition",
    "Filters",
    "conditions_key",
    "in_range",
    "is_number",
    "json_equal",
    "matches",
    "parse_filters",
]

Filters = Mapping[str, Any]
"""What callers pass: ``{"lang": "ar", "year": {"$gte": 2020}, "kind": {"$in": [...]}}``."""

_RANGE_OPS = ("$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True, slots=True)
class Condition:
    """One parsed condition on one metadata key."""

    key: str
    kind: Literal["eq", "in", "range"]
    values: tuple[Any, ...] = ()
    bounds: tuple[tuple[str, float], ...] = ()


def is_number(value: Any) -> bool:
    """A JSON number: an int or float that is not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_json(key: str, value: Any) -> None:
    if value is None or isinstance(value, str | bool):
        return
    if is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"filter {key!r}: {value!r} is not a JSON number")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_json(key, item)
        return
    if isinstance(value, Mapping):
        for k, item in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"filter {key!r}: object keys must be strings")
            _check_json(key, item)
        return
    raise ConfigError(f"filter {key!r}: {type(value).__name__} is not a JSON value")


def parse_filters(filters: Filters | None) -> tuple[Condition, ...]:
    """The conditions of ``filters`` in key order; a clear error for a malformed one."""
    if not filters:
        return ()
    conditions = []
    for key, wanted in filters.items():
        if not isinstance(key, str):
            raise ConfigError(f"filter key {key!r} is not a string")
        if key.startswith("$"):
            # {"$and": [...]} would otherwise ask for a metadata key "$and" and match nothing.
            raise ConfigError(
                f"filter key {key!r} is an operator, not a metadata key: every key of a "
                "filter must hold (AND), and operators go inside a key's condition"
            )
        if isinstance(wanted, Mapping) and any(str(op).startswith("$") for op in wanted):
            conditions.append(_operator_condition(key, wanted))
        else:
            _check_json(key, wanted)
            conditions.append(Condition(key, "eq", (wanted,)))
    return tuple(conditions)


def _operator_condition(key: str, ops: Mapping[Any, Any]) -> Condition:
    if "$in" in ops:
        if len(ops) != 1:
            raise ConfigError(f"filter {key!r}: '$in' cannot be combined with other operators")
        values = ops["$in"]
        if not isinstance(values, list | tuple) or not values:
            raise ConfigError(f"filter {key!r}: '$in' needs a non-empty list")
        for value in values:
            _check_json(key, value)
        return Condition(key, "in", tuple(values))
    bounds = []
    for op, bound in ops.items():
        if op not in _RANGE_OPS:
            raise ConfigError(f"filter {key!r}: unknown operator {op!r}")
        if not is_number(bound) or not math.isfinite(bound):
            raise ConfigError(f"filter {key!r}: {op} needs a finite number, got {bound!r}")
        bounds.append((str(op), float(bound)))
    return Condition(key, "range", bounds=tuple(bounds))


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1``, ``1`` equals ``1.0``, containers compare whole."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if is_number(a) and is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def in_range(value: Any, bounds: tuple[tuple[str, float], ...]) -> bool:
    """Whether ``value`` is a number within every ``(operator, bound)`` pair."""
    if not is_number(value):
        return False
    number = float(value)
    for op, bound in bounds:
        if (
            (op == "$gt" and not number > bound)
            or (op == "$gte" and not number >= bound)
            or (op == "$lt" and not number < bound)
            or (op == "$lte" and not number <= bound)
        ):
            return False
    return True


def matches(metadata: Any, conditions: tuple[Condition, ...]) -> bool:
    """Whether ``metadata`` satisfies every condition (the in-memory side of pushdown)."""
    if not conditions:
        return True
    if not isinstance(metadata, Mapping):
        return False
    for cond in conditions:
        if cond.key not in metadata:
            return False
        value = metadata[cond.key]
        if cond.kind == "range":
            if not in_range(value, cond.bounds):
                return False
        elif not any(json_equal(value, wanted) for wanted in cond.values):
            return False
    return True


def conditions_key(conditions: tuple[Condition, ...]) -> str:
    """A canonical text of ``conditions`` (key order and ``$in`` order ignored), for cache keys."""
    parts = []
    for cond in sorted(conditions, key=lambda c: c.key):
        if cond.kind == "range":
            detail = repr(sorted(cond.bounds))
        else:
            detail = repr(sorted((repr(type(v).__name__), repr(v)) for v in cond.values))
        parts.append(f"{cond.key!r}:{cond.kind}:{detail}")
    return ";".join(parts)
