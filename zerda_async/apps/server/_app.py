"""The ASGI application of the HTTP service (Starlette).

Endpoints:

* ``POST /v1/context`` — one :class:`~.schemas.ContextRequest`, the result as JSON;
* ``POST /v1/context/stream`` — the same request; the stage events as
  Server-Sent Events (``analysis`` ... ``guarded``, then ``done`` with the full
  result, or ``error``);
* ``POST /v1/context/multi`` — a :class:`~.schemas.MultiRequest` run with
  ``run_multi``;
* ``POST /v1/sessions/{session_id}/answer`` records the LLM's answer on the
  session's last turn; ``GET /v1/sessions/{session_id}`` returns its turns;
* ``GET /readyz`` — 200 when every configured store answers, else 503 naming it;
* ``GET /healthz``, ``GET /metrics`` (Prometheus text format) and
  ``GET /openapi.json`` (OpenAPI 3.1, from the msgspec schemas);
* ``GET /`` — the page for a person (``/page.js``, ``/page.css``).

Errors are JSON :class:`~.schemas.ErrorBody` documents, their statuses from
the one table of :mod:`zerda_async.apps` (``REPORTS``): 422 for a body that does not
validate (with the field), 415 for a body not declared as JSON, 413 for a
body over ``max_body_bytes``, 401 without the API key (when one is set), 503
with ``Retry-After`` when ``max_pending`` requests are already inside, 504
past ``request_timeout``.  A stream that passes its deadline after its first
event ends with an ``error`` event (``status`` 504).

One engine serves every request, whatever template it names (the template is
a run option); it is opened at start-up by a task that owns it and closes it
at shutdown (:mod:`._pool`; mounted in another application, the first request
starts it); the application never reads paths or patterns from requests.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zerda_async.apps import HTTPProblem, report_for, stage_failure
from zerda_async.apps.server._access import AccessLogMiddleware, BearerAuthMiddleware
from zerda_async.apps.server._common import (
    ServiceSettings,
    default_template_of,
    json_response,
    problem_response,
)
from zerda_async.apps.server._metrics import Metrics, MetricsMiddleware
from zerda_async.apps.server._openapi import openapi_document
from zerda_async.apps.server._page import Page
from zerda_async.apps.server._pool import EngineOpener, EnginePool
from zerda_async.apps.server._replica import StoreSet
from zerda_async.apps.server._routes import Service
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.templates import TEMPLATE_NAMES
from zerda_async.errors import (
    ConfigError,
    RequestBodyError,
    StageFailedError,
    StoreUnavailableError,
    ZerdaError,
)

__all__ = ["ROUTES", "EngineOpener", "EnginePool", "ServiceSettings", "create_app"]

_logger = logging.getLogger("uvicorn.error")

ROUTES = (
    "/v1/context",
    "/v1/context/stream",
    "/v1/context/multi",
    "/healthz",
    "/readyz",
    "/v1/sessions/{session_id}",
    "/v1/sessions/{session_id}/answer",
    "/metrics",
    "/openapi.json",
    "/",
    "/page.js",
    "/page.css",
)
"""Every path the service answers (the metrics label others as ``"other"``)."""

_Endpoint = Callable[[Request], Awaitable[Any]]


def _guard(endpoint: _Endpoint, retry_after: int) -> Callable[[Request], Awaitable[Any]]:
    """Turn the service's exceptions into JSON error responses."""

    async def wrapped(request: Request) -> Any:
        try:
            return await endpoint(request)
        except ZerdaError as exc:
            return problem_response(_problem_of(exc, retry_after))
        except Exception as exc:
            # A component's own exception from a stage, passed through unchanged:
            # its status by the table, only its type and stage in the body.
            line = stage_failure(exc)
            if line is None:
                raise  # not from a stage: the generic 500 handler
            return problem_response(HTTPProblem(report_for(exc).http_status, line))

    return wrapped


def _problem_of(exc: ZerdaError, retry_after: int) -> HTTPProblem:
    """The error response for ``exc``, by the one table of :mod:`zerda_async.apps` (``REPORTS``)."""
    if isinstance(exc, HTTPProblem):
        return exc
    report = report_for(exc)
    headers = {"Retry-After": str(retry_after)} if report.retry else None
    if isinstance(exc, StageFailedError):
        # The stage's own message may hold query text: only its type and stage go out.
        return HTTPProblem(report.http_status, f"{exc.error_type} in stage {exc.stage}")
    field = exc.field if isinstance(exc, RequestBodyError) else None
    return HTTPProblem(report.http_status, str(exc), field, headers)


async def _http_exception(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return problem_response(HTTPProblem(status, str(detail)))


def _routes(service: Service, page: Page, settings: ServiceSettings) -> list[Route]:
    doc = openapi_document(api_key=settings.api_key is not None)

    async def openapi(request: Request) -> Response:
        return json_response(doc)

    retry = settings.retry_after
    return [
        Route("/v1/context", _guard(service.context, retry), methods=["POST"]),
        Route("/v1/context/stream", _guard(service.stream, retry), methods=["POST"]),
        Route("/v1/context/multi", _guard(service.multi, retry), methods=["POST"]),
        Route("/v1/sessions/{session_id}", _guard(service.session, retry), methods=["GET"]),
        Route("/v1/sessions/{session_id}/answer", _guard(service.answer, retry), methods=["POST"]),
        Route("/healthz", service.healthz, methods=["GET"]),
        Route("/readyz", service.readyz, methods=["GET"]),
        Route("/metrics", service.metrics_text, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/", page.index, methods=["GET"]),
        Route("/page.js", page.asset, methods=["GET"]),
        Route("/page.css", page.asset, methods=["GET"]),
    ]


def create_app(
    open_engine: EngineOpener,
    settings: ServiceSettings | None = None,
    *,
    index_info: Mapping[str, Any] | None = None,
    store_set: StoreSet | None = None,
    index_config: ContextEngineConfig | None = None,
) -> Starlette:
    """The service: ``open_engine(default_template)`` runs its one engine.

    The engine's configuration template is the one requests naming none get:
    ``settings.default_template``, or when that is ``None`` the template of
    ``index_config``, the configuration the index was built with (the
    documented configuration's, ``arabic``, when not given; :func:`index_app`
    and :func:`store_app` pass the index's).  A request's ``template`` is
    passed to that engine as a run option.  ``settings.default_template``
    must be a template name, ``"auto"`` or ``None`` (``ConfigError`` naming
    ``default_template`` otherwise).

    ``index_info`` is shown by ``/healthz``.  The application's state holds
    ``metrics`` (:class:`Metrics`), ``pool`` (:class:`EnginePool`) and
    ``service``.  Its lifespan (``app.router.lifespan_context``) starts the
    default template's engine and closes every engine at shutdown; mounted in
    another application, pass it on (``FastAPI(lifespan=app.router.lifespan_context)``)
    or let the first request start the engines (asyncio only).
    """
    settings = settings or ServiceSettings()
    default_template = default_template_of(settings, index_config or ContextEngineConfig())
    if default_template not in TEMPLATE_NAMES:
        raise ConfigError(
            f"default_template must be one of {sorted(TEMPLATE_NAMES)}, "
            f"got {settings.default_template!r}"
        )
    metrics = Metrics(ROUTES)
    pool = EnginePool(open_engine)
    service = Service(
        pool, settings, metrics, index_info or {}, store_set, default_template=default_template
    )

    @asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        async with pool.running():
            try:
                await pool.get(default_template)
            except StoreUnavailableError as exc:
                # A store down at start-up does not stop the replica: it answers 503
                # naming the store (requests, /readyz) and opens the engine once the
                # store answers (see EnginePool.get), without a restart.
                _logger.warning("starting without the engine: %s; retried by each request", exc)
            yield

    app = Starlette(
        routes=_routes(service, Page(service), settings),
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _http_exception},
    )
    app.state.metrics = metrics
    app.state.pool = pool
    app.state.service = service
    # add_middleware wraps: the last added runs first.  Authentication sits
    # inside CORS so preflight requests (which carry no key) are answered.
    if settings.api_key is not None:
        app.add_middleware(BearerAuthMiddleware, api_key=settings.api_key)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(AccessLogMiddleware, routes=ROUTES)
    return app
