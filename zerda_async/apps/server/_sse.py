"""Server-Sent Events: record encoding and an ASGI response that streams stage events.

Each record is ``event: <name>`` and one ``data:`` line holding a JSON
document, then a blank line.  :class:`EventStreamResponse` sends the engine's
stage events as they come, ends the stream after ``done`` or ``error``, stops
(and abandons the request) when the client disconnects, and always runs its
``on_close`` callback exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import msgspec

__all__ = ["EventStreamResponse", "encode_event", "sse_record"]

_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]

_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def _enc_hook(value: Any) -> Any:
    # Caller objects that are not JSON types (ids, sources) are sent as text.
    return str(value)


def encode_event(data: Any) -> bytes:
    """``data`` as compact JSON (one line: newlines inside strings are escaped)."""
    return msgspec.json.encode(data, enc_hook=_enc_hook)


def sse_record(event: str, data: bytes) -> bytes:
    """One SSE record carrying ``data`` (a single-line JSON document)."""
    return b"event: " + event.encode("ascii") + b"\ndata: " + data + b"\n\n"


class EventStreamResponse:
    """ASGI response streaming ``records`` (already-encoded SSE records).

    ``records`` is closed (``aclose``) when the stream ends for any reason,
    then ``on_close`` is called.
    """

    def __init__(self, records: AsyncIterator[bytes], on_close: Callable[[], None]) -> None:
        self.records = records
        self.on_close = on_close

    async def __call__(self, scope: Any, receive: _Receive, send: _Send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope)
                await self._pump(send)
                tg.cancel_scope.cancel()
        except OSError:
            pass  # the client went away while we were sending
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self.records, "aclose", None)
                if aclose is not None:
                    await aclose()
            self.on_close()

    async def _pump(self, send: _Send) -> None:
        async for record in self.records:
            await send({"type": "http.response.body", "body": record, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _watch_disconnect(receive: _Receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return
