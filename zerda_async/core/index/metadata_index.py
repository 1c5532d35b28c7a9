"""Metadata matching over columns: per key, the positions holding it and a value code each.

Matching is plain ``==`` equality (operator dicts such as ``{"$gte": 3}`` only
match an equal dict).  Plain scalar values (``str``, ``int``, ``float``,
``bool``, ``None``, ``bytes``, NaN excluded) get an integer code per key;
Python scalars that compare equal hash equal, so one dictionary lookup gives
the ``==`` answer for all of them and a filter pair becomes one vectorised
comparison of the key's code column.  Other values (lists, dicts, NaN, custom
objects) sit in a short per-key side list compared with a real ``==``, and
chunks whose metadata is not a mapping are evaluated the slow way per query.

:meth:`MetadataIndex.mask` evaluates the restricting filter language of
:mod:`zerda_async.core.filter_language` (JSON equality, ``$in``, numeric ranges)
to a boolean mask over the positions, with the same code columns: per query it
costs one pass over each key's distinct values and vectorised comparisons, never
Python work per chunk.  Booleans share a code with the equal numbers (``True ==
1``), so each column also marks which of its entries hold a boolean.

Metadata is snapshotted when chunks are indexed.  A :class:`MetadataIndex`
is immutable; the per-key code tables only grow and are shared by successive
snapshots (a code unknown to an older snapshot simply matches nothing there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..filter_language import Condition, in_range, is_number, json_equal

__all__ = ["MetadataIndex"]

_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), bytes})
_OTHER = -1


def _is_plain(value: Any) -> bool:
    # NaN is not equal to itself, so it can never be found through a dict lookup.
    return type(value) in _PLAIN_TYPES and value == value


@dataclass(frozen=True, slots=True)
class _Column:
    """Where one metadata key's values live: ascending positions and their value codes."""

    positions: NDArray[np.int64]
    codes: NDArray[np.int32]
    table: dict[Any, int]
    others: tuple[tuple[int, Any], ...]
    bools: NDArray[np.bool_]
    """Per entry: the value is a ``bool`` (its code is shared with ``0``/``1``)."""


@dataclass(slots=True)
class _Builder:
    positions: list[int]
    codes: list[int]
    others: list[tuple[int, Any]]
    bools: list[bool]


def _collect(
    metadatas: Iterable[Any], start: int, tables: dict[Any, dict[Any, int]]
) -> tuple[dict[Any, _Builder], list[tuple[int, Any]]]:
    builders: dict[Any, _Builder] = {}
    opaque: list[tuple[int, Any]] = []
    for position, meta in enumerate(metadatas, start):
        if not isinstance(meta, Mapping):
            opaque.append((position, meta))
            continue
        for key, value in meta.items():
            builder = builders.get(key)
            if builder is None:
                builder = builders[key] = _Builder([], [], [], [])
                tables.setdefault(key, {})
            builder.positions.append(position)
            builder.bools.append(type(value) is bool)
            if _is_plain(value):
                table = tables[key]
                builder.codes.append(table.setdefault(value, len(table)))
            else:
                builder.codes.append(_OTHER)
                builder.others.append((position, value))
    return builders, opaque


@dataclass(frozen=True, slots=True)
class MetadataIndex:
    """One immutable metadata index generation (see the module docstring)."""

    columns: dict[Any, _Column]
    opaque: tuple[tuple[int, Any], ...]
    n_positions: int
    live: NDArray[np.bool_] | None = None

    @classmethod
    def build(cls, metadatas: Iterable[Any]) -> MetadataIndex:
        """An index over one metadata object per position (``chunk_metadata`` values)."""
        return cls(columns={}, opaque=(), n_positions=0).appended(list(metadatas))

    def appended(self, metadatas: list[Any]) -> MetadataIndex:
        """A new snapshot with ``metadatas`` at the next positions (all live)."""
        if not metadatas:
            return self
        tables = {key: column.table for key, column in self.columns.items()}
        builders, opaque = _collect(metadatas, self.n_positions, tables)
        columns = dict(self.columns)
        empty = np.empty(0, dtype=np.int64)
        for key, builder in builders.items():
            old = columns.get(key)
            columns[key] = _Column(
                positions=np.concatenate(
                    (empty if old is None else old.positions, np.array(builder.positions))
                ).astype(np.int64),
                codes=np.concatenate(
                    (
                        np.empty(0, np.int32) if old is None else old.codes,
                        np.array(builder.codes, dtype=np.int32),
                    )
                ),
                table=tables[key],
                others=(() if old is None else old.others) + tuple(builder.others),
                bools=np.concatenate(
                    (
                        np.empty(0, np.bool_) if old is None else old.bools,
                        np.array(builder.bools, dtype=np.bool_),
                    )
                ),
            )
        live = self.live
        if live is not None:
            live = np.concatenate((live, np.ones(len(metadatas), dtype=bool)))
        return replace(
            self,
            columns=columns,
            opaque=self.opaque + tuple(opaque),
            n_positions=self.n_positions + len(metadatas),
            live=live,
        )

    def with_live(self, live: NDArray[np.bool_]) -> MetadataIndex:
        """The same columns with a new live mask."""
        return replace(self, live=live)

    def compacted(self, renumber: NDArray[np.int64], n_new: int) -> MetadataIndex:
        """Drop removed positions: ``renumber`` maps old positions to new ones or ``-1``."""
        columns = {}
        for key, column in self.columns.items():
            new_positions = renumber[column.positions]
            keep = new_positions >= 0
            if not keep.any():
                continue
            columns[key] = _Column(
                positions=new_positions[keep],
                codes=column.codes[keep],
                table=column.table,
                others=_renumbered(column.others, renumber),
                bools=column.bools[keep],
            )
        return MetadataIndex(
            columns=columns,
            opaque=_renumbered(self.opaque, renumber),
            n_positions=n_new,
        )

    def matches(self, filters: Mapping[Any, Any]) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
        """Live positions matching at least one filter pair (ascending) and their match counts."""
        counts = np.zeros(self.n_positions, dtype=np.int64)
        for key, wanted in filters.items():
            column = self.columns.get(key)
            if column is None:
                continue
            if _is_plain(wanted):
                code = column.table.get(wanted)
                selected = column.codes == (_OTHER - 1 if code is None else code)
            else:
                # list() copies the shared table in C, safe against a writer.
                codes = [c for value, c in list(column.table.items()) if value == wanted]
                selected = np.isin(column.codes, codes)
            # Each position holds one value per key, so these are unique.
            counts[column.positions[selected]] += 1
            equal = [position for position, value in column.others if value == wanted]
            counts[equal] += 1
        for position, meta in self.opaque:
            counts[position] += sum(1 for k, v in filters.items() if k in meta and meta[k] == v)
        if self.live is not None:
            counts[~self.live] = 0
        hits = np.flatnonzero(counts > 0)
        return hits, counts[hits]

    def mask(self, conditions: tuple[Condition, ...]) -> NDArray[np.bool_]:
        """Live positions whose metadata satisfy every condition (the filter language)."""
        allowed = np.ones(self.n_positions, dtype=bool) if self.live is None else self.live.copy()
        for cond in conditions:
            column = self.columns.get(cond.key)
            hit = np.zeros(self.n_positions, dtype=bool)
            if column is not None:
                hit[column.positions[_column_hits(column, cond)]] = True
                for position, value in column.others:
                    if _satisfies(value, cond):
                        hit[position] = True
            # Chunks whose metadata is not a mapping never match (as in ``matches``).
            allowed &= hit
        return allowed


def _satisfies(value: Any, cond: Condition) -> bool:
    if cond.kind == "range":
        return in_range(value, cond.bounds)
    return any(json_equal(value, wanted) for wanted in cond.values)


def _column_hits(column: _Column, cond: Condition) -> NDArray[np.bool_]:
    """Per entry of ``column``: its (plain, coded) value satisfies ``cond``."""
    # One pass over the distinct values (list() copies the shared table in C).
    entries = list(column.table.items())
    if cond.kind == "range":
        # A table key may be the bool that first took a code shared with 0 or 1:
        # read it as that number, and leave out the entries that hold a bool.
        good = [
            code
            for value, code in entries
            if (is_number(value) or type(value) is bool)
            and in_range(int(value) if type(value) is bool else value, cond.bounds)
        ]
        return np.isin(column.codes, good) & ~column.bools
    hits = np.zeros(column.codes.shape[0], dtype=bool)
    for wanted in cond.values:
        if not _is_plain(wanted):
            continue  # lists and objects live in ``others``
        code = column.table.get(wanted)
        if code is None:
            continue
        selected = column.codes == code
        if type(wanted) is bool:
            selected &= column.bools
        elif is_number(wanted):
            selected &= ~column.bools
        hits |= selected
    return hits


def _renumbered(
    pairs: tuple[tuple[int, Any], ...], renumber: NDArray[np.int64]
) -> tuple[tuple[int, Any], ...]:
    return tuple(
        (int(renumber[position]), value) for position, value in pairs if renumber[position] >= 0
    )
