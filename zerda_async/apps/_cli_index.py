"""``zerda index``: read, chunk and index files into a saved directory or an index store."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from zerda_async.apps._chunk_sizes import (
    MIN_CHUNK,
    ChunkSizes,
    chunk_sizes,
    describe_chunk_sizes,
)
from zerda_async.apps._console import PROG, err
from zerda_async.apps._index_vectors import VECTOR_CACHE, start_embedding, store_vectors
from zerda_async.apps._ingest import SUFFIXES, read_paths
from zerda_async.apps._interrupt import interruptible
from zerda_async.apps._profiles import (
    DEFAULT_PROFILE,
    KEYWORD_ONLY,
    EmbedderChoice,
    check_requested,
    choose_embedder,
    profile_config,
)
from zerda_async.apps._progress import Progress
from zerda_async.apps._saved_index import (
    MANIFEST_NAME,
    PYTHON_SAVED,
    IndexManifest,
    build_index,
    describe_embedder,
    make_embedder,
    open_index,
    read_manifest,
    save_index,
)
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index.chunks import embedding_text
from zerda_async.embedders import HashingEmbedder
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import UsageError
from zerda_async.indexing import CURRENT_FILE

__all__ = ["check_profile", "cmd_index", "note_other_names", "stale_doc_ids"]

DEFAULT_DIM = 256
"""``--dim`` of a new index with the hashing embedder."""


def cmd_index(args: argparse.Namespace) -> int:
    with interruptible():  # Ctrl-C while embedding stops between two steps
        return _index(args)


def _index(args: argparse.Namespace) -> int:
    if args.hnsw and args.store is None:
        raise UsageError("--hnsw builds an index store's HNSW index: use it with --store URL")
    if args.store is not None:
        if args.replace:
            raise UsageError("--replace rebuilds an --out directory; an index store is not one")
        return _index_into_store(args)
    out = Path(args.out)
    existing = _existing_index(out, args.replace)
    if existing is not None:
        return _add_to_saved(args, out, existing)
    profile = args.profile or DEFAULT_PROFILE
    sizes = chunk_sizes(args, profile)
    report = _read_report(args, sizes)
    config = profile_config(profile)
    choice = choose_embedder(profile, args.embedder, args.dim or DEFAULT_DIM)
    manifest = _index_manifest(profile, config, choice.name, choice.embedder)
    manifest.chunks, manifest.files = len(report.chunks), report.files
    texts = [embedding_text(c, config.retriever.embed_heading) for c in report.chunks]
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
    print(report.describe_kinds())
    if embedding is not None:
        print(embedding.summary())
    print(f"{describe_embedder(manifest)}; {describe_chunk_sizes(sizes)}")
    return 0


def _other_dim(dim: int | None, embedder: str, params: dict[str, Any]) -> bool:
    """Whether ``--dim`` asks for other hashing dimensions than the index was built with.

    ``--dim`` sizes the hashing embedder only: with another embedder, or none, it
    changes nothing, so it is not held against the index.
    """
    return dim is not None and embedder == HashingEmbedder.name and dim != params.get("dim")


def _existing_index(out: Path, replace: bool) -> IndexManifest | None:
    """The manifest of the index already in ``out`` to add to (``None``: build ``out`` anew).

    Anew when ``out`` is missing or empty, or with ``--replace`` (``engine.save``
    swaps the new index in atomically).  A non-empty directory that holds no
    zerda index is refused either way: ``--out`` never writes over other files.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    # A directory holding only a vector cache is an interrupted first run: resume it.
    if not out.is_dir() or not any(e.name != VECTOR_CACHE for e in out.iterdir()):
        return None
    if not (out / MANIFEST_NAME).is_file() and not (out / CURRENT_FILE).is_file():
        raise UsageError(f"--out {out} is a non-empty directory that holds no zerda index")
    return None if replace else read_manifest(out)


def _add_to_saved(args: argparse.Namespace, out: Path, manifest: IndexManifest) -> int:
    """``zerda index PATH... --out EXISTING``: add the files, replacing those indexed before.

    As ``--store`` does: a file indexed again replaces its chunks (doc ids come
    from the file names), other chunks stay.  The index keeps the profile and
    embedder it was built with; asking for others is a one-line error.
    """
    if manifest.profile == PYTHON_SAVED:
        raise UsageError(
            f"--out {out} holds an index saved from Python, which records no profile or "
            "embedder to add chunks with; pass --replace to build it anew from these files"
        )
    _check_same_build(args, out, manifest)
    sizes = chunk_sizes(args, manifest.profile)
    report = _read_report(args, sizes)
    # The new chunks are embedded through the index's vector cache, as a first build's are.
    recorded = make_embedder(manifest, out)
    embedding = None
    if recorded is not None:
        heading = profile_config(manifest.profile).retriever.embed_heading
        texts = [embedding_text(c, heading) for c in report.chunks]
        embedding = start_embedding(recorded, texts, out / VECTOR_CACHE, quiet=args.quiet)
    started = time.perf_counter()

    async def run() -> tuple[int, int]:
        wrapped = None if embedding is None else embedding.embedder
        async with open_index(out, embedder=wrapped) as engine:
            removed = 0
            existing = engine.doc_ids()
            note_other_names(existing, report.chunks)
            gone = stale_doc_ids(existing, report.chunks)
            if gone:
                removed = await engine.remove(gone)
            replaced = await engine.update(report.chunks)
            manifest.chunks = engine.corpus_size
            manifest.files = sorted({*manifest.files, *report.files})
            await save_index(engine, out, manifest)
            return replaced + removed, engine.corpus_size

    try:
        dropped, total = anyio.run(run)
    finally:
        if embedding is not None:
            embedding.abort()  # ends the line; the cache keeps every vector of the index
    elapsed = time.perf_counter() - started
    print(
        f"added {len(report.chunks)} chunks from {len(report.files)} file(s) to {out}, replacing "
        f"{dropped} chunk(s) of files indexed before: {total} chunks in {elapsed:.2f} s "
        f"({len(report.skipped)} skipped; --replace builds it anew)"
    )
    if embedding is not None:
        print(embedding.summary())
    print(f"{describe_embedder(manifest)}; {describe_chunk_sizes(sizes)}")
    return 0


def _check_same_build(args: argparse.Namespace, out: Path, manifest: IndexManifest) -> None:
    """Refuse ``--profile``/``--embedder``/``--dim`` other than those ``out`` was built with."""
    try:
        check_requested(out, manifest.profile, manifest.embedder, args.profile, args.embedder)
    except UsageError as exc:
        raise UsageError(f"{exc}, or pass --replace to build {out} anew") from None
    if _other_dim(args.dim, manifest.embedder, manifest.embedder_params):
        raise UsageError(
            f"{out} was indexed with {describe_embedder(manifest)}; --dim {args.dim} does not "
            f"match it (leave --dim out, or pass --replace to build {out} anew)"
        )


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


def _read_report(args: argparse.Namespace, sizes: ChunkSizes) -> Any:
    """Read and chunk the paths, reporting what was skipped, ignored or too short."""
    quiet = bool(getattr(args, "quiet", False))

    def progress(total: int) -> Progress:
        return Progress(total, label="reading", unit="files", quiet=quiet)

    try:
        report = read_paths(
            args.paths,
            max_chars=sizes[0],
            long_chars=sizes[1],
            all_files=args.all_files,
            min_chars=MIN_CHUNK,
            progress=progress,
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
    adding to a store keeps the ones it was built with (as ``--out`` does),
    and naming others is a one-line error.
    """
    from zerda_async.apps.server._replica import (
        StoreProfile,
        is_postgres_url,
        read_profile,
    )
    from zerda_async.stores import PostgresIndexStore, redact

    if not is_postgres_url(args.store):
        raise UsageError(f"--store {args.store!r}: give a postgresql://... URL (or use --out)")

    async def recorded_profile() -> StoreProfile | None:
        store = await PostgresIndexStore.open(args.store)
        try:
            return await read_profile(store)
        finally:
            await store.aclose()

    if args.hnsw and args.embedder == KEYWORD_ONLY:
        raise UsageError("--hnsw needs vectors, and --embedder none is keyword only")
    recorded = anyio.run(recorded_profile)  # None: nothing written yet
    if recorded is not None:
        where = f"the index store {redact(args.store)}"
        check_requested(where, recorded.profile, recorded.embedder, args.profile, args.embedder)
        if _other_dim(args.dim, recorded.embedder, recorded.embedder_params):
            raise UsageError(
                f"{where} was built with the {recorded.describe()}; --dim {args.dim} does not "
                "match it (leave --dim out)"
            )
    profile = recorded.profile if recorded is not None else args.profile or DEFAULT_PROFILE
    report = _read_report(args, chunk_sizes(args, profile))
    if recorded is not None:
        choice, mine = EmbedderChoice(recorded.make_embedder(), recorded.embedder), recorded
    else:
        choice = choose_embedder(profile, args.embedder, args.dim or DEFAULT_DIM)
        mine = StoreProfile.built_with(profile, choice.name, choice.embedder)
    if args.hnsw and choice.embedder is None:
        raise UsageError(
            f"--hnsw needs vectors, and the {profile} profile with --embedder"
            f" {choice.name} is keyword only: choose an --embedder"
        )
    started = time.perf_counter()

    version, hnsw_seconds = anyio.run(_write_store, args, report, choice, mine)
    elapsed = time.perf_counter() - started
    print(
        f"indexed {len(report.chunks)} chunks from {len(report.files)} file(s) into the index "
        f"store (corpus version {version}) in {elapsed:.2f} s ({len(report.skipped)} skipped)"
    )
    print(report.describe_kinds())
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
        existing = await store.doc_ids()
        note_other_names(existing, report.chunks)
        gone = stale_doc_ids(existing, report.chunks)
        vectors = None
        if choice.embedder is not None:
            chunks, quiet = report.chunks, args.quiet
            vectors = await store_vectors(
                args.store, store, existing, chunks, choice.embedder, quiet, mine.embed_heading
            )
        version: int = await store.replace(report.chunks, vectors, also_remove=gone)
        if not args.hnsw:
            return version, None
        started_hnsw = time.perf_counter()
        await store.create_hnsw_index(args.hnsw_m, args.hnsw_ef_construction)
        return version, time.perf_counter() - started_hnsw
    finally:
        await store.aclose()


def stale_doc_ids(doc_ids: Iterable[Any], chunks: Sequence[Any]) -> list[str]:
    """The ``doc_ids`` of chunks of the files in ``chunks`` that their new chunking no longer has.

    A text file's chunks are ``<file>#<n>``: the file indexed again replaces
    ``<file>#0..``, and those past its new last chunk must go too.
    """
    fresh = {str(c.doc_id) for c in chunks}
    stems = {str(c.doc_id).rsplit("#", 1)[0] for c in chunks}
    found = (str(d) for d in doc_ids)
    return [d for d in found if d.rsplit("#", 1)[0] in stems and d not in fresh]


def note_other_names(doc_ids: Iterable[Any], chunks: Sequence[Any]) -> None:
    """Say on standard error when a file read now seems indexed before under another name.

    A chunk's doc id starts with its file's label, which depends on how the file
    was named: ``docs/a.md`` when found in the folder ``docs``, ``a.md`` when
    named alone.  The same file given the other way gets other doc ids, so it
    is added beside its old chunks instead of replacing them; a file of the same
    name may also just be another file, so this is a note, not an error.
    """
    stems = {str(d).rsplit("#", 1)[0] for d in doc_ids}
    for label in sorted({str(c.doc_id).rsplit("#", 1)[0] for c in chunks} - stems):
        name = label.rsplit("/", 1)[-1]
        others = sorted(s for s in stems if s != label and s.rsplit("/", 1)[-1] == name)
        if others:
            err(
                f"{PROG}: note: {label} is added beside {', '.join(others[:3])}, not in its "
                "place (the same file named another way?): index it as before, by its folder "
                "or alone, to replace it"
            )
