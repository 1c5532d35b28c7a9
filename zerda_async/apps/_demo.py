"""``zerda demo`` (and ``python -m zerda_async.apps._demo``): the bundled corpus, end to end.

Runs on the embedded defaults only (in-process numpy index, the offline
lexical hashing embedder, memory cache): indexes the bundled bilingual corpus
into a temporary directory, loads it back, and runs an Arabic query, an
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
import msgspec

from zerda_async.apps._runs import STAGE_EVENTS, TimedResult, run_timed
from zerda_async.apps._saved_index import IndexManifest, build_index, open_index, save_index
from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders._hashing import HashingEmbedder
from zerda_async.engine._engine import AsyncContextEngine

__all__ = ["DemoChunk", "load_demo_corpus", "main", "run_demo"]

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


def _timings(timed: TimedResult) -> str:
    parts = [f"{n} {timed.timings_ms[n]:.2f}" for n in STAGE_EVENTS if n in timed.timings_ms]
    return " | ".join(parts) + f" | total {timed.total_ms:.2f} ms"


def _show(out: TextIO, title: str, context: str, timing: str) -> None:
    out.write(f"\n=== {title}\n{context}\n-- {timing}\n")


async def run_demo(directory: Path, out: TextIO = sys.stdout) -> None:
    """Index the corpus into ``directory``, load it back and run the example queries."""
    corpus = load_demo_corpus()
    embedder = HashingEmbedder()
    started = time.perf_counter()
    async with AsyncContextEngine() as engine:
        await build_index(engine, corpus, embedder)
        manifest = IndexManifest(
            embedder_params=embedder.params(), chunks=len(corpus), files=["demo_corpus.jsonl"]
        )
        await save_index(engine, directory, manifest)
    elapsed = (time.perf_counter() - started) * 1000
    langs = sorted({str(c.metadata.get("lang")) for c in corpus})
    topics = sorted({str(c.metadata.get("topic")) for c in corpus})
    out.write(
        f"indexed {len(corpus)} documents ({', '.join(langs)}; topics: {', '.join(topics)}) "
        f"into {directory} in {elapsed:.1f} ms\n"
    )

    for template, query in (("arabic", ARABIC_QUERY), ("english", ENGLISH_QUERY)):
        config = ContextEngineConfig()
        config.composer.template = template
        started = time.perf_counter()
        async with open_index(directory, config) as engine:
            load_ms = (time.perf_counter() - started) * 1000
            timed = await run_timed(engine, query)
            stats = timed.result.get_stats()
            _show(out, f"{query}  [template {template}]", timed.result.context, _timings(timed))
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


def main() -> None:
    """Run the demo in a temporary directory (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="zerda-demo-") as tmp:
        anyio.run(run_demo, Path(tmp) / "index")


if __name__ == "__main__":
    main()
