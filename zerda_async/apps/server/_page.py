"""The page for a person at ``/``: plain HTML, CSS and JavaScript shipped in the package.

The HTML carries one JSON "boot" document: the templates (and profiles, when
the request body has a ``profile`` field) the service accepts, whether an API
key is needed, and — for ``/?q=<question>`` — the result of that question,
built while the page is served.  The script renders that result while the
page loads, so a shared link shows its context even to a non-scripted reader
(``chromium --dump-dom``); questions typed into the page run through
``POST /v1/context/stream`` and fill the stage timeline as the events arrive.
"""

from __future__ import annotations

import typing
from importlib import resources
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from zerda_async.apps import report_for
from zerda_async.apps.server._access import authorized
from zerda_async.apps.server._routes import Service
from zerda_async.apps.server._schemas import ContextRequest
from zerda_async.errors import RequestBodyError, ZerdaError

__all__ = ["Page", "choices_of"]

_BOOT_MARK = "__ZERDA_BOOT__"
_MEDIA = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}
# The page loads only its own files and talks only to its own origin.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def choices_of(field: str) -> list[str] | None:
    """The literal values a :class:`ContextRequest` field accepts, or None without the field."""
    hints = typing.get_type_hints(ContextRequest, include_extras=True)
    if field not in hints:
        return None
    found: list[str] = []

    def walk(tp: Any) -> None:
        if typing.get_origin(tp) is typing.Literal:
            found.extend(str(v) for v in typing.get_args(tp))
        else:
            for arg in typing.get_args(tp):
                walk(arg)

    walk(hints[field])
    return found


def _static(name: str) -> str:
    return (resources.files("zerda_async.apps.server") / "static" / name).read_text("utf-8")


class Page:
    """Serves ``/``, ``/page.js`` and ``/page.css``; runs ``?q=`` through :class:`Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service
        # Read once when the app is built, never on the event loop.
        self.html = _static("index.html")
        self.assets = {ext: _static(f"page.{ext}") for ext in _MEDIA}
        self.templates = choices_of("template") or [service.default_template]
        self.profiles = choices_of("profile")

    def _boot(self, request: Request) -> dict[str, Any]:
        return {
            "templates": self.templates,
            "default_template": self.service.default_template,
            "profiles": self.profiles,
            "auth": self.service.settings.api_key is not None,
            "query": request.query_params.get("q", ""),
            "template": request.query_params.get("template", ""),
            "profile": request.query_params.get("profile", ""),
            "result": None,
            "error": None,
        }

    async def _run(self, boot: dict[str, Any]) -> None:
        body: dict[str, Any] = {"query": boot["query"]}
        for name in ("template", "profile"):
            if boot[name]:
                body[name] = boot[name]
        try:
            try:
                req = msgspec.convert(body, ContextRequest)
            except msgspec.ValidationError as exc:
                raise RequestBodyError(str(exc), None) from None
            out = await self.service.run_context(req)
        except ZerdaError as exc:
            message = str(exc) if isinstance(exc, RequestBodyError) else type(exc).__name__
            boot["error"] = {"status": report_for(exc).http_status, "error": message}
        else:
            boot["result"] = msgspec.to_builtins(out, enc_hook=str)

    async def index(self, request: Request) -> Response:
        """The page; with ``?q=`` (and the key, when one is set) the result is built in."""
        boot = self._boot(request)
        if boot["query"] and authorized(request.scope, self.service.settings.api_key):
            await self._run(boot)
        data = msgspec.json.encode(boot).decode("utf-8")
        # Inside <script>, "<" could close the element: JSON's \u003c means the same.
        data = data.replace("<", "\\u003c")
        html = self.html.replace(_BOOT_MARK, data)
        headers = {"Content-Security-Policy": _CSP, "Cache-Control": "no-store"}
        return Response(html, media_type="text/html; charset=utf-8", headers=headers)

    async def asset(self, request: Request) -> Response:
        """``/page.js`` or ``/page.css``."""
        ext = request.url.path.rsplit(".", 1)[-1]
        return Response(self.assets[ext], media_type=_MEDIA[ext])
