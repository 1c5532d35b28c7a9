"""Chunk filtering: noise removal, length window and de-duplication.

``ChunkFilter.filter`` always runs noise -> length -> exact-hash dedup, whatever
``FilterConfig.dedup_method`` says.  Semantic (embedding) dedup is only reached
through ``filter_with_embeddings`` or by calling ``_dedup_semantic`` directly.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .config import ContextEngineConfig
from .models import ScoredChunk

__all__ = ["ChunkFilter"]

logger = logging.getLogger(__name__)

Embedding = NDArray[Any]

# Chunk texts whose noise verdict is kept at most (then the memo starts over).
_NOISE_MEMO = 4096


class ChunkFilter:
    """Drops noise, out-of-range and duplicate chunks, keeping input order.

    It deliberately does not inherit ``ChunkFilterStrategy``: the documented
    package only conforms to that interface structurally, and callers can
    observe the missing ``isinstance`` relationship.

    The noise patterns are compiled once here, without flags, so later edits
    to ``config.filter_cfg.noise_patterns`` have no effect; the length bounds
    and the semantic threshold are read live from ``config.filter_cfg``.
    An invalid pattern raises :class:`re.error`.
    """

    def __init__(self, config: ContextEngineConfig) -> None:
        self.cfg = config.filter_cfg
        self._noise_res: tuple[re.Pattern[str], ...] = tuple(
            re.compile(p) for p in self.cfg.noise_patterns
        )
        # Chunk text -> whether it is noise; the patterns never change after
        # construction, and the same candidates come back query after query.
        self._noise: dict[str, bool] = {}

    def filter(self, chunks: list[ScoredChunk]) -> list[ScoredChunk]:
        """Noise, then length, then first-occurrence hash dedup; returns a new list."""
        before = len(chunks)
        kept = self._dedup_hash(self._filter_length(self._filter_noise(chunks)))
        after = len(kept)
        if after != before:
            logger.debug("ChunkFilter: %d → %d (حُذف %d)", before, after, before - after)
        return kept

    def filter_with_embeddings(
        self, chunks: list[ScoredChunk], embeddings: Sequence[Embedding | None]
    ) -> list[ScoredChunk]:
        """Run :meth:`filter`, then semantic dedup against the *unfiltered* embeddings.

        The embeddings are not realigned with the surviving chunks, so as soon
        as :meth:`filter` removes anything the lengths differ and the semantic
        step silently does nothing.  This mirrors the documented package.
        """
        return self._dedup_semantic(self.filter(chunks), embeddings)

    def _filter_noise(self, chunks: list[ScoredChunk]) -> list[ScoredChunk]:
        """Drop chunks whose stripped text matches any noise pattern at its start."""
        patterns = self._noise_res
        if not patterns:
            return list(chunks)
        memo = self._noise
        kept: list[ScoredChunk] = []
        for sc in chunks:
            text = sc.text
            noise = memo.get(text) if type(text) is str else None
            if noise is None:
                # Stripped once per chunk, not once per pattern.
                stripped = text.strip()
                noise = any(p.match(stripped) for p in patterns)
                if type(text) is str:
                    if len(memo) >= _NOISE_MEMO:
                        memo.clear()
                    memo[text] = noise
            if not noise:
                kept.append(sc)
        return kept

    def _filter_length(self, chunks: list[ScoredChunk]) -> list[ScoredChunk]:
        """Keep chunks whose raw code-point length lies inside the inclusive window."""
        low, high = self.cfg.min_chunk_length, self.cfg.max_chunk_length
        return [sc for sc in chunks if low <= sc.char_count <= high]

    def _dedup_hash(self, chunks: list[ScoredChunk]) -> list[ScoredChunk]:
        """Keep the first chunk of each content hash."""
        seen: set[str] = set()
        kept: list[ScoredChunk] = []
        for sc in chunks:
            digest = sc.content_hash
            if digest not in seen:
                seen.add(digest)
                kept.append(sc)
        return kept

    def _dedup_semantic(
        self, chunks: list[ScoredChunk], embeddings: Sequence[Embedding | None]
    ) -> list[ScoredChunk]:
        """Drop the later chunk of every pair whose cosine similarity reaches the threshold.

        Returns ``chunks`` itself when the two lengths differ.  Chunks without
        an embedding, and pairs involving a zero vector, are never compared.
        """
        if len(chunks) != len(embeddings):
            return chunks
        threshold = self.cfg.semantic_sim_threshold
        keep = [True] * len(chunks)
        valid: list[tuple[int, Embedding]] = [
            (i, e) for i, e in enumerate(embeddings) if e is not None
        ]

        # Flattened vectors and norms are memoised per position but computed
        # on first use, at the same point of the pairwise scan as in the
        # documented package: bad embeddings fail at the same moment and every
        # similarity is the identical float(dot / denom) value.
        flat: dict[int, Embedding] = {}
        norms: dict[int, Any] = {}

        def vector(pos: int) -> Embedding:
            if pos not in flat:
                flat[pos] = valid[pos][1].flatten()
            return flat[pos]

        def norm(pos: int) -> Any:
            if pos not in norms:
                norms[pos] = np.linalg.norm(flat[pos])
            return norms[pos]

        for a in range(len(valid)):
            if not keep[valid[a][0]]:
                continue
            ei = vector(a)
            for b in range(a + 1, len(valid)):
                j = valid[b][0]
                if not keep[j]:
                    continue
                ej = vector(b)
                denom = norm(a) * norm(b)
                if denom == 0:
                    continue
                if float(np.dot(ei, ej) / denom) >= threshold:
                    keep[j] = False
        return [sc for sc, k in zip(chunks, keep, strict=True) if k]
