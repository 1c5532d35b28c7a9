"""Applications built on the engine: the ``zerda`` CLI, the demo, ingestion and the HTTP service.

* :mod:`zerda_async.apps.cli` — ``zerda index | query | serve | demo``;
* :mod:`zerda_async.apps.server` — the Starlette service (``server`` extra).

Everything else here is internal to those two.
"""

__all__: list[str] = []
