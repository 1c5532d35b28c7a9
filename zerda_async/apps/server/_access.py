"""Who may call the service, and what its access log says about each request.

:class:`BearerAuthMiddleware` (on when ``ServiceSettings.api_key`` is set)
answers 401 to any request without ``Authorization: Bearer <key>`` — every
path, known or not, except ``/healthz`` and the page's static files, which
hold no data (the page sends the key it is given with each call it makes).
The key is compared in constant time.

:class:`AccessLogMiddleware` logs one line per request to the ``zerda.access``
logger, in uvicorn's access-log format but with the route path only: query
strings (``/?q=<question>``), bodies (queries, session ids) and unknown
paths (shown as ``(other)``) never reach the log.  ``zerda serve`` turns
uvicorn's own access log off and prints this one.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from zerda_async.apps import HTTPProblem, report_for
from zerda_async.apps.server._common import problem_response, route_path, route_template
from zerda_async.errors import AuthenticationError

__all__ = [
    "ACCESS_LOGGER",
    "PUBLIC_PATHS",
    "AccessLogMiddleware",
    "BearerAuthMiddleware",
    "authorized",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ACCESS_LOGGER = "zerda.access"
"""Name of the logger of the access log (one INFO record per request)."""

PUBLIC_PATHS = frozenset({"/healthz", "/", "/page.js", "/page.css"})
"""Paths served without the API key: the health probe and the page's static files."""


def _bearer(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


def authorized(scope: Scope, api_key: str | None) -> bool:
    """Whether the request carries ``api_key`` as its bearer token (always, with no key set)."""
    if api_key is None:
        return True
    token = _bearer(list(scope.get("headers", [])))
    # compare_digest takes the same time wherever the first difference is, so
    # response timing does not reveal how much of a guessed key was right.
    return token is not None and hmac.compare_digest(token, api_key.encode("utf-8"))


class BearerAuthMiddleware:
    """401 for every request without the API key, except :data:`PUBLIC_PATHS`."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        public = scope["type"] == "http" and route_path(scope) in PUBLIC_PATHS
        if scope["type"] not in ("http", "websocket") or public or authorized(scope, self.api_key):
            await self.app(scope, receive, send)
            return
        exc = AuthenticationError("missing or wrong API key (send Authorization: Bearer <key>)")
        status = report_for(exc).http_status
        headers = {"WWW-Authenticate": 'Bearer realm="zerda"'}
        await problem_response(HTTPProblem(status, str(exc), headers=headers))(scope, receive, send)


class AccessLogMiddleware:
    """One ``zerda.access`` record per HTTP request: client, method, route path, status."""

    def __init__(self, app: ASGIApp, routes: Iterable[str]) -> None:
        self.app = app
        self.routes = frozenset(routes)
        self.logger = logging.getLogger(ACCESS_LOGGER)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            client = scope.get("client")
            address = f"{client[0]}:{client[1]}" if client else "-"
            # The route without its query string (the page's ?q= holds the question);
            # unknown paths print as "(other)", since a client can put anything there.
            path = route_template(route_path(scope))
            shown = scope.get("root_path", "") + path if path in self.routes else "(other)"
            self.logger.info(
                '%s - "%s %s HTTP/%s" %d',
                address,
                scope.get("method", ""),
                shown,
                scope.get("http_version", "1.1"),
                status,
            )
