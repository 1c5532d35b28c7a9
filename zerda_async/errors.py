"""Every exception zerda-async defines.

    ZerdaError
     ├── ConfigError (ValueError)           a configuration field is invalid (names it)
     ├── EngineClosedError (RuntimeError)   the engine is not running
     ├── EmbeddingError (ValueError)        an embedder returned unusable output
     │    └── EmbeddingServiceError         an embedding endpoint failed (names URL and status)
     ├── EmbedderLoadError (RuntimeError)   an embedder cannot load (no extra, bad model folder)
     ├── IndexStateError (RuntimeError)     the index cannot do that (no index, no embedder)
     ├── IndexFormatError (ValueError)      a saved index directory is unusable (names the file)
     ├── IndexDirectoryError (ValueError)   a directory holds no index the CLI can open
     ├── StageFailedError (RuntimeError)    a pipeline stage failed (kept for callers; the apps
     │                                      now pass the stage's own exception through)
     ├── RequestBodyError (ValueError)      an HTTP request body does not decode (names the field)
     ├── MediaTypeError (ValueError)        an HTTP request body is not declared as JSON
     ├── AuthenticationError                an HTTP request lacks the service's API key
     ├── UsageError (ValueError)            a bad command-line argument found after parsing
     ├── SyncCallError (RuntimeError)       a sync adapter call that would block or cannot run
     ├── TokenizerUnavailableError (LookupError)  a tokenizer's files are not on this machine
     ├── StoreUnavailableError (ConnectionError)  a shared store does not answer (names it)
     └── StoreSchemaError (RuntimeError)    a store's schema is newer than this code knows
    MissingSourceQualityMap (AttributeError)  documented: a retriever ran before ``index()``

Errors raised inside a pipeline stage propagate with their own type and
message (documented errors of the sync package are part of the contract); a
note on the exception names the stage: :func:`failed_stage` reads it.  A
``timeout`` raises the builtin :class:`TimeoutError`.

How the applications report each of them (HTTP status, CLI exit status) is
the applications' business: :mod:`zerda_async.apps` holds that table
(``REPORTS``, ``report_for``) and the service's ``HTTPProblem``.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConfigError",
    "EmbedderLoadError",
    "EmbeddingError",
    "EmbeddingServiceError",
    "EngineClosedError",
    "IndexDirectoryError",
    "IndexFormatError",
    "IndexStateError",
    "MediaTypeError",
    "MissingSourceQualityMap",
    "RequestBodyError",
    "StageFailedError",
    "StoreSchemaError",
    "StoreUnavailableError",
    "SyncCallError",
    "TokenizerUnavailableError",
    "UsageError",
    "ZerdaError",
    "annotate_stage_error",
    "failed_stage",
]


class ZerdaError(Exception):
    """Base class of the errors raised by zerda-async itself."""


class ConfigError(ZerdaError, ValueError):
    """A configuration value, or a TOML/JSON config document, is invalid; names the field."""


class EngineClosedError(ZerdaError, RuntimeError):
    """The engine was used outside ``async with`` or after ``aclose()``."""


class EmbeddingError(ZerdaError, ValueError):
    """An embedder returned the wrong number of vectors or vectors of the wrong shape."""


class EmbeddingServiceError(EmbeddingError):
    """An embedding endpoint failed or answered nonsense; names the URL and the HTTP status.

    ``status`` is the last HTTP status received, or ``None`` when no answer came
    (connection refused, timed out).  Raised after the adapter's retries ran out.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EmbedderLoadError(ZerdaError, RuntimeError):
    """An embedder cannot be built: its optional package is missing or its model folder is unusable.

    The message names the extra to install or the folder and the file that is wrong.
    """


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


class IndexDirectoryError(ZerdaError, ValueError):
    """The directory does not hold a usable saved index."""


class StageFailedError(ZerdaError, RuntimeError):
    """A pipeline stage failed; ``stage`` and ``error_type`` say where and how."""

    def __init__(self, stage: str, error_type: str, message: str) -> None:
        super().__init__(f"{error_type} in stage {stage}: {message}")
        self.stage = stage
        self.error_type = error_type


class RequestBodyError(ZerdaError, ValueError):
    """An HTTP request body that does not decode; ``field`` names the offending field if any."""

    def __init__(self, message: str, field: str | None) -> None:
        super().__init__(message)
        self.field = field


class MediaTypeError(ZerdaError, ValueError):
    """An HTTP request body whose ``Content-Type`` is not JSON (the service answers 415)."""


class AuthenticationError(ZerdaError):
    """An HTTP request without the service's API key as a bearer token (the service answers 401).

    The message never repeats what the client sent.
    """


class UsageError(ZerdaError, ValueError):
    """A bad command-line argument found after parsing (exit status 2)."""


class SyncCallError(ZerdaError, RuntimeError):
    """A framework adapter's sync call cannot run here (it would block an event loop).

    Raised by :mod:`zerda_async.integrations` for a sync call on an
    ``AsyncContextEngine`` without a portal, or from inside a running loop.
    """


class TokenizerUnavailableError(ZerdaError, LookupError):
    """A token counter's tokenizer files are not available locally; names what is missing."""


class StoreUnavailableError(ZerdaError, ConnectionError):
    """A shared store (index, session, cache or learning) did not answer in time.

    ``store`` names it (``"index store"``, ``"session store"``, ...) and
    ``url`` is its URL without the password; the message starts with both.
    The store object stays usable: it reconnects by itself once the server is back.
    """

    def __init__(self, store: str, url: str, problem: str) -> None:
        super().__init__(f"{store} at {url} is unavailable: {problem}")
        self.store = store
        self.url = url
        self.problem = problem


class StoreSchemaError(ZerdaError, RuntimeError):
    """A store's schema version is newer than this code knows (upgrade zerda-async)."""


class MissingSourceQualityMap(AttributeError):
    """An injected retriever returned chunks before any successful ``index()`` call.

    Subclasses :class:`AttributeError` with the documented message, so callers
    of the documented package catch it unchanged.
    """


# -- the stage note -------------------------------------------------------------

_NOTE_PREFIX = "zerda-async: raised in pipeline stage "


def annotate_stage_error(exc: BaseException, stage_name: str) -> None:
    """Name the failing stage on ``exc`` (a note) without changing its type or message."""
    if failed_stage(exc) is None:
        exc.add_note(f"{_NOTE_PREFIX}{stage_name!r}")


def failed_stage(exc: BaseException) -> str | None:
    """The name of the pipeline stage ``exc`` was raised in, if a runner annotated it."""
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, str) and note.startswith(_NOTE_PREFIX):
            return note[len(_NOTE_PREFIX) :].strip("'")
    return None
