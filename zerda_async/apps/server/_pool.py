"""The engines of the service, owned by one task.

The service asks for one engine (its default template's: a request's template
is a run option); the pool stays keyed by template for applications that open
more.

An engine runs inside ``async with``, so it must be entered and left by the
same task: :meth:`EnginePool.serve` is that task.  It normally runs inside the
service's lifespan.  When the service is mounted in another application
(``app.mount("/zerda", index_app(...))``), Starlette never runs a mounted
application's lifespan; then the first request starts the owner task itself
(on asyncio, the loop servers run on) and the engines close when the event
loop ends — or earlier with :meth:`EnginePool.aclose`.  Passing the service's
lifespan to the parent application (see docs/service.md) gives an orderly start and
shutdown on any backend.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.abc

from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import EngineClosedError, StoreUnavailableError

__all__ = ["RETRY_SECONDS", "EngineOpener", "EnginePool"]

EngineOpener = Callable[[str], AbstractAsyncContextManager[AsyncContextEngine]]
"""``open_engine(template)``: an async context manager running an engine with that template."""

_State = Literal["idle", "starting", "running", "closed"]


RETRY_SECONDS = 0.5
"""After an engine failed to open (its stores down), requests fail at once with that error
for this long; the next one then tries again (so a flood of requests does not hammer a
store that is down, and a store coming back is used within this time plus one open)."""


class _Slot:
    """An engine being opened: the first caller asks the owner task, the others wait."""

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.engine: AsyncContextEngine | None = None
        self.error: BaseException | None = None
        self.failed_at = 0.0

    def retry_due(self) -> bool:
        """True when this slot failed to open long enough ago to try again."""
        return (
            self.ready.is_set()
            and self.engine is None
            and time.monotonic() - self.failed_at >= RETRY_SECONDS
        )


def _open_error(exc: BaseException | None) -> Exception:
    """What a request gets when its engine could not be opened: the store that does not
    answer (503 naming it), else the engine that could not start."""
    if isinstance(exc, StoreUnavailableError):
        return StoreUnavailableError(exc.store, exc.url, exc.problem)  # one per caller
    return EngineClosedError(f"the engine could not be started: {exc}")


class EnginePool:
    """One engine per template, opened on demand by :meth:`serve` (which owns and closes them)."""

    def __init__(self, opener: EngineOpener) -> None:
        self._opener = opener
        self._engines: dict[str, AsyncContextEngine] = {}
        self._slots: dict[str, _Slot] = {}
        # The channel to the owner task is made when first needed, so an
        # application that is built but never served leaves no stream open.
        self._channel: tuple[Any, Any] | None = None
        self._state: _State = "idle"
        self._background: Any = None  # the asyncio task of a lazy start (kept referenced)
        self._stopped = anyio.Event()
        self.last_error: str | None = None
        """Why the last engine failed to open (shown by ``/healthz``)."""

    def _streams(self) -> tuple[Any, Any]:
        if self._channel is None:
            self._channel = anyio.create_memory_object_stream[tuple[str, _Slot]](16)
        return self._channel

    @property
    def loaded(self) -> list[str]:
        """Templates whose engine is running."""
        return sorted(self._engines)

    @property
    def state(self) -> str:
        """``"idle"`` (not started), ``"starting"``, ``"running"`` or ``"closed"``."""
        return self._state

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Open engines as they are asked for; close them all when :meth:`close` is called."""
        if self._state not in ("idle", "starting"):
            raise EngineClosedError(f"the engine pool is already {self._state}")
        self._state = "running"
        try:
            receive = self._streams()[1]
            async with AsyncExitStack() as stack, receive:
                task_status.started()
                async for template, slot in receive:
                    try:
                        engine = await stack.enter_async_context(self._opener(template))
                    except Exception as exc:
                        # Kept RETRY_SECONDS (see retry_due); a later request tries again.
                        slot.error, slot.failed_at = exc, time.monotonic()
                        self.last_error = f"{type(exc).__name__}: {exc}"
                    else:
                        slot.engine = self._engines[template] = engine
                    slot.ready.set()
                self._engines.clear()
        finally:
            self._state = "closed"
            self._engines.clear()
            self._stopped.set()

    def close(self) -> None:
        """Stop accepting requests for engines; :meth:`serve` then closes the engines."""
        if self._channel is not None:
            self._channel[0].close()
        if self._state == "idle":
            self._state = "closed"
            self._stopped.set()

    async def aclose(self) -> None:
        """Close the engines and wait until they are closed (whoever started them)."""
        self.close()
        await self._stopped.wait()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run :meth:`serve` in a task group for the duration of the block (the lifespan)."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.serve)
            try:
                yield
            finally:
                self.close()

    def _start_lazily(self) -> None:
        """Start the owner task outside any lifespan (the service is mounted)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): no task outlives a request there
            raise EngineClosedError(
                "the service's lifespan did not run: pass it to the parent application "
                "(lifespan=zerda_app.router.lifespan_context)"
            ) from None

        async def own() -> None:
            await self.serve(task_status=anyio.TASK_STATUS_IGNORED)

        # A fresh context: the owner must not inherit the first request's
        # context variables (request ids bound for logging, cancel scopes).
        self._state = "starting"
        self._background = loop.create_task(own(), context=contextvars.Context())

    async def get(self, template: str) -> AsyncContextEngine:
        """The engine of ``template``, opening it on first use."""
        engine = self._engines.get(template)
        if engine is not None:
            return engine
        if self._state == "closed":
            raise EngineClosedError("the service is shutting down")
        if self._state == "idle":
            self._start_lazily()
        slot = self._slots.get(template)
        if slot is not None and slot.retry_due():
            slot = None
        if slot is None:
            slot = self._slots[template] = _Slot()
            try:
                await self._streams()[0].send((template, slot))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                del self._slots[template]
                raise EngineClosedError("the service is shutting down") from None
        await slot.ready.wait()
        if slot.engine is None:
            raise _open_error(slot.error)
        return slot.engine
