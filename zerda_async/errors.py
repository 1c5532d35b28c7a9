"""Exceptions raised by the async engine.

    ZerdaError
     ├── EngineClosedError (RuntimeError)   the engine is not running
     ├── EmbeddingError (ValueError)        an embedder returned unusable output
     ├── IndexStateError (RuntimeError)     the index cannot do that (no index, no embedder)
     └── IndexFormatError (ValueError)      a saved index directory is unusable (names the file)

Errors raised inside a pipeline stage propagate with their own type and
message (documented errors of the sync package are part of the contract); a
note on the exception names the stage (``exc.__notes__``).  A ``timeout``
raises the builtin :class:`TimeoutError`.
"""

from __future__ import annotations

__all__ = [
    "EmbeddingError",
    "EngineClosedError",
    "IndexFormatError",
    "IndexStateError",
    "ZerdaError",
]


class ZerdaError(Exception):
    """Base class of the errors raised by zerda-async itself."""


class EngineClosedError(ZerdaError, RuntimeError):
    """The engine was used outside ``async with`` or after ``aclose()``."""


class EmbeddingError(ZerdaError, ValueError):
    """An embedder returned the wrong number of vectors or vectors of the wrong shape."""


class IndexStateError(ZerdaError, RuntimeError):
    """The engine's index cannot take this operation (none built yet, injected, no embedder)."""


class IndexFormatError(ZerdaError, ValueError):
    """A saved index is missing, truncated, corrupt, foreign or from a newer format.

    ``path`` is the offending file (or directory); the message starts with it.
    Loading never installs anything from a directory that raised this.
    """

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
