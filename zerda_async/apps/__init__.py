"""Applications built on the engine: the ``zerda`` CLI, the demo, ingestion and the HTTP service.

* :mod:`zerda_async.apps.cli` — ``zerda index | query | serve | demo``;
* :mod:`zerda_async.apps.server` — the Starlette service (``server`` extra);
* :data:`REPORTS` / :func:`report_for` — the one table of how both report an
  exception (HTTP status, exit status); :class:`HTTPProblem` — an error
  response the service sends as it is;
* :func:`load_demo_corpus` (the demo's documents), :data:`DEMO_VECTORS_PATH`
  (where their bundled E5 vectors live) and :func:`split_text` (how ingestion
  cuts a document into chunks), for the benchmarks and tests.

Everything else here is internal to those.
"""

from zerda_async.apps._demo import DEMO_VECTORS_PATH, DemoChunk, load_demo_corpus
from zerda_async.apps._ingest import split_text
from zerda_async.apps._reports import (
    REPORTS,
    ErrorReport,
    HTTPProblem,
    report_for,
    stage_failure,
)

__all__ = [
    "DEMO_VECTORS_PATH",
    "REPORTS",
    "DemoChunk",
    "ErrorReport",
    "HTTPProblem",
    "load_demo_corpus",
    "report_for",
    "split_text",
    "stage_failure",
]
