"""Saving and loading an index as a directory: atomic saves, verified, memory-mapped loads.

Layout of an index directory::

    <path>/CURRENT                  the name of the current generation (one line)
    <path>/index-<version>-<tag>/   one complete generation:
        manifest.json               format name and version, corpus version,
                                    counts, dims, dtype, every file's size and CRC-32
        chunks.msgpack              chunk records (doc_id, text, metadata, source)
        vocabulary.msgpack          BM25 terms, in term-id order
        doc_lengths.npy             tokens per chunk
        postings_offsets.npy        CSR postings: term -> slice of docs / tfs
        postings_docs.npy
        postings_tfs.npy
        vectors.npy                 normalised embeddings (only with vectors)
        config.json                 the engine configuration
        sources.json                the source-quality map

**Atomic saves.** A save writes a new generation into a temporary directory
(every file fsynced), renames it into place, and only then replaces
``CURRENT`` with ``os.replace``.  A crash or a full disk at any point leaves
``CURRENT`` naming the previous, complete generation, which is deleted only
after the switch.  Files other than these (``zerda-cli.json`` of the command
line, say) are left alone.

**Verified loads.** Every file's size and CRC-32 are checked against the
manifest, then every array's dtype, shape and cross-references, before
anything is built; any problem raises :class:`~zerda_async.errors.IndexFormatError`
naming the file.  Arrays are memory-mapped (``numpy.load(mmap_mode="r")``),
so loading a large index costs reading the chunk records, not copying vectors.

Chunks come back as :class:`StoredChunk` records.  Metadata goes through
msgpack: tuples come back as lists, and values msgpack cannot encode make the
save fail with :class:`TypeError`.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from .core.config import ConfigError, ContextEngineConfig, config_from_json, config_to_json
from .core.index import CorpusIndex, KeywordIndex, VectorIndex
from .core.index.chunks import chunk_doc_id, chunk_metadata, chunk_text
from .core.index.postings import PostingSegment
from .core.models import SourceQuality
from .errors import IndexFormatError

__all__ = [
    "CURRENT_FILE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "FileEntry",
    "Manifest",
    "SavedIndex",
    "StoredChunk",
    "load_index",
    "save_index",
]

FORMAT_NAME = "zerda-async-index"
FORMAT_VERSION = 1
"""The newest format this version writes and reads."""

CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"

_BLOCK = 1 << 24  # bytes per write / checksum step


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


@dataclass(frozen=True, slots=True)
class SavedIndex:
    """Everything a saved index restores."""

    corpus: CorpusIndex
    config: ContextEngineConfig
    source_quality_map: dict[str, SourceQuality]
    manifest: Manifest
    directory: Path


# -- saving ------------------------------------------------------------------------------


def _write_parts(path: Path, parts: Iterable[bytes | memoryview]) -> FileEntry:
    """Write ``parts`` to a new file, fsync it; its size and CRC-32 (the one write seam)."""
    crc = 0
    size = 0
    with open(path, "xb") as fh:
        for part in parts:
            view = memoryview(part).cast("B")
            for start in range(0, len(view), _BLOCK):
                block = view[start : start + _BLOCK]
                fh.write(block)
                crc = zlib.crc32(block, crc)
                size += len(block)
        fh.flush()
        os.fsync(fh.fileno())
    return FileEntry(size=size, crc32=crc)


def _npy_parts(arrays: Iterable[NDArray[Any]], dtype: Any, shape: tuple[int, ...]) -> Iterable[Any]:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header,
        {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": shape,
        },
    )
    yield header.getvalue()
    for array in arrays:
        if array.size:
            yield np.ascontiguousarray(array, dtype=dtype).data.cast("B")


def _record(chunk: Any) -> StoredChunk:
    if isinstance(chunk, StoredChunk):
        return chunk
    metadata = chunk_metadata(chunk)
    return StoredChunk(
        doc_id=chunk_doc_id(chunk),
        text=chunk_text(chunk),
        metadata=dict(metadata) if isinstance(metadata, Mapping) else metadata,
        source=getattr(chunk, "source", None),
    )


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_generation(
    directory: Path,
    corpus: CorpusIndex,
    config: ContextEngineConfig,
    source_quality_map: Mapping[str, Any],
) -> None:
    keyword = corpus.keyword.merged()
    segment = keyword.segments[0]
    n = corpus.n_positions
    vocabulary = sorted(keyword.vocabulary, key=keyword.vocabulary.__getitem__)
    files: dict[str, FileEntry] = {}

    def put(name: str, parts: Iterable[Any]) -> None:
        files[name] = _write_parts(directory / name, parts)

    for source, quality in source_quality_map.items():
        if not isinstance(source, str) or not isinstance(quality, SourceQuality):
            raise TypeError(
                "the index cannot be saved: source_quality_map must map str to SourceQuality,"
                f" got {source!r}: {quality!r}"
            )
    try:
        records = msgspec.msgpack.encode([_record(c) for c in corpus.chunks])
        sources = msgspec.json.encode(dict(source_quality_map))
    except (msgspec.EncodeError, TypeError) as exc:
        raise TypeError(f"the index cannot be saved: {exc}") from exc
    put("chunks.msgpack", [records])
    del records
    put("vocabulary.msgpack", [msgspec.msgpack.encode(vocabulary)])
    put("doc_lengths.npy", _npy_parts([keyword.lengths], np.int32, (n,)))
    put("postings_offsets.npy", _npy_parts([segment.offsets], np.int64, segment.offsets.shape))
    put("postings_docs.npy", _npy_parts([segment.docs], segment.docs.dtype, segment.docs.shape))
    put("postings_tfs.npy", _npy_parts([segment.tfs], np.int32, segment.tfs.shape))
    vectors = corpus.vectors
    if vectors is not None:
        put("vectors.npy", _npy_parts(vectors.segments, vectors.dtype, (n, vectors.dim)))
    put("config.json", [config_to_json(config)])
    put("sources.json", [sources])
    manifest = Manifest(
        format=FORMAT_NAME,
        format_version=FORMAT_VERSION,
        corpus_version=corpus.version,
        chunks=n,
        vocabulary=len(vocabulary),
        postings=segment.n_postings,
        dim=0 if vectors is None else vectors.dim,
        dtype=None if vectors is None else vectors.dtype,
        created=time.time(),
        files=files,
    )
    _write_parts(directory / MANIFEST_FILE, [msgspec.json.format(msgspec.json.encode(manifest))])
    _fsync_dir(directory)


def save_index(
    path: str | os.PathLike[str],
    corpus: CorpusIndex,
    config: ContextEngineConfig,
    source_quality_map: Mapping[str, Any],
) -> Path:
    """Save ``corpus`` (compacted) as the new current generation of ``path``; returns it.

    Blocking (file I/O); the engine runs it in a worker thread.
    """
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    previous = _current_name(root)
    name = f"index-{corpus.version:08d}-{secrets.token_hex(4)}"
    staging = root / f".{name}.tmp"
    final = root / name
    switched = False
    try:
        staging.mkdir()
        _write_generation(staging, corpus.compacted(), config, source_quality_map)
        os.rename(staging, final)
        _fsync_dir(root)
        pointer = root / f".{CURRENT_FILE}.{name}.tmp"
        _write_parts(pointer, [f"{name}\n".encode()])
        os.replace(pointer, root / CURRENT_FILE)
        switched = True
        _fsync_dir(root)
    finally:
        if not switched:
            for leftover in (staging, final, root / f".{CURRENT_FILE}.{name}.tmp"):
                _remove(leftover)
    _remove_stale(root, keep=name, previous=previous)
    return final


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def _remove_stale(root: Path, *, keep: str, previous: str | None) -> None:
    # The previous generation, and leftovers of saves that crashed.
    for entry in root.iterdir():
        name = entry.name
        stale = name == previous or (name.startswith(".index-") and name.endswith(".tmp"))
        stale = stale or name.startswith(f".{CURRENT_FILE}.")
        if stale and name != keep:
            _remove(entry)


def _current_name(root: Path) -> str | None:
    try:
        name = (root / CURRENT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return name or None


# -- loading -----------------------------------------------------------------------------


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
        while block := fh.read(_BLOCK):
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


def load_index(path: str | os.PathLike[str]) -> SavedIndex:
    """Read, verify and assemble the current generation of ``path`` (blocking file I/O).

    Raises :class:`IndexFormatError` naming the file for a directory that is
    not an index, or is truncated, corrupt, foreign or of a newer format.
    """
    directory = _generation(Path(path))
    manifest_path = directory / MANIFEST_FILE
    manifest = _read_manifest(manifest_path)
    names = [
        "chunks.msgpack",
        "vocabulary.msgpack",
        "doc_lengths.npy",
        "postings_offsets.npy",
        "postings_docs.npy",
        "postings_tfs.npy",
        "config.json",
        "sources.json",
    ]
    if manifest.dtype is not None:
        if manifest.dtype not in ("float64", "float32"):
            raise IndexFormatError(manifest_path, f"unknown vector dtype {manifest.dtype!r}")
        names.append("vectors.npy")
    _verify(directory, manifest, names)

    n = manifest.chunks
    records: list[StoredChunk] = _decode(directory / "chunks.msgpack", list[StoredChunk])
    if len(records) != n:
        raise IndexFormatError(
            directory / "chunks.msgpack", f"{len(records)} records, expected {n}"
        )
    terms: list[str] = _decode(directory / "vocabulary.msgpack", list[str])
    vocabulary = {term: i for i, term in enumerate(terms)}
    if len(vocabulary) != manifest.vocabulary or len(terms) != manifest.vocabulary:
        raise IndexFormatError(directory / "vocabulary.msgpack", "wrong or repeated terms")
    segment = _postings(directory, manifest, n)
    lengths = _array(directory / "doc_lengths.npy", np.int32, (n,))
    vectors = None
    if manifest.dtype is not None:
        rows = _array(directory / "vectors.npy", manifest.dtype, (n, manifest.dim))
        vectors = VectorIndex.from_unit_rows(
            rows, "float32" if manifest.dtype == "float32" else "float64"
        )
    config = _config(directory / "config.json")
    sources = _sources(directory / "sources.json")
    corpus = CorpusIndex.restore(
        records,
        KeywordIndex.from_arrays(vocabulary, segment, lengths),
        vectors,
        manifest.corpus_version,
    )
    return SavedIndex(
        corpus=corpus,
        config=config,
        source_quality_map=sources,
        manifest=manifest,
        directory=directory,
    )


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
