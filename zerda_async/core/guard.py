"""Post-composition checks of a context: emptiness, length, sources and relevance.

The guard only *reports*: it returns ``(passed, warnings)`` and never alters or
blocks the context.  A failed check affects the run's ``guard_passed`` flag,
whether the context is cached and the adaptive failure statistics.
"""

from __future__ import annotations

import logging
import re

import numpy as np

from .config import ContextEngineConfig
from .models import QueryAnalysis
from .retrieval.vector import EmbedFn
from .strategy import ContextGuardStrategy

__all__ = ["ContextGuard"]

logger = logging.getLogger(__name__)

"""Maps a text to an embedding vector (any shape; it is flattened before use)."""

# The empty alternative makes this match a bare "[:" only, not "[anything:";
# the documented package behaves this way and callers depend on it.
_SOURCE_RE = re.compile(r"\[(?:|Source|source):")

# Only this many leading code points of the context are embedded.
_RELEVANCE_PREFIX = 512


class ContextGuard(ContextGuardStrategy):
    """Validates a composed context against :class:`~.config.GuardConfig`.

    ``config.guard`` is kept by reference, so threshold and flag changes made
    later are seen, except ``enabled``, which is read once here.  Without
    ``embed_fn`` the relevance check is skipped even when
    ``check_relevance`` is on.  Instances hold no mutable state, so
    concurrent :meth:`validate` calls are safe.
    """

    def __init__(self, config: ContextEngineConfig, embed_fn: EmbedFn | None = None) -> None:
        self.cfg = config.guard
        self._embed = embed_fn
        self._enabled = config.guard.enabled

    def validate(self, context: str, query: str, analysis: QueryAnalysis) -> tuple[bool, list[str]]:
        """Run the checks in order and return ``(passed, warnings)``.

        An empty (whitespace-only) context fails at once when ``check_empty``
        is on.  Too short fails; too long and a missing source marker only
        warn; an irrelevant context (relevance check with an embedder) fails.
        ``analysis`` is accepted for the interface and not read.
        """
        if not self._enabled:
            return True, []

        cfg = self.cfg
        warnings: list[str] = []
        passed = True

        if cfg.check_empty and context.strip() == "":
            warnings.append("context is empty ⚠")
            return False, warnings

        ctx_len = len(context)
        if ctx_len < cfg.min_context_length:
            warnings.append(
                f"context is too short ({ctx_len} characters < {cfg.min_context_length})."
            )
            passed = False

        if ctx_len > cfg.max_context_length:
            warnings.append(
                f"context is too long ({ctx_len} > {cfg.max_context_length}). "
                "consider compressing it."
            )

        if cfg.check_source_coverage and not (_SOURCE_RE.search(context) or "---" in context):
            warnings.append("no valid source found in context.")

        if cfg.check_relevance and self._embed is not None:
            ok, message = self._check_relevance(context, query)
            if not ok:
                warnings.append(message)
                passed = False

        if warnings:
            logger.warning("ContextGuard: %s", " | ".join(warnings))
        else:
            logger.debug("ContextGuard: ✓ context is valid (length=%d)", ctx_len)
        return passed, warnings

    def _check_relevance(self, context: str, query: str) -> tuple[bool, str]:
        """Cosine similarity of the query and the context's first 512 code points.

        Returns ``(False, message)`` below ``relevance_threshold``, else
        ``(True, "")``.  Any exception (embedder failure, non-array result,
        mismatched dimensions) counts as a pass; a zero vector has similarity 0.
        """
        embed = self._embed
        # Everything, the threshold comparison included, sits inside the try:
        # the documented package treats any failure here as a pass.
        try:
            if embed is None:
                raise RuntimeError("no embedding function")
            q_flat = embed(query).flatten()
            c_flat = embed(context[:_RELEVANCE_PREFIX]).flatten()
            denom = np.linalg.norm(q_flat) * np.linalg.norm(c_flat)
            sim = float(np.dot(q_flat, c_flat) / denom) if denom > 0 else 0.0
            threshold = self.cfg.relevance_threshold
            if sim < threshold:
                return (
                    False,
                    f"context is not relevant to the query (similarity={sim:.3f} < {threshold}).",
                )
            return True, ""
        except Exception as exc:
            logger.debug("ContextGuard: failed to check relevance: %s", exc)
            return True, ""
