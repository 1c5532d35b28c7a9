"""Each framework's own filter objects, translated into zerda's filter language.

zerda restricts retrieval with the language of
:mod:`zerda_async.core.filter_language`: one condition per metadata key
(equality, ``$in`` or numeric bounds), all of which must hold.  The adapters
accept that, and also what their framework's users write:

* **Haystack** filter dicts: ``{"field": "meta.lang", "operator": "==",
  "value": "en"}`` and the nested ``{"operator": "AND", "conditions": [...]}``;
* **LlamaIndex** ``MetadataFilters`` (nested ones included) of
  ``MetadataFilter``/``ExactMatchFilter`` objects;
* **LangChain** ``Comparison``/``Operation`` objects (``langchain_core.
  structured_query``, what self-query retrievers build) and the Mongo-style
  dicts its vector stores take (``{"$and": [...]}``, ``{"lang": {"$eq": "en"}}``).

What zerda can express is translated exactly: equality, ``in``, ``>``, ``>=``,
``<``, ``<=`` on metadata fields, joined by AND, and OR between values of one
field (an ``$in``).  Anything else — ``!=``, ``not in``, NOT, an OR across
fields or over ranges, a filter on the text or id rather than metadata, text
matching — raises :class:`~zerda_async.errors.ConfigError` naming it, never a
filter that silently matches nothing.  Only duck typing is used here, so this
module imports no framework.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

from zerda_async.core.filter_language import json_equal, parse_filters
from zerda_async.errors import ConfigError

__all__ = ["to_zerda_filters"]

_RANGES = {">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte"}
"""Comparison symbols (Haystack, LlamaIndex) -> zerda's range operators."""
_NAMED = {"gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
"""LangChain comparator names -> zerda's range operators."""
_UNSUPPORTED = (
    "zerda's filters keep chunks whose metadata satisfy every condition: equality, in, "
    "and >, >=, <, <= on numbers, joined by AND (OR only between values of one field)"
)

Filters = dict[str, Any]


def to_zerda_filters(filters: Any) -> Filters | None:
    """``filters`` in zerda's filter language (``None`` for no filter); see the module notes.

    Raises :class:`ConfigError` naming what cannot be translated.
    """
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        if not filters:
            return None
        translated = _haystack(filters) if _is_haystack(filters) else _mongo(filters)
    elif hasattr(filters, "filters"):  # LlamaIndex MetadataFilters
        translated = _llamaindex(filters)
    elif hasattr(filters, "comparator") or hasattr(filters, "arguments"):
        translated = _langchain(filters)
    else:
        raise ConfigError(
            "filters must be a mapping (zerda's filter language, a Haystack filter or a "
            "Mongo-style dict), LlamaIndex MetadataFilters or a LangChain Comparison/Operation,"
            f" got {type(filters).__name__}"
        )
    parse_filters(translated)  # what is left to check (JSON values, numeric bounds) fails now
    return translated


# -- combining conditions -----------------------------------------------------------------


def _is_operators(value: Any) -> bool:
    return isinstance(value, Mapping) and any(str(op).startswith("$") for op in value)


def _values_of(key: str, condition: Any) -> list[Any] | None:
    """The values an equality or ``$in`` condition accepts (``None`` for a range)."""
    if not _is_operators(condition):
        return [condition]
    if set(condition) == {"$in"} and isinstance(condition["$in"], list | tuple):
        return list(condition["$in"])
    if set(condition) <= set(_NAMED.values()):
        return None
    raise ConfigError(f"filter {key!r}: cannot combine {dict(condition)!r}; {_UNSUPPORTED}")


def _values_condition(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else {"$in": values}


def _both(key: str, a: Any, b: Any) -> Any:
    """The one condition on ``key`` that holds when ``a`` and ``b`` do."""
    va, vb = _values_of(key, a), _values_of(key, b)
    if va is not None and vb is not None:
        common = [v for v in va if any(json_equal(v, w) for w in vb)]
        if not common:
            raise ConfigError(
                f"filter {key!r}: the conditions {a!r} and {b!r} contradict each other, "
                "so nothing could match"
            )
        return _values_condition(common)
    if va is None and vb is None:
        bounds = dict(a)
        for op, bound in b.items():
            if op not in bounds:
                bounds[op] = bound
            else:  # the same bound twice: the stricter one
                pick = max if op in ("$gt", "$gte") else min
                bounds[op] = pick(bounds[op], bound)
        return bounds
    raise ConfigError(
        f"filter {key!r}: an equality cannot be combined with a range; {_UNSUPPORTED}"
    )


def _and(parts: Sequence[Filters]) -> Filters:
    def merge(left: Filters, right: Filters) -> Filters:
        out = dict(left)
        for key, condition in right.items():
            out[key] = _both(key, out[key], condition) if key in out else condition
        return out

    return reduce(merge, parts, {})


def _or(parts: Sequence[Filters], what: str) -> Filters:
    """An OR of equalities / ``$in`` on one key, as one ``$in``; anything else is an error."""
    keys = {key for part in parts for key in part}
    if len(keys) != 1 or any(len(part) != 1 for part in parts):
        raise ConfigError(f"{what}: an OR across fields cannot be translated; {_UNSUPPORTED}")
    (key,) = keys
    values: list[Any] = []
    for part in parts:
        found = _values_of(key, part[key])
        if found is None:
            raise ConfigError(f"{what}: an OR of ranges on {key!r} cannot be translated")
        values += [v for v in found if not any(json_equal(v, w) for w in values)]
    return {key: _values_condition(values)}


def _compare(key: str, symbol: str, value: Any, what: str) -> Filters:
    """One comparison, written with Haystack's / LlamaIndex's symbols."""
    if symbol == "==":
        return {key: value}
    if symbol == "in":
        if not isinstance(value, list | tuple) or not value:
            raise ConfigError(f"{what}: 'in' needs a non-empty list, got {value!r}")
        return {key: {"$in": list(value)}}
    if symbol in _RANGES:
        return {key: {_RANGES[symbol]: value}}
    raise ConfigError(f"{what}: the operator {symbol!r} cannot be translated; {_UNSUPPORTED}")


def _logical(name: str, parts: Sequence[Filters], what: str) -> Filters:
    if not parts:
        raise ConfigError(f"{what}: {name} has no conditions")
    if name == "and":
        return _and(parts)
    if name == "or":
        return _or(parts, what)
    raise ConfigError(f"{what}: {name.upper()} cannot be translated; {_UNSUPPORTED}")


# -- Haystack -----------------------------------------------------------------------------


def _is_haystack(filters: Mapping[Any, Any]) -> bool:
    """Haystack's form: ``{"field", "operator", "value"}`` or ``{"operator", "conditions"}``."""
    keys = set(filters)
    return keys in ({"field", "operator", "value"}, {"operator", "conditions"})


def _haystack(node: Any) -> Filters:
    if not isinstance(node, Mapping) or not _is_haystack(node):
        raise ConfigError(
            "Haystack filter: each condition must be {'field', 'operator', 'value'} or "
            f"{{'operator', 'conditions'}}, got {node!r}"
        )
    operator = str(node["operator"])
    if "conditions" in node:
        conditions = node["conditions"]
        if not isinstance(conditions, list | tuple):
            raise ConfigError(f"Haystack filter: 'conditions' must be a list, got {conditions!r}")
        what = f"Haystack filter {operator!r}"
        return _logical(operator.lower(), [_haystack(c) for c in conditions], what)
    field = str(node["field"])
    what = f"Haystack filter on {field!r}"
    if not field.startswith("meta."):
        raise ConfigError(
            f"{what}: zerda filters on metadata only (fields 'meta.<key>'), not on {field!r}"
        )
    return _compare(field.removeprefix("meta."), operator, node["value"], what)


# -- LlamaIndex ---------------------------------------------------------------------------


def _enum_value(value: Any) -> str:
    return str(getattr(value, "value", value))


def _llamaindex(filters: Any) -> Filters:
    parts: list[Filters] = []
    for item in filters.filters:
        if hasattr(item, "filters"):  # nested MetadataFilters
            parts.append(_llamaindex(item))
            continue
        key = str(item.key)
        what = f"LlamaIndex MetadataFilter on {key!r}"
        parts.append(_compare(key, _enum_value(item.operator), item.value, what))
    condition = _enum_value(getattr(filters, "condition", None) or "and").lower()
    return _logical(condition, parts, "LlamaIndex MetadataFilters")


# -- LangChain ----------------------------------------------------------------------------


def _langchain(node: Any) -> Filters:
    if hasattr(node, "comparator"):
        key, comparator = str(node.attribute), _enum_value(node.comparator)
        what = f"LangChain Comparison on {key!r}"
        symbol = {"eq": "==", "in": "in"}.get(comparator)
        if symbol is not None:
            return _compare(key, symbol, node.value, what)
        if comparator in _NAMED:
            return {key: {_NAMED[comparator]: node.value}}
        raise ConfigError(f"{what}: {comparator!r} cannot be translated; {_UNSUPPORTED}")
    operator = _enum_value(node.operator)
    parts = [_langchain(argument) for argument in node.arguments]
    return _logical(operator.lower(), parts, f"LangChain Operation {operator!r}")


def _mongo(filters: Mapping[Any, Any]) -> Filters:
    """zerda's language plus the Mongo-style forms LangChain vector stores take."""
    parts: list[Filters] = []
    for key, condition in filters.items():
        if not isinstance(key, str):
            raise ConfigError(f"filter key {key!r} is not a string")
        if key in ("$and", "$or"):
            if not isinstance(condition, list | tuple):
                raise ConfigError(f"filter {key!r} needs a list of filters, got {condition!r}")
            translated = [_mongo(part) if isinstance(part, Mapping) else part for part in condition]
            if any(not isinstance(part, dict) for part in translated):
                raise ConfigError(f"filter {key!r}: every item must be a filter mapping")
            parts.append(_logical(key[1:], translated, f"filter {key!r}"))
        elif key.startswith("$"):
            raise ConfigError(f"filter {key!r}: unknown operator; {_UNSUPPORTED}")
        elif _is_operators(condition) and "$eq" in condition:
            rest = {op: v for op, v in condition.items() if op != "$eq"}
            parts.append({key: condition["$eq"]})
            if rest:
                parts.append({key: rest})
        else:
            parts.append({key: condition})
    return _and(parts)
