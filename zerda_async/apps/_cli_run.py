"""``zerda query``, ``zerda serve`` and ``zerda demo``: use a saved index or an index store."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import anyio
import msgspec

from zerda_async.apps._cli_args import where_filters
from zerda_async.apps._cli_index import check_profile
from zerda_async.apps._console import PROG, err, format_timings, summary
from zerda_async.apps._profiles import (
    check_requested,
)
from zerda_async.apps._runs import TimedResult, run_timed
from zerda_async.apps._saved_index import (
    describe_embedder,
    open_index,
    read_manifest,
    saved_config,
)
from zerda_async.apps._wire import result_out
from zerda_async.errors import UsageError
from zerda_async.pipeline import RunOptions

__all__ = ["cmd_demo", "cmd_query", "cmd_serve"]


def cmd_query(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UsageError("the query is empty")
    manifest = check_profile(args, args.index_dir)
    # The index keeps the configuration it was saved with; options apply on top.
    config = saved_config(args.index_dir)
    config.retriever.use_metadata = True  # so --filter pairs are searched
    config.validate()  # a bad saved field is a one-line error naming it
    filters = dict(args.filter) or None
    where = where_filters(args.where)
    template = args.template or config.composer.template
    options = RunOptions(
        metadata_filters=filters,
        max_chunks=args.max_chunks,
        override_budget=args.budget,
        filters=where,
        template=args.template,
    )
    started = time.perf_counter()
    load_ms = 0.0

    async def run() -> TimedResult:
        nonlocal load_ms
        async with open_index(args.index_dir, config) as engine:
            load_ms = (time.perf_counter() - started) * 1000
            return await run_timed(engine, args.question, options, timeout=args.timeout)

    timed = anyio.run(run)
    timings = f"timings: {format_timings(timed.timings_ms, timed.total_ms)} (load {load_ms:.1f} ms)"
    index_line = f"index: {describe_embedder(manifest)}"
    if args.json:
        out = result_out(
            timed.result,
            template=template,
            request_id=timed.request_id,
            timings_ms=timed.timings_ms,
        )
        sys.stdout.buffer.write(msgspec.json.encode(out) + b"\n")
        sys.stdout.flush()
        err(timings)
        err(index_line)
        return 0
    print(timed.result.context)
    print()
    print(f"-- {timings}")
    print(f"-- {index_line}")
    print(f"-- {summary(timed)}")
    return 0


def _read_api_key(path: str) -> str:
    """The API key in ``path``: its first line, stripped; an unusable file is a usage error."""
    try:
        with open(path, encoding="utf-8") as f:
            key = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--api-key-file {path}: {exc}") from None
    if len(key) < 16:
        # A short key is guessable; refusing it is kinder than serving "protected" data.
        raise UsageError(f"--api-key-file {path}: the key must be at least 16 characters")
    return key


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from zerda_async.apps.server import ServiceSettings, serve_stores
        from zerda_async.apps.server._replica import check_state_url, is_postgres_url
    except ImportError as exc:
        raise RuntimeError(
            f"the HTTP service needs the 'server' extra (pip install 'zerda-async[server]'): {exc}"
        ) from None
    if (args.index_dir is None) == (args.store is None):
        raise UsageError("give the index once: 'zerda serve DIR' or 'zerda serve --store URL'")
    store: str = args.store or args.index_dir
    check_state_url(args.state)
    if args.vector_search != "exact" and not is_postgres_url(store):
        raise UsageError(
            f"--search {args.vector_search} needs a postgresql:// index store"
            " (a saved directory is searched exactly in memory)"
        )

    async def check_index() -> None:
        # Load once before uvicorn starts, so a bad index is a one-line error.
        async with open_index(store):
            pass

    api_key = _read_api_key(args.api_key_file) if args.api_key_file else None
    default_template = None
    if is_postgres_url(store):
        default_template = _check_store_profile(args, store)
    else:
        check_profile(args, store)
        anyio.run(check_index)
        err(f"{PROG}: index {store}: {describe_embedder(read_manifest(store))}")
        # default_template None: store_app takes the saved profile's, as index_app does.
    settings = ServiceSettings(
        max_body_bytes=args.max_body_bytes,
        request_timeout=args.request_timeout,
        max_pending=args.max_pending,
        cors_origins=list(args.cors_origin),
        api_key=api_key,
        vector_search=args.vector_search,
        ef_search=args.ef_search,
        default_template=default_template,
    )
    serve_stores(
        store, args.state, host=args.host, port=args.port, workers=args.workers, settings=settings
    )
    return 0


def _check_store_profile(args: argparse.Namespace, url: str) -> str | None:
    """The recorded profile's template, once ``--profile``/``--embedder`` are checked against it.

    A store that does not answer now is not an error: the service starts and
    reports it on ``/readyz`` until it is back.
    """
    from zerda_async.apps.server._replica import read_profile
    from zerda_async.errors import StoreUnavailableError
    from zerda_async.stores import PostgresIndexStore, redact

    async def read() -> tuple[Any, bool]:
        store = await PostgresIndexStore.open(url, connect_timeout=2.0, operation_timeout=5.0)
        try:
            return await read_profile(store), await store.has_hnsw_index()
        finally:
            await store.aclose()

    try:
        recorded, has_hnsw = anyio.run(read)
    except (StoreUnavailableError, OSError):
        return None
    if args.vector_search == "hnsw" and not has_hnsw:
        raise UsageError(
            f"--search hnsw: the index store {redact(url)} has no HNSW index;"
            " build it with 'zerda index PATH... --store URL --hnsw'"
        )
    if recorded is None:
        return None
    check_requested(redact(url), recorded.profile, recorded.embedder, args.profile, args.embedder)
    err(f"{PROG}: index store {redact(url)}: {recorded.describe()}")
    template: str = recorded.config().composer.template
    return template


def cmd_demo(args: argparse.Namespace) -> int:
    from zerda_async.apps._demo import main as demo

    demo(args.profile)
    return 0
