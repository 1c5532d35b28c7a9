"""Stage events for structlog, emitted only when the application configured structlog.

The library never configures logging.  An unconfigured structlog prints to
standard output, so events are dropped until ``structlog.configure`` (or
``structlog.testing.capture_logs``) has been called by the application.
"""

from __future__ import annotations

from typing import Any

import structlog

from zerda_async.pipeline._job import Job

__all__ = ["emit_stage_event", "stage_counts"]

_logger = structlog.get_logger("zerda_async")


def stage_counts(job: Job) -> dict[str, int]:
    """The candidate counts a stage event reports."""
    return {
        "retrieved": len(job.retrieved),
        "filtered": len(job.filtered),
        "ranked": len(job.ranked),
        "context_length": len(job.context),
    }


def emit_stage_event(job: Job, stage: str, duration_ms: float, **extra: Any) -> None:
    """Log one ``stage`` event with the request id, session id, duration and counts."""
    if not structlog.is_configured():
        return
    _logger.debug(
        "stage",
        stage=stage,
        request_id=job.request_id,
        session_id=job.options.session_id,
        duration_ms=round(duration_ms, 3),
        **stage_counts(job),
        **extra,
    )
