"""Saved indexes of the command line and the HTTP service: one directory per index.

The directory holds what :meth:`AsyncContextEngine.save` writes (see
:mod:`zerda_async.indexing._persistence`) plus a small manifest, ``zerda-cli.json``,
recording the profile and text analyser that built the keyword index and the
embedder that built the vectors (so queries are analysed and embedded the same
way; see :mod:`zerda_async.apps._profiles`) and which files went in.  The command
line and the service only ever touch saved indexes through :func:`save_index`
and :func:`open_index`.

An index saved from Python (``await engine.save(dir)``) has no
``zerda-cli.json``: it opens all the same, with the configuration saved with it
and *no* embedder (nothing records which one built its vectors), so vector
search is off and keyword and metadata search answer.  :func:`describe_embedder`
says which case applies, for the applications to print.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import msgspec

from zerda_async.core.config import ContextEngineConfig, config_from_json
from zerda_async.embedders import embedder_from_params
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import EmbedderLoadError, IndexDirectoryError
from zerda_async.indexing import CURRENT_FILE, MANIFEST_FILE, Manifest

__all__ = [
    "MANIFEST_NAME",
    "NO_EMBEDDER",
    "PYTHON_SAVED",
    "IndexManifest",
    "build_index",
    "describe_embedder",
    "make_embedder",
    "open_index",
    "read_manifest",
    "save_index",
    "saved_config",
]

MANIFEST_NAME = "zerda-cli.json"
"""File name of the manifest inside an index directory."""

_FORMAT = 2
_READABLE = (1, 2)  # format 1: before profiles (documented profile, hashing embedder)
NO_EMBEDDER = "none"
"""``IndexManifest.embedder`` of an index without vectors (keyword only, or saved from Python)."""
PYTHON_SAVED = ""
"""``IndexManifest.profile`` of an index saved from Python: its configuration as saved."""


class IndexManifest(msgspec.Struct, kw_only=True):
    """What the command line records next to a saved index."""

    format: int = _FORMAT
    profile: str = "documented"
    """``recommended`` or ``documented``; older manifests were all built with the latter."""
    text_analyzer: str = "documented"
    embedder: str = "hashing"
    """The embedder's name (its ``params()["kind"]``), or ``none`` for keyword only."""
    embedder_params: dict[str, Any] = msgspec.field(default_factory=dict)
    chunks: int = 0
    files: list[str] = msgspec.field(default_factory=list)
    created: float = msgspec.field(default_factory=time.time)


def read_manifest(directory: str | Path) -> IndexManifest:
    """The manifest of ``directory``; raises :class:`IndexDirectoryError` when missing or bad.

    For an index saved from Python (no ``zerda-cli.json``) the manifest is
    made from the index's own one: its chunk count and no embedder.
    """
    path = Path(directory)
    if not path.is_dir():
        raise IndexDirectoryError(f"{path} is not a directory (build an index with 'zerda index')")
    try:
        manifest = msgspec.json.decode((path / MANIFEST_NAME).read_bytes(), type=IndexManifest)
    except FileNotFoundError:
        return _python_saved_manifest(path)
    except (OSError, msgspec.DecodeError) as exc:
        raise IndexDirectoryError(f"{path / MANIFEST_NAME} is unreadable: {exc}") from None
    if manifest.format not in _READABLE:
        raise IndexDirectoryError(
            f"{path} was written by another version (format {manifest.format}, "
            f"embedder {manifest.embedder!r})"
        )
    return manifest


def _python_saved_manifest(path: Path) -> IndexManifest:
    """The manifest of an index written by ``engine.save()`` alone (checked fully at load)."""
    pointer = path / CURRENT_FILE
    if not pointer.is_file():
        raise IndexDirectoryError(
            f"{path} is not a zerda index (no {MANIFEST_NAME} and no {CURRENT_FILE}; "
            "build one with 'zerda index' or AsyncContextEngine.save())"
        )
    try:
        generation = path / pointer.read_text(encoding="utf-8").strip()
        saved = msgspec.json.decode((generation / MANIFEST_FILE).read_bytes(), type=Manifest)
    except (OSError, UnicodeDecodeError, msgspec.DecodeError) as exc:
        raise IndexDirectoryError(f"{path} holds an unreadable saved index: {exc}") from None
    return IndexManifest(
        profile=PYTHON_SAVED, embedder=NO_EMBEDDER, chunks=saved.chunks, created=saved.created
    )


def describe_embedder(manifest: IndexManifest) -> str:
    """One line saying how queries on this index are embedded (for the applications to print)."""
    if manifest.profile == PYTHON_SAVED:
        return (
            "saved from Python: no embedder recorded, so vector search is off "
            "(keyword and metadata search only); configuration as saved"
        )
    profile = f"{manifest.profile} profile, text analyser {manifest.text_analyzer}"
    if manifest.embedder == NO_EMBEDDER:
        return f"{profile}, keyword search only (no embedder; recorded by 'zerda index')"
    dim = manifest.embedder_params.get("dim", "?")
    return f"{profile}, embedder {manifest.embedder} ({dim} dimensions, recorded by 'zerda index')"


def make_embedder(manifest: IndexManifest, directory: Any = "the index") -> Any:
    """The embedder that built the index described by ``manifest`` (``None``: none recorded).

    An embedder that is not installed here is an :class:`IndexDirectoryError`
    naming it: embedding queries with another one would compare unlike vectors.
    """
    if manifest.embedder == NO_EMBEDDER:
        return None
    try:
        return embedder_from_params(manifest.embedder_params)
    except EmbedderLoadError as exc:
        raise IndexDirectoryError(
            f"{directory} was indexed with the {manifest.embedder} embedder, which cannot be "
            f"loaded here: {exc}"
        ) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise IndexDirectoryError(f"bad embedder parameters in manifest: {exc}") from None


def saved_config(directory: str | Path) -> ContextEngineConfig:
    """The configuration saved with the index in ``directory`` (blocking file I/O).

    The applications start from it and apply their own options (template,
    metadata search) on top, so an index keeps the configuration it was
    saved with.  When it cannot be read, the defaults are returned: loading
    the index then checks every file (``config.json`` included) and raises
    the precise :class:`~zerda_async.errors.IndexFormatError` naming it.
    """
    path = Path(directory)
    try:
        generation = path / (path / CURRENT_FILE).read_text(encoding="utf-8").strip()
        return config_from_json((generation / "config.json").read_bytes())
    except (OSError, UnicodeDecodeError, ValueError):  # ConfigError is a ValueError
        return ContextEngineConfig()


async def build_index(
    engine: AsyncContextEngine,
    chunks: Sequence[Any],
    embedder: Any,
) -> None:
    """Index ``chunks`` into ``engine`` with ``embedder`` (batched).

    ``embedder=None`` builds a keyword-only index.
    """
    if embedder is None:
        await engine.index(chunks)
        return
    await engine.index(chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch)


async def save_index(
    engine: AsyncContextEngine, directory: str | Path, manifest: IndexManifest
) -> None:
    """Save ``engine``'s index into ``directory`` and write the manifest beside it."""
    path = Path(directory)
    await engine.save(path)
    data = msgspec.json.format(msgspec.json.encode(manifest))
    await anyio.to_thread.run_sync((path / MANIFEST_NAME).write_bytes, data)


@asynccontextmanager
async def open_index(
    directory: str | Path,
    config: ContextEngineConfig | None = None,
    *,
    embedder: Any = None,
    **engine_kwargs: Any,
) -> AsyncIterator[AsyncContextEngine]:
    """Load the index saved in ``directory`` and run an engine on it for the ``with`` block.

    Queries are embedded with the embedder recorded in the manifest (none
    for an index saved from Python), or ``embedder`` when given (the recorded
    one wrapped, e.g. in a vector cache).  ``config=None`` uses the saved one.
    """
    manifest = await anyio.to_thread.run_sync(read_manifest, directory)
    if embedder is None:
        embedder = make_embedder(manifest, directory)
    engine = await AsyncContextEngine.load(
        Path(directory),
        embed_fn=embedder,
        config=config,
        batch_embed_fn=None if embedder is None else embedder.embed_batch,
        **engine_kwargs,
    )
    async with engine:
        yield engine
