"""An OpenAI-compatible ``/v1/embeddings`` endpoint as an async text embedder (httpx).

Works with any server that speaks that API (OpenAI, vLLM, llama.cpp's server,
Ollama, LM Studio, text-embeddings-inference, ...).  Texts are sent in batches
of ``batch_size``; each request has a timeout; connection errors, timeouts,
429 and 5xx answers are retried with exponential backoff (honouring a
``Retry-After`` header up to ``max_backoff``); any other failure, or a final
one, raises :class:`~zerda_async.errors.EmbeddingServiceError` naming the URL
and the status.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders._protocol import as_texts
from zerda_async.errors import EmbedderLoadError, EmbeddingError, EmbeddingServiceError

__all__ = ["OpenAIEmbedder"]

_BODY_EXCERPT = 200


class OpenAIEmbedder:
    """Embeds through ``POST {base_url}/embeddings``; both methods are coroutines.

    ``base_url`` includes the API prefix (``http://127.0.0.1:8000/v1``).  Use it
    as ``async with OpenAIEmbedder(...) as emb`` (or call :meth:`aclose`): it
    owns an ``httpx.AsyncClient``.  ``dimensions`` is sent when given (models
    that can shorten their vectors).  ``transport`` is passed to httpx.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        dimensions: int | None = None,
        headers: dict[str, str] | None = None,
        transport: Any = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise EmbedderLoadError(
                "the OpenAI-compatible embedder needs httpx: pip install 'zerda-async[openai]'"
            ) from exc
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if not timeout > 0 or backoff < 0 or max_backoff < 0:
            raise ValueError(
                f"timeout must be > 0 and backoff, max_backoff >= 0, got timeout={timeout}, "
                f"backoff={backoff}, max_backoff={max_backoff}"
            )
        self.name = f"openai:{model}"
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.dimensions = dimensions
        self.requests = 0
        all_headers = dict(headers or {})
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), headers=all_headers, transport=transport
        )

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client (its connections); the embedder is unusable afterwards."""
        await self._client.aclose()

    def params(self) -> dict[str, Any]:
        """The endpoint and model (no API key), JSON-serialisable."""
        return {
            "kind": "openai",
            "url": self.url,
            "model": self.model,
            "dimensions": self.dimensions,
        }

    async def __call__(self, text: Any) -> NDArray[np.float64]:
        """The vector of one text."""
        row: NDArray[np.float64] = (await self.embed_batch([text]))[0]
        return row

    async def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        """One row per text: one request per ``batch_size`` texts, in order."""
        items = as_texts(texts)
        parts = [
            await self._embed_request(items[start : start + self.batch_size])
            for start in range(0, len(items), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, 0))
        dims = {part.shape[1] for part in parts}
        if len(dims) != 1:
            raise EmbeddingError(f"{self.url} returned vectors of different lengths: {dims}")
        return np.concatenate(parts)

    async def _embed_request(self, texts: list[str]) -> NDArray[np.float64]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        body = await self._post(payload)
        return _parse_embeddings(body, len(texts), self.url)

    async def _post(self, payload: dict[str, Any]) -> Any:
        """The decoded JSON answer, after retrying what may pass."""
        import httpx

        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                self.requests += 1
                response = await self._client.post(self.url, json=payload)
            except httpx.TimeoutException as exc:
                failure = EmbeddingServiceError(
                    f"embedding request to {self.url} timed out ({type(exc).__name__})"
                )
            except httpx.TransportError as exc:
                failure = EmbeddingServiceError(
                    f"embedding request to {self.url} failed: {type(exc).__name__}: {exc}"
                )
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise EmbeddingServiceError(
                            f"{self.url} answered 200 with a body that is not JSON: "
                            f"{response.text[:_BODY_EXCERPT]!r}",
                            status=200,
                        ) from exc
                failure = EmbeddingServiceError(
                    f"{self.url} answered HTTP {response.status_code}: "
                    f"{response.text[:_BODY_EXCERPT]!r}",
                    status=response.status_code,
                )
                if not _retried(response.status_code):
                    raise failure
                retry_after = _retry_after(response.headers.get("retry-after"))
            if attempt >= self.max_retries:
                raise EmbeddingServiceError(
                    f"{failure} (gave up after {attempt + 1} attempts)", status=failure.status
                ) from failure
            await anyio.sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        # Exponential backoff with jitter, so that many clients do not retry in step.
        base: float = min(self.backoff * 2.0**attempt, self.max_backoff)
        return base * random.uniform(0.5, 1.0)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(url={self.url!r}, model={self.model!r})"


def _retried(status: int) -> bool:
    """Statuses that may pass on a later attempt: timeout, rate limit, server errors."""
    return status in (408, 429) or status >= 500


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` given in seconds (an HTTP date is ignored: backoff applies)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _parse_embeddings(body: Any, expected: int, url: str) -> NDArray[np.float64]:
    """The ``data[*].embedding`` rows ordered by ``index``, checked."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise EmbeddingServiceError(f"{url} answered without a 'data' list", status=200)
    if len(data) != expected:
        raise EmbeddingServiceError(
            f"{url} returned {len(data)} embeddings for {expected} texts", status=200
        )
    try:
        ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
        rows = [item["embedding"] for item in ordered]
        matrix = np.asarray(rows, dtype=np.float64)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise EmbeddingServiceError(
            f"{url} returned malformed embeddings: {type(exc).__name__}: {exc}", status=200
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingServiceError(
            f"{url} returned embeddings of shape {matrix.shape}", status=200
        )
    if not np.isfinite(matrix).all():
        raise EmbeddingServiceError(f"{url} returned NaN or infinity in an embedding", status=200)
    return matrix
