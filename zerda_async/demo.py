"""``python -m zerda_async.demo``: index the bundled bilingual corpus and build contexts.

Runs on the embedded defaults only (in-process numpy index, the offline
hashing embedder, memory cache): an Arabic query, an English query, a
concurrent batch and a multi-query run, printing contexts and timings.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import Any

import anyio
import msgspec

from .core.config import ContextEngineConfig
from .engine import AsyncContextEngine
from .hashing_embedder import HashingEmbedder

__all__ = ["DemoChunk", "load_demo_corpus", "main"]


class DemoChunk(msgspec.Struct):
    """One document of the demo corpus."""

    doc_id: str
    text: str
    metadata: dict[str, Any]


def load_demo_corpus() -> list[DemoChunk]:
    """The bundled corpus (English and Arabic documents with sources and topics)."""
    raw = resources.files("zerda_async.data").joinpath("demo_corpus.jsonl").read_bytes()
    return [msgspec.json.decode(line, type=DemoChunk) for line in raw.splitlines() if line]


def _show(title: str, context: str, elapsed_ms: float) -> None:
    print(f"\n=== {title}  ({elapsed_ms:.1f} ms)")
    print(context)


async def _demo() -> None:
    corpus = load_demo_corpus()
    config = ContextEngineConfig()
    config.composer.template = "english"
    embed = HashingEmbedder()
    async with AsyncContextEngine(config) as engine:
        started = time.perf_counter()
        await engine.index(corpus, embed_fn=embed)
        print(f"indexed {len(corpus)} chunks in {(time.perf_counter() - started) * 1000:.1f} ms")

        for query in ("ما هو التعلم الآلي؟", "How does hybrid retrieval fuse results?"):
            started = time.perf_counter()
            result = await engine.run(query)
            _show(query, result.context, (time.perf_counter() - started) * 1000)
            stats = result.get_stats()
            print(
                f"-- intent={stats['query_intent']} budget={stats['context_budget']} "
                f"retrieved={stats['total_retrieved']} used={stats['total_included']} "
                f"guard_passed={stats['guard_passed']}"
            )

        batch = [
            "Where does the Nile flow?",
            "كيف تحضر القهوة العربية؟",
            "What is BM25?",
            "What is overfitting?",
        ]
        started = time.perf_counter()
        results = await engine.run_many(batch, concurrency=4)
        elapsed = (time.perf_counter() - started) * 1000
        print(f"\n=== run_many: {len(results)} queries concurrently in {elapsed:.1f} ms")
        for query, result in zip(batch, results, strict=True):
            print(f"  {query!r}: {result.total_included} chunks, {result.context_length} chars")

        started = time.perf_counter()
        combined = await engine.run_multi(["What is RAG?", "ما هي عاصمة مصر؟"], global_budget=1200)
        _show("run_multi (global budget 1200)", combined, (time.perf_counter() - started) * 1000)
        print("\nperformance report:", engine.get_performance_report())


def main() -> None:
    """Entry point of ``make demo``."""
    anyio.run(_demo)


if __name__ == "__main__":
    main()
