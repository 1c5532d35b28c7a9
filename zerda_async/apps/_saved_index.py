"""Saved indexes of the command line and the HTTP service: one directory per index.

The directory holds what :meth:`AsyncContextEngine.save` writes (see
:mod:`zerda_async.indexing._persistence`) plus a small manifest, ``zerda-cli.json``,
recording which embedder built the vectors (so queries are embedded the same
way) and which files went in.  The command
line and the service only ever touch saved indexes through :func:`save_index`
and :func:`open_index`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import msgspec

from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders._hashing import HashingEmbedder
from zerda_async.engine._engine import AsyncContextEngine
from zerda_async.errors import IndexDirectoryError

__all__ = [
    "MANIFEST_NAME",
    "IndexManifest",
    "build_index",
    "make_embedder",
    "open_index",
    "read_manifest",
    "save_index",
]

MANIFEST_NAME = "zerda-cli.json"
"""File name of the manifest inside an index directory."""

_FORMAT = 1


class IndexManifest(msgspec.Struct, kw_only=True):
    """What the command line records next to a saved index."""

    format: int = _FORMAT
    embedder: str = "hashing"
    embedder_params: dict[str, Any] = msgspec.field(default_factory=dict)
    chunks: int = 0
    files: list[str] = msgspec.field(default_factory=list)
    created: float = msgspec.field(default_factory=time.time)


def read_manifest(directory: str | Path) -> IndexManifest:
    """The manifest of ``directory``; raises :class:`IndexDirectoryError` when missing or bad."""
    path = Path(directory)
    if not path.is_dir():
        raise IndexDirectoryError(f"{path} is not a directory (build an index with 'zerda index')")
    try:
        manifest = msgspec.json.decode((path / MANIFEST_NAME).read_bytes(), type=IndexManifest)
    except FileNotFoundError:
        raise IndexDirectoryError(
            f"{path} is not a zerda index (no {MANIFEST_NAME}; build one with 'zerda index')"
        ) from None
    except (OSError, msgspec.DecodeError) as exc:
        raise IndexDirectoryError(f"{path / MANIFEST_NAME} is unreadable: {exc}") from None
    if manifest.format != _FORMAT or manifest.embedder != "hashing":
        raise IndexDirectoryError(
            f"{path} was written by another version (format {manifest.format}, "
            f"embedder {manifest.embedder!r})"
        )
    return manifest


def make_embedder(manifest: IndexManifest) -> HashingEmbedder:
    """The embedder that built the index described by ``manifest``."""
    try:
        return HashingEmbedder.from_params(manifest.embedder_params)
    except (TypeError, ValueError) as exc:
        raise IndexDirectoryError(f"bad embedder parameters in manifest: {exc}") from None


async def build_index(
    engine: AsyncContextEngine,
    chunks: Sequence[Any],
    embedder: HashingEmbedder,
    progress: Any = None,
) -> None:
    """Index ``chunks`` into ``engine`` with ``embedder`` (batched, reporting ``progress``)."""
    await engine.index(
        chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch, progress=progress
    )


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
    **engine_kwargs: Any,
) -> AsyncIterator[AsyncContextEngine]:
    """Load the index saved in ``directory`` and run an engine on it for the ``with`` block.

    Queries are embedded with the embedder recorded in the manifest.
    """
    manifest = await anyio.to_thread.run_sync(read_manifest, directory)
    embedder = make_embedder(manifest)
    engine = await AsyncContextEngine.load(
        Path(directory),
        embed_fn=embedder,
        config=config,
        batch_embed_fn=embedder.embed_batch,
        **engine_kwargs,
    )
    async with engine:
        yield engine
