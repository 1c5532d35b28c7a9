"""Typed events yielded by ``AsyncContextEngine.stream()``.

One event per stage, in pipeline order, each with the request id and the
stage's duration in milliseconds: ``analysis``, ``retrieved``, ``filtered``,
``ranked`` (which carries the sources, once), ``composed``, ``guarded`` and
finally ``done`` with the whole :class:`~zerda_async.core.models.ContextResult`
— or ``error`` instead.  A cache hit yields ``analysis`` then ``done``.
All events are msgspec Structs tagged by ``event`` and encode to JSON directly;
``event.event`` (or :func:`event_name`) reads that tag, the same name the JSON carries.
"""

from __future__ import annotations

from typing import Any

import msgspec

from zerda_async.core.models import ContextResult

__all__ = [
    "AnalysisEvent",
    "ComposedEvent",
    "DoneEvent",
    "ErrorEvent",
    "FilteredEvent",
    "GuardedEvent",
    "RankedEvent",
    "RetrievedEvent",
    "SourceRef",
    "StageEvent",
    "event_name",
]


class _Event(msgspec.Struct, tag_field="event", kw_only=True):
    request_id: str
    duration_ms: float = 0.0

    @property
    def event(self) -> str:
        """The event's name: its ``event`` tag (``"analysis"``, ..., ``"done"``, ``"error"``)."""
        # The tag is class-level configuration, not a field: encoding writes it
        # under "event", and this property reads the same name in Python.
        return str(type(self).__struct_config__.tag)


class AnalysisEvent(_Event, tag="analysis"):
    """The query analysis (of the enriched query when history applied).

    ``budget`` is the context budget the request uses (after the adaptive
    adjustment or ``override_budget``).
    """

    intent: str
    complexity: str
    language: str
    keywords: list[str]
    budget: int


class RetrievedEvent(_Event, tag="retrieved"):
    """Number of candidates retrieved."""

    count: int


class FilteredEvent(_Event, tag="filtered"):
    """Number of candidates left after filtering."""

    count: int


class SourceRef(msgspec.Struct):
    """One ranked chunk: its id, source label and composite score."""

    doc_id: Any
    source: Any
    score: float


class RankedEvent(_Event, tag="ranked"):
    """The ranked chunks' sources in their final order (after a reranker), sent once,
    before the context; ``duration_ms`` covers ranking and reranking."""

    count: int
    sources: list[SourceRef]


class ComposedEvent(_Event, tag="composed"):
    """Length of the composed context and the budget it was packed into."""

    context_length: int
    budget: int


class GuardedEvent(_Event, tag="guarded"):
    """Guard outcome."""

    passed: bool
    warnings: list[str]


class DoneEvent(_Event, tag="done"):
    """The final result (including the context)."""

    result: ContextResult


class ErrorEvent(_Event, tag="error"):
    """The request failed in ``stage`` with ``error_type``/``message``."""

    stage: str
    error_type: str
    message: str


StageEvent = (
    AnalysisEvent
    | RetrievedEvent
    | FilteredEvent
    | RankedEvent
    | ComposedEvent
    | GuardedEvent
    | DoneEvent
    | ErrorEvent
)
"""Any event ``stream()`` yields."""


def event_name(event: StageEvent) -> str:
    """The name of ``event`` (its ``event`` tag): ``"analysis"``, ..., ``"done"``, ``"error"``."""
    return event.event
