"""Applications built on the engine: the ``zerda`` CLI, the demo, ingestion and the HTTP service.

* :mod:`zerda_async.apps.cli` — ``zerda index | query | serve | demo``;
* :mod:`zerda_async.apps.server` — the Starlette service (``server`` extra);
* :data:`REPORTS` / :func:`report_for` — the one table of how both report an
  exception (HTTP status, exit status); :class:`HTTPProblem` — an error
  response the service sends as it is;
* :func:`read_paths` — files and folders read into chunks with the metadata
  ``zerda index`` gives them (:class:`IngestReport`: the chunks, the files
  read, :class:`Skipped` files and why; :data:`SUFFIXES`, the file types read
  in folders; :func:`detect_language`, the ``lang`` guess), and
  :func:`split_text` (how a text is cut into chunks);
* :func:`open_index` — an index directory written by ``zerda index`` (or
  ``engine.save()``) opened with the embedder and configuration it records
  (:func:`read_manifest` / :class:`IndexManifest`, the ``zerda-cli.json``
  file, :data:`MANIFEST_NAME`; :func:`saved_config`, the configuration saved
  with it);
* :func:`run_timed` — one ``run()`` with its stage timings keyed by the stream's
  event names (:data:`STAGE_EVENTS`), as the CLI and the service take them
  (:class:`TimedResult`);
* :func:`load_demo_corpus` (the demo's documents) and :data:`DEMO_VECTORS_PATH`
  (where their bundled E5 vectors live), for the benchmarks and tests.

Everything else here is internal to those.
"""

from zerda_async.apps._demo import DEMO_VECTORS_PATH, DemoChunk, load_demo_corpus
from zerda_async.apps._ingest import (
    SUFFIXES,
    IngestReport,
    Skipped,
    detect_language,
    read_paths,
    split_text,
)
from zerda_async.apps._reports import (
    REPORTS,
    ErrorReport,
    HTTPProblem,
    report_for,
    stage_failure,
)
from zerda_async.apps._runs import STAGE_EVENTS, TimedResult, run_timed
from zerda_async.apps._saved_index import (
    MANIFEST_NAME,
    IndexManifest,
    open_index,
    read_manifest,
    saved_config,
)

__all__ = [
    "DEMO_VECTORS_PATH",
    "MANIFEST_NAME",
    "REPORTS",
    "STAGE_EVENTS",
    "SUFFIXES",
    "DemoChunk",
    "ErrorReport",
    "HTTPProblem",
    "IndexManifest",
    "IngestReport",
    "Skipped",
    "TimedResult",
    "detect_language",
    "load_demo_corpus",
    "open_index",
    "read_manifest",
    "read_paths",
    "report_for",
    "run_timed",
    "saved_config",
    "split_text",
    "stage_failure",
]
