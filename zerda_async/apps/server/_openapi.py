"""``GET /openapi.json``: the OpenAPI 3.1 description of the service.

Every request and response body is the JSON Schema msgspec generates from the
very Structs the service decodes and encodes
(:func:`msgspec.json.schema_components`), so the description cannot drift
from what the endpoints accept and answer.
"""

from __future__ import annotations

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


def _post(summary: str, body: Any, ok: dict[str, Any]) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "requestBody": {"required": True, "content": _json_content(_ref(body))},
            "responses": {"200": ok, **_errors(401, 413, 415, 422, 500, 503, 504)},
        }
    }


_SESSION_PARAMETER = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1, "maxLength": 128},
}


def _paths() -> dict[str, Any]:
    stream_schema = {"oneOf": [_ref(kind) for kind in _STREAM_EVENTS]}
    return {
        "/v1/context": _post(
            "Build the context for one query",
            ContextRequest,
            {"description": "the result", "content": _json_content(_ref(ContextResponse))},
        ),
        "/v1/context/stream": _post(
            "The same request, its stage events as Server-Sent Events",
            ContextRequest,
            {
                "description": "one `event:`/`data:` record per stage, then `done` or `error`; "
                "each `data` line is one of these JSON documents",
                "content": {"text/event-stream": {"schema": stream_schema}},
            },
        ),
        "/v1/context/multi": _post(
            "One context for several queries sharing a budget",
            MultiRequest,
            {"description": "the combined context", "content": _json_content(_ref(MultiResponse))},
        ),
        "/v1/sessions/{session_id}": {
            "get": {
                "summary": "The turns of a session (query and recorded answer), oldest first",
                "parameters": [_SESSION_PARAMETER],
                "responses": {
                    "200": {
                        "description": "the session",
                        "content": _json_content(_ref(SessionOut)),
                    },
                    **_errors(401, 422, 503, 504),
                },
            }
        },
        "/v1/sessions/{session_id}/answer": {
            "post": {
                "summary": "Record the LLM's answer on the session's last turn",
                "parameters": [_SESSION_PARAMETER],
                "requestBody": {"required": True, "content": _json_content(_ref(AnswerRequest))},
                "responses": {
                    "200": {
                        "description": "the session",
                        "content": _json_content(_ref(SessionOut)),
                    },
                    **_errors(401, 404, 413, 415, 422, 503, 504),
                },
            }
        },
        "/readyz": {
            "get": {
                "summary": "Whether every configured store answers",
                "responses": {
                    "200": {"description": "ready", "content": _json_content(_ref(Ready))},
                    "503": {
                        "description": "a store (named) does not answer",
                        "content": _json_content(_ref(Ready)),
                    },
                    **_errors(401),
                },
            }
        },
        "/healthz": {
            "get": {
                "summary": "Whether the default template's engine serves",
                "security": [],
                "responses": {
                    "200": {"description": "ok", "content": _json_content(_ref(Health))},
                    "503": {
                        "description": "the engine cannot serve",
                        "content": _json_content(_ref(Health)),
                    },
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus text metrics",
                "responses": {
                    "200": {
                        "description": "metrics",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(401),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {
                    "200": {"description": "OpenAPI 3.1", "content": _json_content({})},
                    **_errors(401),
                },
            }
        },
        "/": {
            "get": {
                "summary": "The page for a person (`?q=` runs that question on load)",
                "security": [],
                "parameters": [
                    {"name": "q", "in": "query", "required": False, "schema": {"type": "string"}},
                    {
                        "name": "template",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "HTML",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        **{
            f"/page.{ext}": {
                "get": {
                    "summary": f"The page's {kind} (static)",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": kind,
                            "content": {media: {"schema": {"type": "string"}}},
                        }
                    },
                }
            }
            for ext, kind, media in (
                ("js", "script", "text/javascript"),
                ("css", "style sheet", "text/css"),
            )
        },
    }


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
