"""What every part of the service shares: its settings, JSON responses, body reading."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from zerda_async.apps import HTTPProblem
from zerda_async.apps._profiles import EF_SEARCH
from zerda_async.apps.server._schemas import ErrorBody
from zerda_async.core.config import ContextEngineConfig
from zerda_async.errors import MediaTypeError

__all__ = [
    "ServiceSettings",
    "default_template_of",
    "json_response",
    "problem_response",
    "read_body",
    "route_path",
]


class ServiceSettings(msgspec.Struct, kw_only=True):
    """Limits and access of the service (all per process)."""

    max_body_bytes: int = 1 << 20
    """Larger request bodies get 413."""
    request_timeout: float = 30.0
    """Seconds a request may take (engine start included) before 504."""
    max_pending: int = 256
    """Requests allowed inside at once; more get 503 with ``Retry-After``."""
    retry_after: int = 1
    """Seconds sent in ``Retry-After`` with a 503."""
    default_template: str | None = None
    """Composer template of requests that name none: a template name or ``"auto"``
    (picks Arabic or English by the query's language).  ``None`` (the default) takes
    the template of the index's profile — ``auto`` for an index built with the
    recommended profile, ``arabic`` for the documented one — as ``zerda serve`` does;
    see :func:`default_template_of`.  The service's one engine is opened with it."""
    cors_origins: list[str] = msgspec.field(default_factory=list)
    """Origins allowed to call the service from a browser (CORS); none by default."""
    api_key: str | None = None
    """When set, every endpoint but ``/healthz`` and the page's static files requires
    ``Authorization: Bearer <api_key>`` (401 otherwise)."""
    vector_search: str = "exact"
    """Where and how a PostgreSQL index store searches (``zerda serve --search``):
    ``"exact"`` or ``"hnsw"`` (its HNSW index) in PostgreSQL, or ``"local"`` (in each
    replica, over its own copy of the whole index, caught up from PostgreSQL)."""
    ef_search: int = EF_SEARCH
    """HNSW candidate list size (with ``vector_search="hnsw"``; ``zerda serve --ef-search``)."""


def default_template_of(settings: ServiceSettings, index_config: ContextEngineConfig) -> str:
    """The template of requests that name none: ``settings.default_template``, else the
    template of ``index_config`` (the configuration the index was built with).

    The one place this default is decided, for ``zerda serve``, :func:`index_app`
    and :func:`store_app` alike.
    """
    if settings.default_template is not None:
        return settings.default_template
    template: str = index_config.composer.template
    return template


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """``data`` encoded by msgspec as an ``application/json`` response."""
    return Response(
        msgspec.json.encode(data),
        status_code=status,
        headers=headers,
        media_type="application/json",
    )


def problem_response(problem: HTTPProblem) -> Response:
    """The JSON :class:`ErrorBody` of ``problem`` with its status and headers."""
    body = ErrorBody(error=problem.message, status=problem.status, field=problem.field)
    return json_response(body, problem.status, problem.headers)


def _check_media_type(request: Request) -> None:
    # A missing Content-Type is read as JSON (plain HTTP clients omit it); a
    # declared one must be JSON, so a form post or text/plain is refused, not guessed.
    declared = request.headers.get("content-type")
    if declared is None:
        return
    media = declared.split(";", 1)[0].strip().lower()
    if media != "application/json" and not (
        media.startswith("application/") and media.endswith("+json")
    ):
        raise MediaTypeError(f"request body must be application/json, not {media or '(empty)'}")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body as JSON bytes: 415 unless declared JSON, 413 past ``limit`` bytes."""
    _check_media_type(request)
    declared = request.headers.get("content-length")
    too_large = HTTPProblem(413, f"request body larger than {limit} bytes")
    if declared is not None:
        if not declared.isdigit():
            raise HTTPProblem(400, "invalid Content-Length header")
        if int(declared) > limit:
            raise too_large
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise too_large
        parts.append(part)
    return b"".join(parts)


def route_path(scope: MutableMapping[str, Any]) -> str:
    """The path inside this application, also when it is mounted under a prefix."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    # Mounted (Starlette >= 0.33): ``path`` keeps the prefix, ``root_path`` holds it.
    if root and path.startswith(root):
        path = path[len(root) :]
    return path or "/"


_SESSIONS = "/v1/sessions/"


def route_template(path: str) -> str:
    """The route a path belongs to (``/v1/sessions/abc`` -> ``/v1/sessions/{session_id}``).

    Metrics and the access log print this, never a client's session id.
    """
    if path.startswith(_SESSIONS) and len(path) > len(_SESSIONS):
        if path.endswith("/answer"):
            return "/v1/sessions/{session_id}/answer"
        return "/v1/sessions/{session_id}"
    return path
