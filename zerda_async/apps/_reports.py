"""How the applications report an error: the service's HTTP status and the CLI's exit status.

:data:`REPORTS` is the one table the ``zerda`` command line and the HTTP
service both read (so they cannot disagree): :func:`report_for` looks an
exception up by its class hierarchy.  :class:`HTTPProblem` is an error
response the service sends as it is (a status chosen where it is raised).
The exceptions themselves live in :mod:`zerda_async.errors`, which knows
nothing of HTTP or exit statuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from zerda_async.errors import (
    AuthenticationError,
    ConfigError,
    EmbedderLoadError,
    EmbeddingError,
    EmbeddingServiceError,
    EngineClosedError,
    IndexDirectoryError,
    IndexFormatError,
    IndexStateError,
    MediaTypeError,
    RequestBodyError,
    StageFailedError,
    StoreSchemaError,
    StoreUnavailableError,
    SyncCallError,
    TokenizerUnavailableError,
    UsageError,
    ZerdaError,
    failed_stage,
)

__all__ = ["REPORTS", "ErrorReport", "HTTPProblem", "report_for", "stage_failure"]


class HTTPProblem(ZerdaError):
    """An error response: status, message and optionally the field and extra headers."""

    def __init__(
        self,
        status: int,
        message: str,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


class ErrorReport(NamedTuple):
    """How the applications report one kind of error.

    ``http_status`` is the service's response status; ``exit_status`` the
    CLI's (2: the command line was wrong, 1: the work failed); ``retry``
    whether the service adds a ``Retry-After`` header (the condition passes).
    """

    http_status: int
    exit_status: int
    retry: bool = False


REPORTS: dict[type[BaseException], ErrorReport] = {
    RequestBodyError: ErrorReport(422, 1),
    MediaTypeError: ErrorReport(415, 1),
    AuthenticationError: ErrorReport(401, 1),
    ConfigError: ErrorReport(422, 1),
    UsageError: ErrorReport(400, 2),
    IndexDirectoryError: ErrorReport(500, 1),
    EngineClosedError: ErrorReport(503, 1, retry=True),
    TimeoutError: ErrorReport(504, 1),
    StageFailedError: ErrorReport(500, 1),
    EmbeddingServiceError: ErrorReport(502, 1),
    EmbeddingError: ErrorReport(500, 1),
    EmbedderLoadError: ErrorReport(500, 1),
    IndexStateError: ErrorReport(409, 1),
    IndexFormatError: ErrorReport(500, 1),
    SyncCallError: ErrorReport(500, 1),
    TokenizerUnavailableError: ErrorReport(500, 1),
    StoreUnavailableError: ErrorReport(503, 1, retry=True),
    StoreSchemaError: ErrorReport(500, 1),
}
"""Exception class -> report; subclasses inherit their nearest listed base's entry."""

_DEFAULT_REPORT = ErrorReport(500, 1)


def report_for(exc: BaseException) -> ErrorReport:
    """The report of ``exc``: its own class's entry, else its nearest base's, else 500 / 1."""
    if isinstance(exc, HTTPProblem):
        return ErrorReport(exc.status, 1)
    for cls in type(exc).__mro__:
        found = REPORTS.get(cls)
        if found is not None:
            return found
    return _DEFAULT_REPORT


def stage_failure(exc: BaseException) -> str | None:
    """``"<type> in stage <stage>"`` for a component's own exception raised in a pipeline stage.

    Such an exception (an embedder's ``RuntimeError``, a store client's
    ``TimeoutError``) reaches the applications unchanged, with the note that
    names its stage; its message is not ours and may hold query text, so the
    service sends only this line (the CLI adds the message).  ``None`` for the
    project's own errors, whose messages are meant to be shown, and for an
    exception no stage raised.
    """
    stage = failed_stage(exc)
    if stage is None or isinstance(exc, ZerdaError):
        return None
    return f"{type(exc).__name__} in stage {stage}"
