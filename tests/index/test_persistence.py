"""``save`` / ``load``: identical results, atomic saves, clear errors naming the file."""

from __future__ import annotations

import errno
import io as io_module
import os
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import numpy as np
import pytest
from support.corpus import CORPUS, QUALITY, QUERIES, sourced

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.errors import IndexFormatError, IndexStateError
from zerda_async.indexing import CURRENT_FILE, MANIFEST_FILE, StoredChunk, load_index
from zerda_async.indexing import _writer as persistence_module

from .support import embed
from .test_engine_updates import NEW, results_of

pytestmark = pytest.mark.anyio

QUERY_SET = QUERIES[:8]


def make_config() -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = False
    config.composer.template = "english"
    # Budgets then do not depend on the queries run before (compared engines
    # run different query histories).
    config.enable_adaptive = False
    return config


async def built_engine(engine: AsyncContextEngine) -> None:
    await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
    await engine.add(NEW[:2])
    await engine.remove(["bm25"])


async def saved_index(tmp: Path, **engine_kwargs: Any) -> tuple[Path, list[Any]]:
    path = tmp / "idx"
    async with AsyncContextEngine(make_config(), **engine_kwargs) as engine:
        await built_engine(engine)
        expected = await results_of(engine, QUERY_SET)
        await engine.save(path)
    return path, expected


def _generation(path: Path) -> Path:
    return path / (path / CURRENT_FILE).read_text().strip()


async def generation(path: Path) -> Path:
    """The current generation directory (file I/O off the event loop)."""
    return await anyio.to_thread.run_sync(_generation, path)


async def io(fn: Any, *args: Any) -> Any:
    """Run a blocking test-side file operation in a worker thread."""
    return await anyio.to_thread.run_sync(fn, *args)


def _names(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


async def test_round_trip_gives_identical_results(tmp_path: Path) -> None:
    path, expected = await saved_index(tmp_path)
    engine = await AsyncContextEngine.load(path, embed_fn=embed)
    assert engine.config.composer.template == "english"  # the saved configuration
    async with engine:
        assert await results_of(engine, QUERY_SET) == expected
        assert engine.corpus_version == 2
        # The loaded index keeps updating exactly.
        await engine.update([NEW[2]])
        final = [c for c in CORPUS if c.doc_id not in ("bm25", "ml")] + NEW[:2] + [NEW[2]]
        got = await results_of(engine, QUERY_SET)
    async with AsyncContextEngine(make_config()) as fresh:
        await fresh.index(final, embed_fn=embed, source_quality_map=QUALITY)
        assert got == await results_of(fresh, QUERY_SET)
    assert engine.config.enable_adaptive is False


async def test_loaded_chunks_are_records_and_arrays_are_memory_mapped(tmp_path: Path) -> None:
    path, _ = await saved_index(tmp_path, vector_dtype="float32")
    saved = await anyio.to_thread.run_sync(load_index, path)
    assert saved.manifest.dtype == "float32" and saved.manifest.dim == 64
    assert saved.manifest.chunks == len(CORPUS) + 1
    assert isinstance(saved.corpus.chunks[0], StoredChunk)
    assert saved.corpus.chunks[0].doc_id == CORPUS[0].doc_id
    assert saved.corpus.chunks[0].metadata == CORPUS[0].metadata
    assert saved.corpus.vectors is not None
    assert isinstance(saved.corpus.vectors.segments[0], np.memmap)
    assert isinstance(saved.corpus.keyword.segments[0].docs, np.memmap)
    assert saved.source_quality_map == dict(QUALITY)
    engine = await AsyncContextEngine.load(path, embed_fn=embed)
    assert engine.statistics().vector_dtype == "float32"


async def test_resaving_replaces_the_generation_and_keeps_foreign_files(tmp_path: Path) -> None:
    path, _ = await saved_index(tmp_path)
    first = await generation(path)
    await io((path / "zerda-cli.json").write_text, "{}")
    engine = await AsyncContextEngine.load(path, embed_fn=embed)
    async with engine:
        await engine.add(NEW[2:])
        await engine.save(path)
    second = await generation(path)
    assert second != first and not await io(first.exists)
    assert await io(_names, path) == sorted([CURRENT_FILE, second.name, "zerda-cli.json"])
    manifest = msgspec.json.decode(await io((second / MANIFEST_FILE).read_bytes))
    assert manifest["format_version"] == 1 and manifest["corpus_version"] == 3
    assert set(manifest["files"]) >= {"chunks.msgpack", "vectors.npy", "postings_docs.npy"}


async def test_load_without_an_embedder_serves_keyword_results(tmp_path: Path) -> None:
    path, _ = await saved_index(tmp_path)
    async with await AsyncContextEngine.load(path) as engine:
        res = await engine.run("What is machine learning?", use_history=False)
        assert res.chunks_used and all(sc.vector_score == 0.0 for sc in res.chunks_used)
        with pytest.raises(IndexStateError, match="no embedder"):
            await engine.add(NEW[2:])


async def test_keyword_only_index_round_trips(tmp_path: Path) -> None:
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, source_quality_map=QUALITY)
        expected = await results_of(engine, QUERY_SET)
        await engine.save(tmp_path / "kw")
    async with await AsyncContextEngine.load(tmp_path / "kw") as engine:
        assert await results_of(engine, QUERY_SET) == expected
        await engine.add(NEW)
        got = await results_of(engine, QUERY_SET)
    async with AsyncContextEngine(make_config()) as fresh:
        await fresh.index([*CORPUS, *NEW], source_quality_map=QUALITY)
        assert got == await results_of(fresh, QUERY_SET)


# Nine data files, the manifest (write 10), then the CURRENT pointer (write 11).
@pytest.mark.parametrize("failing_write", [1, 4, 7, 10, 11])
async def test_a_failed_save_keeps_the_previous_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_write: int
) -> None:
    path, expected = await saved_index(tmp_path)
    before = await io(_names, path)
    real = persistence_module._write_parts
    calls = 0

    def flaky(target: Path, parts: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == failing_write:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(target, parts)

    monkeypatch.setattr(persistence_module, "_write_parts", flaky)
    engine = await AsyncContextEngine.load(path, embed_fn=embed)
    async with engine:
        await engine.add(NEW[2:])
        with pytest.raises(OSError, match="No space"):
            await engine.save(path)
    assert calls >= failing_write
    assert await io(_names, path) == before  # nothing left behind
    async with await AsyncContextEngine.load(path, embed_fn=embed) as engine:
        assert await results_of(engine, QUERY_SET) == expected


async def test_a_failed_switch_keeps_the_previous_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, expected = await saved_index(tmp_path)
    before = await io(_names, path)

    def no_replace(src: Any, dst: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    engine = await AsyncContextEngine.load(path, embed_fn=embed)
    async with engine:
        await engine.add(NEW[2:])
        monkeypatch.setattr(os, "replace", no_replace)
        with pytest.raises(OSError, match="Input/output"):
            await engine.save(path)
        monkeypatch.undo()
    assert await io(_names, path) == before
    async with await AsyncContextEngine.load(path, embed_fn=embed) as engine:
        assert await results_of(engine, QUERY_SET) == expected


# -- clear errors -------------------------------------------------------------------------


async def load_error(path: Path) -> IndexFormatError:
    with pytest.raises(IndexFormatError) as info:
        await AsyncContextEngine.load(path, embed_fn=embed)
    return info.value


async def test_not_an_index(tmp_path: Path) -> None:
    error = await load_error(tmp_path / "missing")
    assert error.path == tmp_path / "missing"
    await io((tmp_path / "foreign").mkdir)
    await io((tmp_path / "foreign" / "notes.txt").write_text, "hello")
    error = await load_error(tmp_path / "foreign")
    assert error.path == tmp_path / "foreign" / CURRENT_FILE
    assert str(error).startswith(str(tmp_path / "foreign" / CURRENT_FILE))


async def test_current_naming_a_missing_generation(tmp_path: Path) -> None:
    path, _ = await saved_index(tmp_path)
    await io((path / CURRENT_FILE).write_text, "index-gone\n")
    assert (await load_error(path)).path == path / "index-gone"
    await io((path / CURRENT_FILE).write_text, "../elsewhere\n")
    assert (await load_error(path)).path == path / CURRENT_FILE


def _rewrite_manifest(gen: Path, changes: dict[str, Any]) -> None:
    manifest = msgspec.json.decode((gen / MANIFEST_FILE).read_bytes())
    manifest.update(changes)
    (gen / MANIFEST_FILE).write_bytes(msgspec.json.encode(manifest))


async def rewrite_manifest(gen: Path, **changes: Any) -> None:
    await io(_rewrite_manifest, gen, changes)


async def test_foreign_and_newer_manifests(tmp_path: Path) -> None:
    path, _ = await saved_index(tmp_path)
    gen = await generation(path)
    await rewrite_manifest(gen, format_version=2)
    error = await load_error(path)
    assert error.path == gen / MANIFEST_FILE and "newer" in str(error)
    await rewrite_manifest(gen, format_version=1, format="something-else")
    assert "not a zerda-async index" in str(await load_error(path))
    await io((gen / MANIFEST_FILE).write_bytes, b'{"format": "zerda-async-index", "format_ver')
    error = await load_error(path)
    assert error.path == gen / MANIFEST_FILE and "truncated or corrupt" in str(error)
    await io((gen / MANIFEST_FILE).unlink)
    assert (await load_error(path)).path == gen / MANIFEST_FILE


@pytest.mark.parametrize(
    "name",
    ["chunks.msgpack", "vectors.npy", "postings_docs.npy", "doc_lengths.npy", "config.json"],
)
async def test_truncated_corrupt_and_missing_files(tmp_path: Path, name: str) -> None:
    path, _ = await saved_index(tmp_path)
    target = await generation(path) / name
    original = await io(target.read_bytes)

    await io(target.write_bytes, original[: len(original) // 2])
    error = await load_error(path)
    assert error.path == target and "truncated" in str(error)

    corrupt = bytearray(original)
    corrupt[len(corrupt) // 2] ^= 0xFF
    await io(target.write_bytes, bytes(corrupt))
    error = await load_error(path)
    assert error.path == target and "corrupt" in str(error)

    await io(target.unlink)
    error = await load_error(path)
    assert error.path == target and "missing" in str(error)


def _replace_file(gen: Path, name: str, data: bytes) -> bytes:
    """Write ``data`` as ``name`` with a matching manifest entry; returns the old content."""
    old = (gen / name).read_bytes()
    (gen / name).write_bytes(data)
    manifest = msgspec.json.decode((gen / MANIFEST_FILE).read_bytes())
    manifest["files"][name] = {"size": len(data), "crc32": _crc(data)}
    (gen / MANIFEST_FILE).write_bytes(msgspec.json.encode(manifest))
    return old


def _npy(array: np.ndarray) -> bytes:
    buffer = io_module.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("postings_docs.npy", b"not an npy file at all", "not a valid .npy"),
        ("doc_lengths.npy", _npy(np.zeros(3, dtype=np.int32)), "expected int32"),
        ("postings_offsets.npy", None, "offsets are inconsistent"),
        ("postings_docs.npy", None, "out of range"),
        ("chunks.msgpack", msgspec.msgpack.encode([1, 2, 3]), "cannot be decoded"),
        ("vocabulary.msgpack", msgspec.msgpack.encode(["a", "a"]), "terms"),
        ("sources.json", b'{"Blog": 7}', "source-quality map"),
        ("config.json", b'{"retriever": {"top_k": "many"}}', "invalid configuration"),
    ],
)
async def test_inconsistent_content_with_matching_checksums(
    tmp_path: Path, name: str, data: bytes | None, message: str
) -> None:
    path, _ = await saved_index(tmp_path)
    gen = await generation(path)
    if data is None:
        current = await io(np.load, gen / name)
        broken = np.array(current)
        if name == "postings_offsets.npy":
            broken[1] = broken[-1] + 5
        else:
            broken[0] = 10**6
        data = _npy(broken)
    await io(_replace_file, gen, name, data)
    error = await load_error(path)
    assert error.path == gen / name and message in str(error)


def _crc(data: bytes) -> int:
    import zlib

    return zlib.crc32(data)


async def test_saving_needs_savable_chunks_and_no_adapter(tmp_path: Path) -> None:
    class Adapter:
        def similarity_search_with_score(self, query: str, k: int) -> list[Any]:
            return []

    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, embed_fn=embed, vector_store_adapter=Adapter())
        with pytest.raises(IndexStateError, match="vector_store_adapter"):
            await engine.save(tmp_path / "a")
    weird = sourced("w", "a chunk whose metadata cannot be encoded", "Blog", when=object())
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index([*CORPUS, weird])
        with pytest.raises(TypeError, match="cannot be saved"):
            await engine.save(tmp_path / "b")
    assert not await io((tmp_path / "b" / CURRENT_FILE).exists)
    assert await io(_names, tmp_path / "b") == []


async def test_loading_float64_vectors_as_float32(tmp_path: Path) -> None:
    path, expected = await saved_index(tmp_path)
    engine = await AsyncContextEngine.load(path, embed_fn=embed, vector_dtype="float32")
    assert engine.statistics().vector_dtype == "float32"
    async with engine:
        got = await results_of(engine, QUERY_SET)
    assert [r["chunk_ids"] for r in got] == [r["chunk_ids"] for r in expected]
    for new, old in zip(got, expected, strict=True):
        assert np.allclose(new["chunk_vector"], old["chunk_vector"], atol=1e-7, rtol=0)


async def test_saved_index_records_its_analyser_and_refuses_another(tmp_path: Path) -> None:
    path = tmp_path / "ml"
    config = make_config()
    config.retriever.text_analyzer = "multilingual-lite"
    async with AsyncContextEngine(config) as engine:
        await engine.index(CORPUS, source_quality_map=QUALITY)
        expected = await results_of(engine, QUERY_SET)
        await engine.save(path)
    gen = await generation(path)
    manifest = msgspec.json.decode(await io((gen / MANIFEST_FILE).read_bytes))
    assert manifest["analyzer"] == "multilingual-lite"

    # The saved configuration carries the analyser: loading with it reproduces the results.
    async with await AsyncContextEngine.load(path) as engine:
        assert await results_of(engine, QUERY_SET) == expected

    with pytest.raises(IndexFormatError, match=r"'multilingual-lite'.*'documented'"):
        await AsyncContextEngine.load(path, config=make_config())
