"""What sentence vectors would add at index time, for ``bench_rerank.py``."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from _common import BenchChunk
from _e5_vectors import E5Vectors
from _quality_data import SEED
from _sentences import sentences

__all__ = ["index_cost"]


def index_cost(vectors: E5Vectors, chunks: Sequence[BenchChunk], sample: int) -> str:
    """What the sentence vectors add at index time: e5 tokens, and CPU on a sample.

    Tokens: the model's pieces (plus ``<s>``/``</s>``) of the chunks against
    those of the extra sentences (of chunks with two or more).  CPU: a
    ``sample`` of chunks drawn with the fixed seed, their texts and then their
    extra sentences embedded by the product's ``E5Embedder`` (not the cache),
    alternated over two rounds; ``time.process_time`` counts every thread.
    """
    model = vectors.model()
    parts = [sentences(c.text) for c in chunks]
    extra = [[s for s in p if len(p) > 1] for p in parts]

    def tokens(texts: Sequence[str]) -> int:
        return sum(len(model.token_ids(t)) + 2 for t in texts)

    chunk_tokens = tokens([c.text for c in chunks])
    extra_tokens = tokens([s for p in extra for s in p])
    picked = random.Random(SEED).sample(range(len(chunks)), min(sample, len(chunks)))
    jobs = {
        "chunks": [chunks[i].text for i in picked],
        "sentences": [s for i in picked for s in extra[i]],
    }
    cpu = dict.fromkeys(jobs, 0.0)
    model.embed_batch(["warm-up"])
    for _ in range(2):
        for name, texts in jobs.items():
            started = time.process_time()
            model.embed_batch(texts)
            cpu[name] += time.process_time() - started
    return (
        f"index-time e5 tokens: chunks {chunk_tokens:,}, extra sentences {extra_tokens:,}"
        f" (+{extra_tokens / chunk_tokens:.0%}); CPU on {len(picked)} chunks, 2 rounds"
        f" alternated: chunks {cpu['chunks']:.1f} s, their extra sentences"
        f" {cpu['sentences']:.1f} s (+{cpu['sentences'] / max(cpu['chunks'], 1e-9):.0%})"
    )
