"""The endpoints of the service and the state they share (see :mod:`._app`)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing, asynccontextmanager, contextmanager
from typing import Any, cast

import anyio
from starlette.requests import Request
from starlette.responses import Response

from zerda_async.apps import HTTPProblem
from zerda_async.apps._runs import run_timed
from zerda_async.apps.server._common import ServiceSettings, json_response, read_body
from zerda_async.apps.server._metrics import Metrics
from zerda_async.apps.server._pool import EnginePool
from zerda_async.apps.server._replica import StoreSet, probe
from zerda_async.apps.server._schemas import (
    AnswerRequest,
    ContextRequest,
    ContextResponse,
    Health,
    MultiRequest,
    MultiResponse,
    Ready,
    SessionOut,
    TurnOut,
    decode_request,
    result_out,
)
from zerda_async.apps.server._sse import EventStreamResponse, encode_event, sse_record
from zerda_async.core.templates import TEMPLATE_NAMES
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import EngineClosedError, StoreUnavailableError, failed_stage
from zerda_async.events import DoneEvent, ErrorEvent, StageEvent, event_name
from zerda_async.pipeline import RunOptions

__all__ = ["Service"]


def _run_options(req: ContextRequest | MultiRequest, budget: int | None = None) -> RunOptions:
    """The engine's run options of a request body (one object, built once per request)."""
    return RunOptions(
        metadata_filters=req.metadata_filters,
        max_chunks=req.max_chunks,
        override_budget=budget,
        session_id=req.session_id,
        filters=req.filters,
        template=req.template,
    )


class Service:
    """The endpoints and the state they share.

    One engine (opened with ``default_template``) serves every request:
    a request's ``template`` is its run option, so the cache, the sessions and
    the index are shared whatever template a request names.
    """

    def __init__(
        self,
        pool: EnginePool,
        settings: ServiceSettings,
        metrics: Metrics,
        index_info: Mapping[str, Any],
        store_set: StoreSet | None = None,
        *,
        default_template: str,
    ) -> None:
        self.store_set = store_set
        self.pool = pool
        self.settings = settings
        self.metrics = metrics
        self.index_info = dict(index_info)
        self.active = 0
        # Resolved by create_app: the settings' template, else the index's profile's.
        self.default_template = default_template

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

    async def engine(self) -> AsyncContextEngine:
        """The service's one engine (opened on first use)."""
        return await self.pool.get(self.default_template)

    def _deadline_problem(self) -> HTTPProblem:
        return HTTPProblem(504, f"request took longer than {self.settings.request_timeout:g} s")

    @contextmanager
    def _deadline(self) -> Iterator[None]:
        """The block under the request deadline; past it, the 504 problem."""
        try:
            with anyio.fail_after(self.settings.request_timeout):
                yield
        except TimeoutError as exc:
            if failed_stage(exc) is not None:
                raise  # a stage's own timeout (a store client's), not the deadline
            raise self._deadline_problem() from None

    # -- endpoints ----------------------------------------------------------------

    async def run_context(self, req: ContextRequest) -> ContextResponse:
        """Run one request under admission and the deadline (``/v1/context`` and the page)."""
        template = req.template or self.default_template
        async with self.admitted():
            with self._deadline():
                engine = await self.engine()
                timed = await run_timed(engine, req.query, _run_options(req, req.budget))
        return result_out(
            timed.result,
            template=template,
            request_id=timed.request_id,
            timings_ms=timed.timings_ms,
        )

    async def context(self, request: Request) -> Response:
        body = await read_body(request, self.settings.max_body_bytes)
        return json_response(await self.run_context(decode_request(body, ContextRequest)))

    async def multi(self, request: Request) -> Response:
        body = await read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, MultiRequest)
        template = req.template or self.default_template
        started = time.perf_counter()
        async with self.admitted():
            with self._deadline():
                engine = await self.engine()
                context = await engine.run_multi(
                    req.queries, req.global_budget, req.use_weighted, options=_run_options(req)
                )
        return json_response(
            MultiResponse(
                context=context,
                context_length=len(context),
                queries=list(req.queries),
                template=template,
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        )

    async def stream(self, request: Request) -> Response | EventStreamResponse:
        body = await read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, ContextRequest)
        template = req.template or self.default_template
        timeout = self.settings.request_timeout
        self.admit()
        try:
            deadline = anyio.current_time() + timeout
            try:
                with anyio.fail_after(timeout):
                    engine = await self.engine()
                events = cast(
                    AsyncGenerator[StageEvent, None],
                    engine.stream(
                        req.query,
                        timeout=max(0.0, deadline - anyio.current_time()),
                        options=_run_options(req, req.budget),
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
        # "ok" only once the engine runs: a mounted service (whose lifespan
        # never ran) starts it here, and one that cannot start says so with 503
        # instead of reporting health it does not have.
        status, code = "ok", 200
        try:
            with anyio.fail_after(self.settings.request_timeout):
                await self.engine()
        except (EngineClosedError, StoreUnavailableError, TimeoutError):
            status, code = "unavailable", 503
        return json_response(
            Health(
                status=status,
                in_flight=self.active,
                # The one engine serves every template a request may name.
                templates_loaded=sorted(TEMPLATE_NAMES) if code == 200 else [],
                index=self.index_info,
                error=None if code == 200 else (self.pool.last_error or self.pool.state),
            ),
            code,
        )

    async def metrics_text(self, request: Request) -> Response:
        cache = learning = 0
        for template in self.pool.loaded:
            stats = (await self.pool.get(template)).statistics()
            cache += stats.cache_bypassed
            learning += stats.learning_bypassed
        extra = (
            "# HELP zerda_store_bypassed_total Work done without a shared store that did not"
            " answer (cache: requests served uncached; learning: samples kept locally).\n"
            "# TYPE zerda_store_bypassed_total counter\n"
            f'zerda_store_bypassed_total{{store="cache"}} {cache}\n'
            f'zerda_store_bypassed_total{{store="learning"}} {learning}\n'
        )
        return Response(
            self.metrics.render() + extra, media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    # -- sessions and readiness -----------------------------------------------------

    def _session_id(self, request: Request) -> str:
        session_id = str(request.path_params["session_id"])
        if not 1 <= len(session_id) <= 128:
            raise HTTPProblem(422, "session_id must have 1 to 128 characters", "session_id")
        return session_id

    async def _session_out(self, session_id: str) -> SessionOut:
        engine = await self.pool.get(self.default_template)
        turns = await engine.turns(session_id)
        return SessionOut(
            session_id=session_id, turns=[TurnOut(query=t.query, answer=t.answer) for t in turns]
        )

    async def answer(self, request: Request) -> Response:
        """``POST /v1/sessions/{session_id}/answer``: the answer of the session's last turn."""
        session_id = self._session_id(request)
        body = await read_body(request, self.settings.max_body_bytes)
        req = decode_request(body, AnswerRequest)
        with self._deadline():
            engine = await self.pool.get(self.default_template)
            if not await engine.record_answer(session_id, req.answer):
                raise HTTPProblem(404, f"session {session_id!r} has no turn to answer")
            out = await self._session_out(session_id)
        return json_response(out)

    async def session(self, request: Request) -> Response:
        """``GET /v1/sessions/{session_id}``: the session's turns, oldest first."""
        session_id = self._session_id(request)
        with self._deadline():
            out = await self._session_out(session_id)
        return json_response(out)

    async def readyz(self, request: Request) -> Response:
        """200 when the engine runs and every configured store answers; else 503 naming it."""
        timeout = min(self.settings.request_timeout, 5.0)
        found: dict[str, str] = {}
        try:
            with anyio.fail_after(timeout):
                await self.pool.get(self.default_template)
        except StoreUnavailableError as exc:
            found[exc.store] = str(exc)  # down at start-up: the engine waits for it
        except (EngineClosedError, TimeoutError) as exc:
            found["engine"] = str(exc) or "the engine did not start in time"
        if self.store_set is not None:
            found.update(await probe(self.store_set.stores, timeout))
        ready = all(v == "ok" for v in found.values())
        return json_response(
            Ready(status="ready" if ready else "unavailable", stores=found), 200 if ready else 503
        )
