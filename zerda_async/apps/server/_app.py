"""The ASGI application of the HTTP service (Starlette).

Endpoints:

* ``POST /v1/context`` — one :class:`~.schemas.ContextRequest`, the result as JSON;
* ``POST /v1/context/stream`` — the same request; the stage events as
  Server-Sent Events (``analysis`` ... ``guarded``, then ``done`` with the full
  result, or ``error``);
* ``POST /v1/context/multi`` — a :class:`~.schemas.MultiRequest` run with
  ``run_multi``;
* ``GET /healthz`` and ``GET /metrics`` (Prometheus text format).

Errors are JSON :class:`~.schemas.ErrorBody` documents: 422 for a body that
does not validate (with the field), 413 for a body over
``max_body_bytes``, 503 with ``Retry-After`` when ``max_pending`` requests are
already inside, 504 past ``request_timeout``.  A stream that passes its
deadline after its first event ends with an ``error`` event (``status`` 504).

One engine is opened per composer template, on first use (the default
template's at start-up), by a task that owns them all and closes them at
shutdown; the application never reads paths or patterns from requests.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zerda_async.apps._runs import event_name, run_timed
from zerda_async.apps.server._metrics import Metrics, MetricsMiddleware
from zerda_async.apps.server._schemas import (
    ContextRequest,
    ErrorBody,
    Health,
    MultiRequest,
    MultiResponse,
    decode_request,
    result_out,
)
from zerda_async.apps.server._sse import EventStreamResponse, encode_event, sse_record
from zerda_async.engine._engine import AsyncContextEngine
from zerda_async.errors import (
    EngineClosedError,
    HTTPProblem,
    RequestBodyError,
    StageFailedError,
    ZerdaError,
    report_for,
)
from zerda_async.events import DoneEvent, ErrorEvent, StageEvent

__all__ = ["EngineOpener", "EnginePool", "ServiceSettings", "create_app"]

EngineOpener = Callable[[str], AbstractAsyncContextManager[AsyncContextEngine]]
"""``open_engine(template)``: an async context manager running an engine with that template."""

ROUTES = ("/v1/context", "/v1/context/stream", "/v1/context/multi", "/healthz", "/metrics")


class ServiceSettings(msgspec.Struct, kw_only=True):
    """Limits of the service (all per process)."""

    max_body_bytes: int = 1 << 20
    """Larger request bodies get 413."""
    request_timeout: float = 30.0
    """Seconds a request may take (engine start included) before 504."""
    max_pending: int = 256
    """Requests allowed inside at once; more get 503 with ``Retry-After``."""
    retry_after: int = 1
    """Seconds sent in ``Retry-After`` with a 503."""
    default_template: str = "arabic"
    """Composer template of requests that name none."""


class _Slot:
    """An engine being opened: the first caller asks the owner task, the others wait."""

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.engine: AsyncContextEngine | None = None
        self.error: BaseException | None = None


class EnginePool:
    """One engine per template, opened on demand by :meth:`serve` (which owns and closes them)."""

    def __init__(self, opener: EngineOpener) -> None:
        self._opener = opener
        self._engines: dict[str, AsyncContextEngine] = {}
        self._slots: dict[str, _Slot] = {}
        self._send, self._recv = anyio.create_memory_object_stream[tuple[str, _Slot]](16)

    @property
    def loaded(self) -> list[str]:
        """Templates whose engine is running."""
        return sorted(self._engines)

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Open engines as they are asked for; close them all when :meth:`close` is called."""
        async with AsyncExitStack() as stack, self._recv:
            task_status.started()
            async for template, slot in self._recv:
                try:
                    engine = await stack.enter_async_context(self._opener(template))
                except Exception as exc:
                    slot.error = exc
                    del self._slots[template]  # a later request tries again
                else:
                    slot.engine = self._engines[template] = engine
                slot.ready.set()
            self._engines.clear()

    def close(self) -> None:
        """Stop accepting requests for engines; :meth:`serve` then closes the engines."""
        self._send.close()

    async def get(self, template: str) -> AsyncContextEngine:
        """The engine of ``template``, opening it on first use."""
        engine = self._engines.get(template)
        if engine is not None:
            return engine
        slot = self._slots.get(template)
        if slot is None:
            slot = self._slots[template] = _Slot()
            try:
                await self._send.send((template, slot))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise EngineClosedError("the service is shutting down") from None
        await slot.ready.wait()
        if slot.engine is None:
            raise EngineClosedError(f"the engine could not be started: {slot.error}")
        return slot.engine


def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        msgspec.json.encode(data),
        status_code=status,
        headers=headers,
        media_type="application/json",
    )


def _problem_response(problem: HTTPProblem) -> Response:
    body = ErrorBody(error=problem.message, status=problem.status, field=problem.field)
    return _json(body, problem.status, problem.headers)


async def _read_body(request: Request, limit: int) -> bytes:
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


class _Service:
    """The endpoints and the state they share."""

    def __init__(
        self,
        pool: EnginePool,
        settings: ServiceSettings,
        metrics: Metrics,
        index_info: Mapping[str, Any],
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.metrics = metrics
        self.index_info = dict(index_info)
        self.active = 0

    # -- admission ----------------------------------------------------------------

    def admit(self) -> None:
        if self.active >= self.settings.max_pending:
            raise HTTPProblem(
                503,
                f"the engine is full ({self.active} requests in progress); retry later",
                headers={"Retry-After": str(self.settings.retry_after)},
            )
        self.active += 1

    def release(self) -> None:
        self.active -= 1

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        self.admit()
        try:
            yield
        finally:
            self.release()

    def _deadline_problem(self) -> HTTPProblem:
        return HTTPProblem(504, f"request took longer than {self.settings.request_timeout:g} s")

    # -- endpoints ----------------------------------------------------------------

    async def context(self, request: Request) -> Response:
        body = await _read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, ContextRequest)
        template = req.template or self.settings.default_template
        async with self.admitted():
            try:
                with anyio.fail_after(self.settings.request_timeout):
                    engine = await self.pool.get(template)
                    timed = await run_timed(
                        engine,
                        req.query,
                        metadata_filters=req.metadata_filters,
                        max_chunks=req.max_chunks,
                        budget=req.budget,
                        session_id=req.session_id,
                    )
            except TimeoutError:
                raise self._deadline_problem() from None
        out = result_out(
            timed.result,
            template=template,
            request_id=timed.request_id,
            timings_ms=timed.timings_ms,
        )
        return _json(out)

    async def multi(self, request: Request) -> Response:
        body = await _read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, MultiRequest)
        template = req.template or self.settings.default_template
        started = time.perf_counter()
        async with self.admitted():
            try:
                with anyio.fail_after(self.settings.request_timeout):
                    engine = await self.pool.get(template)
                    context = await engine.run_multi(
                        req.queries,
                        req.global_budget,
                        req.use_weighted,
                        metadata_filters=req.metadata_filters,
                        max_chunks=req.max_chunks,
                        session_id=req.session_id,
                    )
            except TimeoutError:
                raise self._deadline_problem() from None
        return _json(
            MultiResponse(
                context=context,
                context_length=len(context),
                queries=list(req.queries),
                template=template,
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        )

    async def stream(self, request: Request) -> Response | EventStreamResponse:
        body = await _read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, ContextRequest)
        template = req.template or self.settings.default_template
        timeout = self.settings.request_timeout
        self.admit()
        try:
            deadline = anyio.current_time() + timeout
            try:
                with anyio.fail_after(timeout):
                    engine = await self.pool.get(template)
                events = cast(
                    AsyncGenerator[StageEvent, None],
                    engine.stream(
                        req.query,
                        req.metadata_filters,
                        req.max_chunks,
                        req.budget,
                        session_id=req.session_id,
                        timeout=max(0.0, deadline - anyio.current_time()),
                    ),
                )
                try:
                    first = await events.__anext__()
                except StopAsyncIteration:
                    raise EngineClosedError("the engine stopped before the request ran") from None
                except BaseException:
                    await events.aclose()
                    raise
            except TimeoutError:
                raise self._deadline_problem() from None
        except BaseException:
            self.release()
            raise
        records = self._records(first, events, template, deadline)
        return EventStreamResponse(records, self.release)

    async def _records(
        self,
        first: StageEvent,
        events: AsyncGenerator[StageEvent, None],
        template: str,
        deadline: float,
    ) -> AsyncIterator[bytes]:
        timings: dict[str, float] = {}

        def record(event: StageEvent) -> bytes:
            name = event_name(event)
            if isinstance(event, DoneEvent):
                done = {
                    "event": "done",
                    "request_id": event.request_id,
                    "duration_ms": event.duration_ms,
                    "result": result_out(
                        event.result,
                        template=template,
                        request_id=event.request_id,
                        timings_ms=timings,
                    ),
                }
                return sse_record(name, encode_event(done))
            if isinstance(event, ErrorEvent):
                self.metrics.error("/v1/context/stream", "stream")
            else:
                timings[name] = event.duration_ms
            return sse_record(name, encode_event(event))

        def failure(status: int, error_type: str, message: str) -> bytes:
            self.metrics.error("/v1/context/stream", "stream")
            data = {"event": "error", "stage": "", "error_type": error_type}
            return sse_record("error", encode_event({**data, "message": message, "status": status}))

        try:
            async with aclosing(events):
                yield record(first)
                while True:
                    with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                        try:
                            event = await events.__anext__()
                        except StopAsyncIteration:
                            break
                    yield record(event)
        except TimeoutError:
            yield failure(504, "TimeoutError", self._deadline_problem().message)
        except Exception as exc:
            yield failure(500, type(exc).__name__, "internal error")

    async def healthz(self, request: Request) -> Response:
        return _json(
            Health(
                status="ok",
                in_flight=self.active,
                templates_loaded=self.pool.loaded,
                index=self.index_info,
            )
        )

    async def metrics_text(self, request: Request) -> Response:
        return Response(
            self.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )


_Endpoint = Callable[[Request], Awaitable[Any]]


def _guard(endpoint: _Endpoint, retry_after: int) -> Callable[[Request], Awaitable[Any]]:
    """Turn the service's exceptions into JSON error responses."""

    async def wrapped(request: Request) -> Any:
        try:
            return await endpoint(request)
        except ZerdaError as exc:
            return _problem_response(_problem_of(exc, retry_after))

    return wrapped


def _problem_of(exc: ZerdaError, retry_after: int) -> HTTPProblem:
    """The error response for ``exc``, by the one table in :mod:`zerda_async.errors`."""
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
    return _problem_response(HTTPProblem(status, str(detail)))


def create_app(
    open_engine: EngineOpener,
    settings: ServiceSettings | None = None,
    *,
    index_info: Mapping[str, Any] | None = None,
) -> Starlette:
    """The service: ``open_engine(template)`` runs an engine for that composer template.

    ``index_info`` is shown by ``/healthz``.  The application's state holds
    ``metrics`` (:class:`Metrics`) and ``pool`` (:class:`EnginePool`).
    """
    settings = settings or ServiceSettings()
    metrics = Metrics(ROUTES)
    pool = EnginePool(open_engine)
    service = _Service(pool, settings, metrics, index_info or {})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            await tg.start(pool.serve)
            try:
                await pool.get(settings.default_template)
                yield
            finally:
                pool.close()

    routes = [
        Route("/v1/context", _guard(service.context, settings.retry_after), methods=["POST"]),
        Route("/v1/context/stream", _guard(service.stream, settings.retry_after), methods=["POST"]),
        Route("/v1/context/multi", _guard(service.multi, settings.retry_after), methods=["POST"]),
        Route("/healthz", service.healthz, methods=["GET"]),
        Route("/metrics", service.metrics_text, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _http_exception},
    )
    app.state.metrics = metrics
    app.state.pool = pool
    app.state.service = service
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
