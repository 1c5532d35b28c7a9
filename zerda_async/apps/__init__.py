"""Applications built on the engine: the ``zerda`` CLI, the demo, ingestion and the HTTP service.

* :mod:`zerda_async.apps.cli` — ``zerda index | query | serve | demo``;
* :mod:`zerda_async.apps.server` — the Starlette service (``server`` extra);
* :data:`REPORTS` / :func:`report_for` — the one table of how both report an
  exception (HTTP status, exit status); :class:`HTTPProblem` — an error
  response the service sends as it is.

Everything else here is internal to those two.
"""

from zerda_async.apps._reports import REPORTS, ErrorReport, HTTPProblem, report_for

__all__ = ["REPORTS", "ErrorReport", "HTTPProblem", "report_for"]
