"""Exceptions raised by the async engine.

    ZerdaError
     ├── EngineClosedError (RuntimeError)   the engine is not running
     └── EmbeddingError (ValueError)        an embedder returned unusable output

Errors raised inside a pipeline stage propagate with their own type and
message (documented errors of the sync package are part of the contract); a
note on the exception names the stage (``exc.__notes__``).  A ``timeout``
raises the builtin :class:`TimeoutError`.
"""

from __future__ import annotations

__all__ = ["EmbeddingError", "EngineClosedError", "ZerdaError"]


class ZerdaError(Exception):
    """Base class of the errors raised by zerda-async itself."""


class EngineClosedError(ZerdaError, RuntimeError):
    """The engine was used outside ``async with`` or after ``aclose()``."""


class EmbeddingError(ZerdaError, ValueError):
    """An embedder returned the wrong number of vectors or vectors of the wrong shape."""
