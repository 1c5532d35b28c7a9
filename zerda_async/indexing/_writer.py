"""Writing a generation and switching ``CURRENT`` to it atomically (see the package docs)."""

from __future__ import annotations

import io
import os
import secrets
import shutil
import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from zerda_async.core.config import ContextEngineConfig, config_to_json
from zerda_async.core.index import CorpusIndex
from zerda_async.core.index.chunks import chunk_doc_id, chunk_metadata, chunk_text
from zerda_async.core.models import SourceQuality
from zerda_async.indexing._format import (
    BLOCK,
    CURRENT_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_FILE,
    FileEntry,
    Manifest,
    StoredChunk,
)

__all__ = ["save_index"]


def _write_parts(path: Path, parts: Iterable[bytes | memoryview]) -> FileEntry:
    """Write ``parts`` to a new file, fsync it; its size and CRC-32 (the one write seam)."""
    crc = 0
    size = 0
    with open(path, "xb") as fh:
        for part in parts:
            view = memoryview(part).cast("B")
            for start in range(0, len(view), BLOCK):
                block = view[start : start + BLOCK]
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
        analyzer=keyword.analyzer_name,
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
