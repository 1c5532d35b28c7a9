"""Request and response bodies of the HTTP service (msgspec Structs) and their conversions.

Requests are decoded strictly: unknown fields, wrong types and out-of-range
values are rejected and :func:`decode_request` names the offending field.
What clients send is data only: the query is text, ``metadata_filters`` map
keys to JSON scalars compared with ``==`` (they boost), ``filters`` map keys to
a scalar or one small operator object (``$in``, ``$gt``, ``$gte``, ``$lt``,
``$lte``; they restrict) — no field is ever read as a regular expression, a
file path or configuration.

Responses never encode the caller's chunk objects directly: results go through
:func:`zerda_async.apps._wire.result_out` (re-exported here with its Structs).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta

from zerda_async.apps._wire import AnalysisOut, ChunkOut, ContextResponse, jsonable, result_out
from zerda_async.core.filter_language import parse_filters
from zerda_async.errors import ConfigError, RequestBodyError

__all__ = [
    "MAX_QUERIES",
    "MAX_QUERY_CHARS",
    "AnalysisOut",
    "AnswerRequest",
    "ChunkOut",
    "ContextRequest",
    "ContextResponse",
    "ErrorBody",
    "Health",
    "MultiRequest",
    "MultiResponse",
    "Ready",
    "SessionId",
    "SessionOut",
    "TurnOut",
    "decode_request",
    "jsonable",
    "result_out",
]

MAX_QUERY_CHARS = 4096
"""The longest query (and each of a multi request's ``queries``) accepted, in characters."""
MAX_QUERIES = 16
"""The most queries one ``/v1/context/multi`` request may hold."""

TemplateName = Literal["auto", "arabic", "english", "minimal", "structured"]
Query = Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S")]
FilterKey = Annotated[str, Meta(min_length=1, max_length=128)]
FilterValue = Annotated[str, Meta(max_length=1024)] | int | float | bool | None
Filters = Annotated[dict[FilterKey, FilterValue], Meta(max_length=32)]
Operator = Annotated[str, Meta(pattern=r"^\$(in|gt|gte|lt|lte)$")]
Condition = Annotated[
    dict[Operator, FilterValue | Annotated[list[FilterValue], Meta(max_length=256)]],
    Meta(min_length=1, max_length=4),
]
RestrictFilters = Annotated[dict[FilterKey, FilterValue | Condition], Meta(max_length=32)]
Budget = Annotated[int, Meta(ge=1, le=1_000_000)]
MaxChunks = Annotated[int, Meta(ge=1, le=1000)]
SessionId = Annotated[str, Meta(min_length=1, max_length=128)]


class ContextRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/context`` and ``POST /v1/context/stream``."""

    query: Query
    metadata_filters: Filters | None = None
    max_chunks: MaxChunks | None = None
    budget: Budget | None = None
    session_id: SessionId | None = None
    template: TemplateName | None = None
    filters: RestrictFilters | None = None


class MultiRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/context/multi`` (one section per query, sharing one budget)."""

    queries: Annotated[list[Query], Meta(min_length=1, max_length=MAX_QUERIES)]
    global_budget: Budget | None = None
    use_weighted: bool = True
    metadata_filters: Filters | None = None
    max_chunks: MaxChunks | None = None
    session_id: SessionId | None = None
    template: TemplateName | None = None
    filters: RestrictFilters | None = None


class MultiResponse(msgspec.Struct, kw_only=True):
    """Result of ``POST /v1/context/multi``."""

    context: str
    context_length: int
    queries: list[str]
    template: str
    elapsed_ms: float


class AnswerRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/sessions/{session_id}/answer``: the LLM's answer to the last turn."""

    answer: Annotated[str, Meta(max_length=1 << 16)]


class TurnOut(msgspec.Struct, kw_only=True):
    """One turn of a session: the query and the answer recorded for it (``""`` until then)."""

    query: str
    answer: str


class SessionOut(msgspec.Struct, kw_only=True):
    """Body of ``GET /v1/sessions/{session_id}`` (and of a recorded answer)."""

    session_id: str
    turns: list[TurnOut]


class Ready(msgspec.Struct, kw_only=True):
    """Body of ``GET /readyz``: each configured store, ``"ok"`` or why it does not answer."""

    status: str
    stores: dict[str, str]


class ErrorBody(msgspec.Struct, kw_only=True):
    """Every error response: a message, the status and, for 422, the offending field."""

    error: str
    status: int
    field: str | None = None


class Health(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Body of ``GET /healthz``."""

    status: str
    in_flight: int
    templates_loaded: list[str]
    index: dict[str, Any]
    error: str | None = None
    """Why the engine cannot serve (``status`` is then ``"unavailable"``, HTTP 503)."""


# -- decoding -------------------------------------------------------------------------

_AT = re.compile(r" - at `(?:key` in `)?\$\.?(?P<path>[^`]*)`$")
_NAMED = re.compile(r"(?:missing required|unknown) field `(?P<name>[^`]+)`")

_Req = TypeVar("_Req", ContextRequest, MultiRequest, AnswerRequest)


def _field_of(message: str) -> str | None:
    at = _AT.search(message)
    path = at.group("path").replace("[...]", "") if at else ""
    named = _NAMED.search(message)
    if named:
        return f"{path}.{named.group('name')}" if path else named.group("name")
    return path or None


def decode_request(body: bytes, kind: type[_Req]) -> _Req:
    """Decode ``body`` as ``kind``; raises :class:`RequestBodyError` naming the bad field."""
    try:
        req = msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise RequestBodyError(str(exc), _field_of(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise RequestBodyError(f"malformed JSON: {exc}", None) from None
    if not isinstance(req, AnswerRequest):
        check_filters(req.filters)
    return req


def check_filters(filters: dict[str, Any] | None) -> None:
    """What the schema cannot say (``$in`` needs a list, a bound a number): 422 naming the key."""
    try:
        parse_filters(filters)
    except ConfigError as exc:
        raise RequestBodyError(str(exc), "filters") from None
