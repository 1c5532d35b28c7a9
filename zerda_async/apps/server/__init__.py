"""The HTTP service of zerda-async (install the ``server`` extra: Starlette and uvicorn).

:func:`create_app` builds the ASGI application from an engine opener;
:func:`serve_index` serves a saved index (what ``zerda serve DIR`` runs);
:func:`store_app` / :func:`serve_stores` serve ``--store`` / ``--state`` URLs (replicas);
:class:`StoreProfile` is what an index store records about how it was built
(:func:`read_profile` reads it, under the :data:`PROFILE_SETTING` setting).
:data:`MAX_QUERY_CHARS` and :data:`MAX_QUERIES` are the request limits on
queries; :data:`ACCESS_LOGGER` names the logger of the service's access log.
See :mod:`zerda_async.apps.server._app` for the endpoints and error statuses.
"""

from zerda_async.apps import HTTPProblem
from zerda_async.apps.server._access import ACCESS_LOGGER
from zerda_async.apps.server._app import EngineOpener, EnginePool, ServiceSettings, create_app
from zerda_async.apps.server._replica import (
    EMBEDDER_SETTING,
    PROFILE_SETTING,
    StoreProfile,
    read_profile,
)
from zerda_async.apps.server._run import index_app, serve_index, serve_stores, store_app
from zerda_async.apps.server._schemas import MAX_QUERIES, MAX_QUERY_CHARS

__all__ = [
    "ACCESS_LOGGER",
    "EMBEDDER_SETTING",
    "MAX_QUERIES",
    "MAX_QUERY_CHARS",
    "PROFILE_SETTING",
    "EngineOpener",
    "EnginePool",
    "HTTPProblem",
    "ServiceSettings",
    "StoreProfile",
    "create_app",
    "index_app",
    "read_profile",
    "serve_index",
    "serve_stores",
    "store_app",
]
