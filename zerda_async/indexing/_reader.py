"""Reading, verifying and assembling the current generation of an index directory."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from zerda_async.core.config import ConfigError, ContextEngineConfig, config_from_json
from zerda_async.core.index import CorpusIndex, KeywordIndex, VectorIndex
from zerda_async.core.index.postings import PostingSegment
from zerda_async.core.models import SourceQuality
from zerda_async.errors import IndexFormatError
from zerda_async.indexing._format import (
    BLOCK,
    CURRENT_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_FILE,
    FileEntry,
    Manifest,
    SavedIndex,
    StoredChunk,
)

__all__ = ["load_index"]


def _generation(root: Path) -> Path:
    if not root.is_dir():
        raise IndexFormatError(root, "not a directory holding a zerda-async index")
    if (root / MANIFEST_FILE).is_file():
        return root  # a generation directory given directly
    pointer = root / CURRENT_FILE
    if not pointer.is_file():
        raise IndexFormatError(pointer, "missing: this is not a zerda-async index directory")
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexFormatError(pointer, f"unreadable: {exc}") from None
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise IndexFormatError(pointer, f"does not name a generation: {name[:80]!r}")
    directory = root / name
    if not directory.is_dir():
        raise IndexFormatError(directory, "missing (named by CURRENT)")
    return directory


def _read_manifest(path: Path) -> Manifest:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise IndexFormatError(path, "missing") from None
    except OSError as exc:
        raise IndexFormatError(path, f"unreadable: {exc}") from None
    try:
        head = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise IndexFormatError(
            path, f"not a valid manifest (truncated or corrupt): {exc}"
        ) from None
    if not isinstance(head, dict) or head.get("format") != FORMAT_NAME:
        found = head.get("format") if isinstance(head, dict) else None
        raise IndexFormatError(path, f"not a zerda-async index manifest (format {found!r})")
    version = head.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise IndexFormatError(
            path,
            f"written by a newer zerda-async (format version {version}; "
            f"this version reads up to {FORMAT_VERSION})",
        )
    try:
        return msgspec.json.decode(raw, type=Manifest)
    except msgspec.ValidationError as exc:
        raise IndexFormatError(path, f"invalid manifest: {exc}") from None


def _checksum(path: Path) -> FileEntry:
    crc = 0
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return FileEntry(size=size, crc32=crc)


def _verify(directory: Path, manifest: Manifest, names: list[str]) -> None:
    for name in names:
        path = directory / name
        expected = manifest.files.get(name)
        if expected is None:
            raise IndexFormatError(directory / MANIFEST_FILE, f"lists no entry for {name}")
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise IndexFormatError(path, "missing") from None
        if size != expected.size:
            problem = "truncated" if size < expected.size else "has unexpected extra bytes"
            raise IndexFormatError(path, f"{problem}: {size} bytes, expected {expected.size}")
        if _checksum(path).crc32 != expected.crc32:
            raise IndexFormatError(path, "checksum mismatch: the file is corrupt")


def _decode(path: Path, kind: Any) -> Any:
    try:
        return msgspec.msgpack.decode(path.read_bytes(), type=kind)
    except (msgspec.DecodeError, ValueError) as exc:
        raise IndexFormatError(path, f"cannot be decoded: {exc}") from None


def _array(path: Path, dtype: Any, shape: tuple[int, ...]) -> NDArray[Any]:
    try:
        array: NDArray[Any] = np.load(
            path, mmap_mode="r" if np.prod(shape) else None, allow_pickle=False
        )
    except (ValueError, OSError, EOFError) as exc:
        raise IndexFormatError(path, f"not a valid .npy array: {exc}") from None
    if array.dtype != np.dtype(dtype) or array.shape != shape:
        raise IndexFormatError(
            path, f"holds {array.dtype}{list(array.shape)}, expected {np.dtype(dtype)}{list(shape)}"
        )
    return array


_FILES = (
    "chunks.msgpack",
    "vocabulary.msgpack",
    "doc_lengths.npy",
    "postings_offsets.npy",
    "postings_docs.npy",
    "postings_tfs.npy",
    "config.json",
    "sources.json",
)
"""The files of every generation (``vectors.npy`` too when the manifest names a dtype)."""


def load_index(path: str | os.PathLike[str]) -> SavedIndex:
    """Read, verify and assemble the current generation of ``path`` (blocking file I/O).

    Raises :class:`IndexFormatError` naming the file for a directory that is
    not an index, or is truncated, corrupt, foreign or of a newer format.
    """
    directory = _generation(Path(path))
    manifest_path = directory / MANIFEST_FILE
    manifest = _read_manifest(manifest_path)
    names = list(_FILES)
    if manifest.dtype is not None:
        if manifest.dtype not in ("float64", "float32"):
            raise IndexFormatError(manifest_path, f"unknown vector dtype {manifest.dtype!r}")
        names.append("vectors.npy")
    _verify(directory, manifest, names)
    records: list[StoredChunk] = _decode(directory / "chunks.msgpack", list[StoredChunk])
    if len(records) != manifest.chunks:
        raise IndexFormatError(
            directory / "chunks.msgpack", f"{len(records)} records, expected {manifest.chunks}"
        )
    corpus = CorpusIndex.restore(
        records,
        _keyword_index(directory, manifest),
        _vector_index(directory, manifest),
        manifest.corpus_version,
    )
    return SavedIndex(
        corpus=corpus,
        config=_config(directory / "config.json"),
        source_quality_map=_sources(directory / "sources.json"),
        manifest=manifest,
        directory=directory,
    )


def _keyword_index(directory: Path, manifest: Manifest) -> KeywordIndex:
    n = manifest.chunks
    terms: list[str] = _decode(directory / "vocabulary.msgpack", list[str])
    vocabulary = {term: i for i, term in enumerate(terms)}
    if len(vocabulary) != manifest.vocabulary or len(terms) != manifest.vocabulary:
        raise IndexFormatError(directory / "vocabulary.msgpack", "wrong or repeated terms")
    segment = _postings(directory, manifest, n)
    lengths = _array(directory / "doc_lengths.npy", np.int32, (n,))
    try:
        return KeywordIndex.from_arrays(vocabulary, segment, lengths, manifest.analyzer)
    except ConfigError as exc:
        raise IndexFormatError(directory / MANIFEST_FILE, f"text analyzer: {exc}") from None


def _vector_index(directory: Path, manifest: Manifest) -> VectorIndex | None:
    if manifest.dtype is None:
        return None
    rows = _array(directory / "vectors.npy", manifest.dtype, (manifest.chunks, manifest.dim))
    return VectorIndex.from_unit_rows(rows, "float32" if manifest.dtype == "float32" else "float64")


def _postings(directory: Path, manifest: Manifest, n: int) -> PostingSegment:
    offsets = _array(directory / "postings_offsets.npy", np.int64, (manifest.vocabulary + 1,))
    doc_dtype = np.int32 if n < 2**31 else np.int64
    docs = _array(directory / "postings_docs.npy", doc_dtype, (manifest.postings,))
    tfs = _array(directory / "postings_tfs.npy", np.int32, (manifest.postings,))
    if offsets[0] != 0 or offsets[-1] != manifest.postings or np.any(np.diff(offsets) < 0):
        raise IndexFormatError(directory / "postings_offsets.npy", "offsets are inconsistent")
    if docs.shape[0] and (int(docs.min()) < 0 or int(docs.max()) >= n):
        raise IndexFormatError(directory / "postings_docs.npy", "document ids out of range")
    if tfs.shape[0] and int(tfs.min()) < 1:
        raise IndexFormatError(directory / "postings_tfs.npy", "term frequencies below 1")
    return PostingSegment(offsets=offsets, docs=docs, tfs=tfs)


def _config(path: Path) -> ContextEngineConfig:
    try:
        return config_from_json(path.read_bytes())
    except ConfigError as exc:
        raise IndexFormatError(path, f"invalid configuration: {exc}") from None


def _sources(path: Path) -> dict[str, SourceQuality]:
    try:
        decoded: dict[str, SourceQuality] = msgspec.json.decode(
            path.read_bytes(), type=dict[str, SourceQuality]
        )
    except (msgspec.DecodeError, ValueError) as exc:
        raise IndexFormatError(path, f"invalid source-quality map: {exc}") from None
    return decoded
