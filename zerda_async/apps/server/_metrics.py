"""Request metrics of the HTTP service, rendered in the Prometheus text format (0.0.4).

:class:`MetricsMiddleware` (plain ASGI, so streaming responses are timed to
their last byte) feeds a :class:`Metrics` registry:

* ``zerda_http_requests_total{method,path,status}`` — finished requests;
* ``zerda_http_errors_total{path,status}`` — responses with status >= 400, and
  streams that ended with an ``error`` event (``status="stream"``);
* ``zerda_http_request_duration_seconds{path}`` — latency histogram;
* ``zerda_http_requests_in_flight`` — requests being served now.

``path`` is the route template (unknown paths count as ``"other"``), so
clients cannot grow the label set.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from zerda_async.apps.server._common import route_path, route_template

__all__ = ["DEFAULT_BUCKETS", "Metrics", "MetricsMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the latency histogram buckets; ``+Inf`` is implicit."""


def _labels(**labels: str) -> str:
    parts = []
    for key, value in labels.items():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append(f'{key}="{escaped}"')
    return "{" + ",".join(parts) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


class Metrics:
    """Counters, a latency histogram per path and an in-flight gauge (single event loop)."""

    def __init__(self, paths: Iterable[str], buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        self.paths = frozenset(paths)
        self.buckets = tuple(sorted(buckets))
        self.in_flight = 0
        self.requests: dict[tuple[str, str, str], int] = {}
        self.errors: dict[tuple[str, str], int] = {}
        self._hist: dict[str, list[int]] = {}
        self._sum: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def path_label(self, path: str) -> str:
        """``path`` when it is a known route, else ``"other"``."""
        path = route_template(path)
        return path if path in self.paths else "other"

    def observe(self, method: str, path: str, status: int, seconds: float) -> None:
        """Record one finished request."""
        key = (method, path, str(status))
        self.requests[key] = self.requests.get(key, 0) + 1
        if status >= 400:
            self.error(path, str(status))
        counts = self._hist.setdefault(path, [0] * len(self.buckets))
        for i, bound in enumerate(self.buckets):
            if seconds <= bound:
                counts[i] += 1
        self._sum[path] = self._sum.get(path, 0.0) + seconds
        self._count[path] = self._count.get(path, 0) + 1

    def error(self, path: str, status: str) -> None:
        """Count one error (an error status, or ``"stream"`` for an ``error`` event)."""
        self.errors[(path, status)] = self.errors.get((path, status), 0) + 1

    def render(self) -> str:
        """All metrics in the Prometheus text exposition format."""
        out = [
            "# HELP zerda_http_requests_total HTTP requests served, by method, path and status.",
            "# TYPE zerda_http_requests_total counter",
        ]
        for (method, path, status), n in sorted(self.requests.items()):
            out.append(
                f"zerda_http_requests_total{_labels(method=method, path=path, status=status)} {n}"
            )
        out += [
            "# HELP zerda_http_errors_total Error responses and streams ended by an error event.",
            "# TYPE zerda_http_errors_total counter",
        ]
        for (path, status), n in sorted(self.errors.items()):
            out.append(f"zerda_http_errors_total{_labels(path=path, status=status)} {n}")
        out += [
            "# HELP zerda_http_request_duration_seconds Time from request to last response byte.",
            "# TYPE zerda_http_request_duration_seconds histogram",
        ]
        name = "zerda_http_request_duration_seconds"
        for path in sorted(self._hist):
            for bound, n in zip(self.buckets, self._hist[path], strict=True):
                out.append(f"{name}_bucket{_labels(path=path, le=_number(bound))} {n}")
            out.append(f"{name}_bucket{_labels(path=path, le='+Inf')} {self._count[path]}")
            out.append(f"{name}_sum{_labels(path=path)} {self._sum[path]!r}")
            out.append(f"{name}_count{_labels(path=path)} {self._count[path]}")
        out += [
            "# HELP zerda_http_requests_in_flight Requests being served now.",
            "# TYPE zerda_http_requests_in_flight gauge",
            f"zerda_http_requests_in_flight {self.in_flight}",
        ]
        return "\n".join(out) + "\n"


class MetricsMiddleware:
    """ASGI middleware recording every HTTP request into ``metrics``."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        metrics = self.metrics
        path = metrics.path_label(route_path(scope))
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        metrics.in_flight += 1
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            metrics.in_flight -= 1
            metrics.observe(scope.get("method", ""), path, status, time.perf_counter() - started)
