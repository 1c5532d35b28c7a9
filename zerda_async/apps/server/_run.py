"""Serving a saved index: the application factory and the uvicorn runner of ``zerda serve``."""

from __future__ import annotations

import copy
import os
import signal
import threading
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec
import uvicorn
from starlette.applications import Starlette

from zerda_async.apps._saved_index import open_index, read_manifest, saved_config
from zerda_async.apps.server._access import ACCESS_LOGGER
from zerda_async.apps.server._app import ServiceSettings, create_app
from zerda_async.apps.server._replica import StoreSet, is_postgres_url
from zerda_async.core.config import ContextEngineConfig, config_from_json, config_to_json
from zerda_async.engine import AsyncContextEngine

__all__ = ["app_from_environment", "index_app", "serve_index", "serve_stores", "store_app"]

_ENVIRONMENT = "ZERDA_SERVE"
"""Environment variable carrying ``zerda serve``'s options to ``--workers`` processes."""


def index_app(
    directory: str | Path,
    settings: ServiceSettings | None = None,
    **engine_kwargs: Any,
) -> Starlette:
    """The service on the index saved in ``directory`` (checked now, loaded at start-up).

    Every engine starts from the configuration saved with the index (its
    profile), with the request's template and metadata search on top;
    requests naming no template get ``settings.default_template``, by default
    the profile's (``auto`` for the recommended profile), as ``zerda serve DIR``.
    """
    manifest = read_manifest(directory)
    settings = settings or ServiceSettings()
    engine_kwargs.setdefault("max_in_flight", max(1, min(settings.max_pending, 256)))

    saved = saved_config(directory)  # the profile the index was built with

    def open_engine(template: str) -> AbstractAsyncContextManager[AsyncContextEngine]:
        config = copy.deepcopy(saved)
        config.composer.template = template
        config.retriever.use_metadata = True  # so metadata_filters are searched
        return open_index(directory, config, **engine_kwargs)

    info = {"directory": str(directory), "chunks": manifest.chunks, "files": len(manifest.files)}
    return create_app(open_engine, settings, index_info=info, index_config=saved)


def store_app(
    store: str,
    state: str = "memory",
    settings: ServiceSettings | None = None,
    **engine_kwargs: Any,
) -> Starlette:
    """The service on ``store`` (an index directory or a PostgreSQL URL) with ``state`` stores.

    ``state`` is ``"memory"``, a ``redis://`` or a ``postgresql://`` URL (see
    :mod:`._replica`).  A directory is checked now; stores are opened at start-up.
    """
    settings = settings or ServiceSettings()
    engine_kwargs.setdefault("max_in_flight", max(1, min(settings.max_pending, 256)))
    store_set = StoreSet(
        store,
        state,
        request_timeout=settings.request_timeout,
        vector_search=settings.vector_search,
        ef_search=settings.ef_search,
    )
    info: dict[str, Any] = store_set.description()
    if not is_postgres_url(store):
        manifest = read_manifest(store)
        info.update(directory=str(store), chunks=manifest.chunks, files=len(manifest.files))

    # A saved directory serves with the configuration (profile) it was built with; an
    # index store, for now, with the documented one.
    base = ContextEngineConfig() if is_postgres_url(store) else saved_config(store)

    def open_engine(template: str) -> AbstractAsyncContextManager[AsyncContextEngine]:
        config = config_from_json(config_to_json(base))  # a fresh copy per engine
        config.composer.template = template
        config.retriever.use_metadata = True  # so metadata_filters are searched
        return store_set.engine(config, **engine_kwargs)

    return create_app(
        open_engine, settings, index_info=info, store_set=store_set, index_config=base
    )


def app_from_environment() -> Starlette:
    """The application of one ``--workers`` process (options from ``ZERDA_SERVE``)."""
    options = msgspec.json.decode(os.environ[_ENVIRONMENT])
    settings = msgspec.convert(options["settings"], ServiceSettings)
    return store_app(options["store"], options["state"], settings)


def serve_stores(
    store: str,
    state: str = "memory",
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    settings: ServiceSettings | None = None,
    log_level: str = "info",
) -> None:
    """Serve ``store`` with ``state`` stores in ``workers`` processes until SIGINT / SIGTERM.

    With several workers, uvicorn starts each process with its own engines;
    they share the stores, so they answer as one service (``--state memory``
    gives each worker its own sessions and cache: use Redis or PostgreSQL).
    """
    settings = settings or ServiceSettings()
    if workers <= 1:
        _serve(store_app(store, state, settings), host, port, log_level)
        return
    os.environ[_ENVIRONMENT] = msgspec.json.encode(
        {"store": store, "state": state, "settings": settings}
    ).decode()
    uvicorn.run(
        "zerda_async.apps.server._run:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        lifespan="on",
        log_level=log_level,
        access_log=False,
        log_config=_log_config(),
    )


def serve_index(
    directory: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: ServiceSettings | None = None,
    log_level: str = "info",
) -> None:
    """Serve the index in ``directory`` with uvicorn until SIGINT or SIGTERM; then return.

    uvicorn shuts down gracefully on either signal and then raises it again;
    here that second delivery is absorbed, so a stopped server is a normal exit.
    """
    _serve(index_app(directory, settings), host, port, log_level)


def _serve(app: Starlette, host: str, port: int, log_level: str) -> None:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        log_level=log_level,
        # uvicorn's access log prints the query string (the page's ?q=<question>):
        # it is off, and the service's own access log prints route paths only.
        access_log=False,
        log_config=_log_config(),
    )
    server = uvicorn.Server(config)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _absorb) if main_thread else None
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _log_config() -> dict[str, Any]:
    """uvicorn's logging configuration plus the service's access log on its access handler."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["loggers"][ACCESS_LOGGER] = {"handlers": ["access"], "level": "INFO", "propagate": False}
    return config


def _absorb(signum: int, frame: FrameType | None) -> None:
    """SIGTERM handler in force once uvicorn has finished its own handling."""
