"""``zerda index``: read, chunk and index files into a saved directory or an index store."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import anyio

from zerda_async.apps._cli_args import (
    CHUNK_SIZES,
    MIN_CHUNK,
    check_chunk_size,
)
from zerda_async.apps._console import PROG, err
from zerda_async.apps._index_vectors import VECTOR_CACHE, start_embedding, store_cache_path
from zerda_async.apps._ingest import SUFFIXES, read_paths
from zerda_async.apps._profiles import (
    check_requested,
    choose_embedder,
    profile_config,
)
from zerda_async.apps._saved_index import (
    MANIFEST_NAME,
    PYTHON_SAVED,
    IndexManifest,
    build_index,
    describe_embedder,
    read_manifest,
    save_index,
)
from zerda_async.core.config import ContextEngineConfig
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import UsageError

__all__ = ["check_profile", "cmd_index"]


def cmd_index(args: argparse.Namespace) -> int:
    if args.hnsw and args.store is None:
        raise UsageError("--hnsw builds an index store's HNSW index: use it with --store URL")
    if args.store is not None:
        return _index_into_store(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    # A directory holding only a vector cache is an interrupted first run: resume it.
    if (
        out.is_dir()
        and not (out / MANIFEST_NAME).is_file()
        and any(entry.name != VECTOR_CACHE for entry in out.iterdir())
    ):
        raise UsageError(f"--out {out} is a non-empty directory that holds no zerda index")
    chunk_size = args.chunk_size or CHUNK_SIZES[args.profile]
    report = _read_report(args, chunk_size)
    config = profile_config(args.profile)
    choice = choose_embedder(args.profile, args.embedder, args.dim)
    manifest = _index_manifest(args.profile, config, choice.name, choice.embedder)
    manifest.chunks, manifest.files = len(report.chunks), report.files
    texts = [c.text for c in report.chunks]
    embedding = None
    if choice.embedder is not None:
        embedding = start_embedding(choice.embedder, texts, out / VECTOR_CACHE, quiet=args.quiet)
    started = time.perf_counter()

    async def run() -> None:
        async with AsyncContextEngine(config) as engine:
            embedder = None if embedding is None else embedding.embedder
            await build_index(engine, report.chunks, embedder)
            await save_index(engine, out, manifest)

    try:
        anyio.run(run)
    except BaseException:
        if embedding is not None:
            embedding.abort()  # what was embedded stays cached: the next run resumes
        raise
    if embedding is not None:
        embedding.finish(texts)
    elapsed = time.perf_counter() - started
    print(
        f"indexed {len(report.chunks)} chunks from {len(report.files)} file(s) into {out} "
        f"in {elapsed:.2f} s ({len(report.skipped)} skipped)"
    )
    if embedding is not None:
        print(embedding.summary())
    print(f"{describe_embedder(manifest)}; chunks of at most {chunk_size} characters")
    return 0


def _index_manifest(
    profile: str, config: ContextEngineConfig, name: str, embedder: Any
) -> IndexManifest:
    """The manifest recording how an index is built (chunks and files are set after reading)."""
    return IndexManifest(
        profile=profile,
        text_analyzer=config.retriever.text_analyzer,
        embedder=name,
        embedder_params={} if embedder is None else embedder.params(),
    )


def check_profile(args: argparse.Namespace, index_dir: str) -> IndexManifest:
    """The index's manifest, once ``--profile``/``--embedder`` are checked against it."""
    manifest = read_manifest(index_dir)  # a clear error before anything starts
    if manifest.profile != PYTHON_SAVED:
        check_requested(index_dir, manifest.profile, manifest.embedder, args.profile, args.embedder)
    elif args.profile is not None or args.embedder not in (None, "auto"):
        raise UsageError(
            f"{index_dir} was saved from Python: it opens with its saved configuration "
            "and no embedder, so --profile and --embedder do not apply"
        )
    return manifest


def _read_report(args: argparse.Namespace, chunk_size: int) -> Any:
    """Read and chunk the paths, reporting what was skipped, ignored or too short."""
    check_chunk_size(chunk_size)
    try:
        report = read_paths(
            args.paths, max_chars=chunk_size, all_files=args.all_files, min_chars=MIN_CHUNK
        )
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    for skipped in report.skipped:
        err(f"{PROG}: skipped {skipped.path}: {skipped.reason}")
    if report.ignored:
        kinds = ", ".join(sorted(SUFFIXES))
        err(
            f"{PROG}: ignored {report.ignored} file(s) in folders that are not {kinds} "
            "(name them, or pass --all-files)"
        )
    if report.short:
        err(
            f"{PROG}: note: {report.short} chunk(s) shorter than {MIN_CHUNK} characters are "
            "indexed but the chunk filter drops them from contexts"
        )
    if not report.chunks:
        raise RuntimeError("no text to index in the given paths")
    return report


def _index_into_store(args: argparse.Namespace) -> int:
    """``zerda index PATH... --store postgresql://...``: one transaction, seen by every replica.

    The store follows ``--profile`` / ``--embedder`` like ``--out`` does and
    records them (:class:`~zerda_async.apps.server._replica.StoreProfile`);
    writing into a store built with other ones is a one-line error.
    """
    from zerda_async.apps.server._replica import (
        StoreProfile,
        is_postgres_url,
    )

    if not is_postgres_url(args.store):
        raise UsageError(f"--store {args.store!r}: give a postgresql://... URL (or use --out)")
    report = _read_report(args, args.chunk_size or CHUNK_SIZES[args.profile])
    config = profile_config(args.profile)
    choice = choose_embedder(args.profile, args.embedder, args.dim)
    if args.hnsw and choice.embedder is None:
        raise UsageError(
            f"--hnsw needs vectors, and the {args.profile} profile with --embedder"
            f" {args.embedder or 'auto'} is keyword only: choose an --embedder"
        )
    params = {} if choice.embedder is None else choice.embedder.params()
    mine = StoreProfile(args.profile, config.retriever.text_analyzer, choice.name, params)
    started = time.perf_counter()

    version, hnsw_seconds = anyio.run(_write_store, args, report, choice, mine)
    elapsed = time.perf_counter() - started
    print(
        f"indexed {len(report.chunks)} chunks from {len(report.files)} file(s) into the index "
        f"store (corpus version {version}) in {elapsed:.2f} s ({len(report.skipped)} skipped)"
    )
    print(mine.describe())
    if hnsw_seconds is not None:
        print(
            f"built the HNSW index (m {args.hnsw_m}, ef_construction {args.hnsw_ef_construction})"
            f" in {hnsw_seconds:.2f} s: serve it with --search hnsw"
        )
    return 0


async def _write_store(
    args: argparse.Namespace, report: Any, choice: Any, mine: Any
) -> tuple[int, float | None]:
    """Write the chunks of ``report`` into ``--store``; (version, HNSW build seconds or None)."""
    from zerda_async.apps.server._replica import PROFILE_SETTING, read_profile
    from zerda_async.stores import PostgresIndexStore, redact

    store = await PostgresIndexStore.open(args.store, analyzer=mine.text_analyzer)
    try:
        recorded = await read_profile(store)
        if recorded is not None and recorded != mine:
            raise UsageError(
                f"the index store {redact(args.store)} was built with the "
                f"{recorded.describe()}; index into it with the same --profile, --embedder "
                f"and --dim (got the {mine.describe()})"
            )
        await store.set_setting(PROFILE_SETTING, mine.record())
        # Files indexed again replace their chunks (doc ids come from the file names).
        gone = await _stale_doc_ids(store, report)
        vectors = None
        if choice.embedder is not None:
            vectors = await _store_vectors(args, store, report, choice.embedder)
        version: int = await store.replace(report.chunks, vectors, also_remove=gone)
        if not args.hnsw:
            return version, None
        started_hnsw = time.perf_counter()
        await store.create_hnsw_index(args.hnsw_m, args.hnsw_ef_construction)
        return version, time.perf_counter() - started_hnsw
    finally:
        await store.aclose()


async def _store_vectors(args: argparse.Namespace, store: Any, report: Any, embedder: Any) -> Any:
    """The chunks' vectors: those the store or the cache holds reused, the rest embedded.

    Embedding runs in a worker thread (the event loop keeps the store's
    connection alive), behind a progress line; the cache file keeps what an
    interrupted run embedded.
    """
    from zerda_async.stores import stored_vectors

    texts = [c.text for c in report.chunks]
    # The files' chunks as stored before (any chunking): their vectors are reused.
    stems = {str(c.doc_id).rsplit("#", 1)[0] for c in report.chunks}
    before = [d for d in await store.doc_ids() if d.rsplit("#", 1)[0] in stems]
    known = await stored_vectors(store, before)
    path = store_cache_path(args.store, embedder.params())
    embedding = await anyio.to_thread.run_sync(
        lambda: start_embedding(embedder, texts, path, quiet=args.quiet, preload=known)
    )
    try:
        vectors = await anyio.to_thread.run_sync(embedding.embedder.embed_batch, texts)
    except BaseException:
        embedding.abort()
        raise
    embedding.finish(texts)
    print(embedding.summary())
    return vectors


async def _stale_doc_ids(store: Any, report: Any) -> list[str]:
    """Doc ids of chunks of the given files that the new chunking no longer produces."""
    fresh = {str(c.doc_id) for c in report.chunks}
    stems = {str(c.doc_id).rsplit("#", 1)[0] for c in report.chunks}
    return [d for d in await store.doc_ids() if d.rsplit("#", 1)[0] in stems and d not in fresh]
