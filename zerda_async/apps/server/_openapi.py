"""``GET /openapi.json``: the OpenAPI 3.1 description of the service.

Every request and response body is the JSON Schema msgspec generates from the
very Structs the service decodes and encodes
(:func:`msgspec.json.schema_components`), so the description cannot drift
from what the endpoints accept and answer.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import msgspec

from zerda_async.apps.server._schemas import (
    AnswerRequest,
    ContextRequest,
    ContextResponse,
    ErrorBody,
    Health,
    MultiRequest,
    MultiResponse,
    Ready,
    SessionOut,
)
from zerda_async.events import (
    AnalysisEvent,
    ComposedEvent,
    FilteredEvent,
    GuardedEvent,
    RankedEvent,
    RetrievedEvent,
)

__all__ = ["StreamDone", "StreamError", "openapi_document"]

_REF = "#/components/schemas/{name}"


class StreamDone(msgspec.Struct, kw_only=True):
    """The last record of a stream that succeeded: the whole result."""

    event: Literal["done"]
    request_id: str
    duration_ms: float
    result: ContextResponse


class StreamError(msgspec.Struct, kw_only=True):
    """The last record of a stream that failed (``status`` when the service ended it)."""

    event: Literal["error"]
    stage: str
    error_type: str
    message: str
    request_id: str = ""
    duration_ms: float = 0.0
    status: int | None = None


_STREAM_EVENTS = (
    AnalysisEvent,
    RetrievedEvent,
    FilteredEvent,
    RankedEvent,
    ComposedEvent,
    GuardedEvent,
    StreamDone,
    StreamError,
)
_TYPES: tuple[Any, ...] = (
    ContextRequest,
    MultiRequest,
    ContextResponse,
    MultiResponse,
    Health,
    ErrorBody,
    AnswerRequest,
    SessionOut,
    Ready,
    *_STREAM_EVENTS,
)


def _ref(kind: Any) -> dict[str, str]:
    return {"$ref": _REF.format(name=kind.__name__)}


def _json_content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _errors(*statuses: int) -> dict[str, Any]:
    reasons = {
        401: "missing or wrong API key (when the service has one)",
        413: "body larger than the limit",
        415: "body not declared as application/json",
        422: "body does not validate; `field` names the offending field",
        500: "a stage failed",
        404: "the session has no turn",
        503: "too many requests in progress, the engine cannot start, or a store it needs"
        " does not answer (the message names it; Retry-After)",
        504: "past the request deadline",
    }
    return {
        str(s): {"description": reasons[s], "content": _json_content(_ref(ErrorBody))}
        for s in statuses
    }


_REQUEST_ERRORS = (401, 413, 415, 422, 500, 503, 504)
"""What a request endpoint (a JSON body run through the engine) may answer besides 200."""

_SESSION_PARAMETER = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1, "maxLength": 128},
}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A response with a JSON body of ``schema``."""
    return {"description": description, "content": _json_content(schema)}


def _text(description: str, media: str) -> dict[str, Any]:
    """A response with a text body of the ``media`` type."""
    return {"description": description, "content": {media: {"schema": {"type": "string"}}}}


def _query_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}


def _operation(
    method: Literal["get", "post"],
    summary: str,
    ok: dict[str, Any],
    *,
    body: Any = None,
    parameters: tuple[dict[str, Any], ...] = (),
    errors: tuple[int, ...] = (),
    also: dict[str, Any] | None = None,
    public: bool = False,
) -> dict[str, Any]:
    """One path's operation: ``ok`` is its 200 response, ``also`` other documented ones.

    ``public`` exempts it from the bearer key; ``errors`` are the statuses
    answered with an :class:`ErrorBody`.
    """
    operation: dict[str, Any] = {"summary": summary}
    if public:
        operation["security"] = []
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json_content(_ref(body))}
    operation["responses"] = {"200": ok, **(also or {}), **_errors(*errors)}
    return {method: operation}


_STREAM_OK = {
    "description": "one `event:`/`data:` record per stage, then `done` or `error`; "
    "each `data` line is one of these JSON documents",
    "content": {"text/event-stream": {"schema": {"oneOf": [_ref(k) for k in _STREAM_EVENTS]}}},
}

_PATHS: dict[str, Any] = {
    "/v1/context": _operation(
        "post",
        "Build the context for one query",
        _json("the result", _ref(ContextResponse)),
        body=ContextRequest,
        errors=_REQUEST_ERRORS,
    ),
    "/v1/context/stream": _operation(
        "post",
        "The same request, its stage events as Server-Sent Events",
        _STREAM_OK,
        body=ContextRequest,
        errors=_REQUEST_ERRORS,
    ),
    "/v1/context/multi": _operation(
        "post",
        "One context for several queries sharing a budget",
        _json("the combined context", _ref(MultiResponse)),
        body=MultiRequest,
        errors=_REQUEST_ERRORS,
    ),
    "/v1/sessions/{session_id}": _operation(
        "get",
        "The turns of a session (query and recorded answer), oldest first",
        _json("the session", _ref(SessionOut)),
        parameters=(_SESSION_PARAMETER,),
        errors=(401, 422, 503, 504),
    ),
    "/v1/sessions/{session_id}/answer": _operation(
        "post",
        "Record the LLM's answer on the session's last turn",
        _json("the session", _ref(SessionOut)),
        body=AnswerRequest,
        parameters=(_SESSION_PARAMETER,),
        errors=(401, 404, 413, 415, 422, 503, 504),
    ),
    "/readyz": _operation(
        "get",
        "Whether every configured store answers",
        _json("ready", _ref(Ready)),
        also={"503": _json("a store (named) does not answer", _ref(Ready))},
        errors=(401,),
    ),
    "/healthz": _operation(
        "get",
        "Whether the default template's engine serves",
        _json("ok", _ref(Health)),
        also={"503": _json("the engine cannot serve", _ref(Health))},
        public=True,
    ),
    "/metrics": _operation(
        "get", "Prometheus text metrics", _text("metrics", "text/plain"), errors=(401,)
    ),
    "/openapi.json": _operation("get", "This document", _json("OpenAPI 3.1", {}), errors=(401,)),
    "/": _operation(
        "get",
        "The page for a person (`?q=` runs that question on load)",
        _text("HTML", "text/html"),
        parameters=(_query_parameter("q"), _query_parameter("template")),
        public=True,
    ),
    **{
        f"/page.{ext}": _operation(
            "get", f"The page's {kind} (static)", _text(kind, media), public=True
        )
        for ext, kind, media in (
            ("js", "script", "text/javascript"),
            ("css", "style sheet", "text/css"),
        )
    },
}
"""The service's routes, in the document's order."""


def _paths() -> dict[str, Any]:
    # A copy: a caller may change the document it is given.
    return copy.deepcopy(_PATHS)


def openapi_document(*, api_key: bool, title: str = "zerda-async") -> dict[str, Any]:
    """The OpenAPI 3.1 document of the service (``api_key``: whether bearer auth is on)."""
    _, schemas = msgspec.json.schema_components(_TYPES, ref_template=_REF)
    components: dict[str, Any] = {"schemas": schemas}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": "1",
            "description": "Budget-bounded, cited contexts for LLM prompts.",
        },
        "paths": _paths(),
        "components": components,
    }
    if api_key:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc
