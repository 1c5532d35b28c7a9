"""A real HTTP server on loopback that answers like OpenAI's ``/v1/embeddings``.

It runs ``http.server`` in a thread.  ``script`` lists what the next requests
get, one entry per request (``"ok"`` once it is used up):

* ``"ok"`` — the embeddings (the hashing embedder's vectors, listed in reverse
  order with their ``index``, as the API allows);
* ``"500"``, ``"503"``, ``"429"``, ``"400"``, ... — that status with an error body
  (``"429"`` adds ``Retry-After: 0``);
* ``"slow"`` — waits ``slow_seconds`` before answering (released at shutdown);
* ``"not-json"``, ``"short"`` (one embedding missing), ``"nan"`` — broken answers.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from zerda_async.embedders import HashingEmbedder

__all__ = ["DIM", "FakeEmbeddings"]

DIM = 16
_REFERENCE = HashingEmbedder(dim=DIM)


class FakeEmbeddings:
    """Start with ``with FakeEmbeddings(script) as server:``; ``server.base_url`` ends in /v1."""

    def __init__(self, script: list[str] | None = None, slow_seconds: float = 5.0) -> None:
        self.script = list(script or [])
        self.slow_seconds = slow_seconds
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = False  # joined by server_close()
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> str:
        with self._lock:
            self.bodies.append(body)
            self.headers.append(headers)
            return self.script.pop(0) if self.script else "ok"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                action = fake._next(body, {k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                elif action == "slow":
                    fake._release.wait(fake.slow_seconds)
                    self._send(200, _answer(body["input"]))
                elif action.isdigit():
                    extra = {"Retry-After": "0"} if action == "429" else {}
                    self._send(int(action), {"error": {"message": f"fake {action}"}}, extra)
                elif action == "not-json":
                    self._send_raw(200, b"<html>gateway</html>")
                elif action == "short":
                    self._send(200, _answer(body["input"][1:]))
                elif action == "nan":
                    answer = _answer(body["input"])
                    answer["data"][0]["embedding"][0] = float("nan")
                    self._send(200, answer)
                else:
                    self._send(200, _answer(body["input"]))

            def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(payload).encode(), extra)

            def _send_raw(
                self, status: int, data: bytes, extra: dict[str, str] | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (extra or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

        return Handler


def _answer(texts: list[str]) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": _REFERENCE(text).tolist()}
        for i, text in enumerate(texts)
    ]
    return {"object": "list", "data": data[::-1], "model": "fake", "usage": {}}
