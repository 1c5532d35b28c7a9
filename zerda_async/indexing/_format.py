"""The on-disk format of a saved index: names, version, and the msgspec records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index import CorpusIndex
from zerda_async.core.models import SourceQuality

__all__ = [
    "BLOCK",
    "CURRENT_FILE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "FileEntry",
    "Manifest",
    "SavedIndex",
    "StoredChunk",
]

FORMAT_NAME = "zerda-async-index"
FORMAT_VERSION = 1
"""The newest format this version writes and reads."""

CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"

BLOCK = 1 << 24
"""Bytes per write and per checksum step."""


class StoredChunk(msgspec.Struct, array_like=True, gc=False):
    """A chunk restored from a saved index; duck-typed like any chunk."""

    doc_id: Any
    text: str
    metadata: Any = None
    source: Any = None


class FileEntry(msgspec.Struct, frozen=True):
    """Size in bytes and CRC-32 of one file of a generation."""

    size: int
    crc32: int


class Manifest(msgspec.Struct, kw_only=True):
    """What a generation holds; written last, read first."""

    format: str
    format_version: int
    corpus_version: int
    chunks: int
    vocabulary: int
    postings: int
    dim: int
    dtype: str | None
    created: float
    files: dict[str, FileEntry]
    analyzer: str = "documented"
    """The keyword index's text analyser (``retriever.text_analyzer``); older saves lack it."""


@dataclass(frozen=True, slots=True)
class SavedIndex:
    """Everything a saved index restores."""

    corpus: CorpusIndex
    config: ContextEngineConfig
    source_quality_map: dict[str, SourceQuality]
    manifest: Manifest
    directory: Path
