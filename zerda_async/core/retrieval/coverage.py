"""Query coverage of chunks no keyword search measured (found by vector or metadata only).

``query_coverage`` is the idf-weighted share of the query's distinct analysed
terms that a chunk holds: ``sum(idf(t) for t held) / sum(idf(t))``.  A keyword
search measures it for its own hits
(:meth:`~zerda_async.core.index.KeywordIndex.coverage`); a fusion that
measures every fused chunk (:func:`~.fusion.measures_coverage`) fills in the
others here, from the query's term weights as the index holds them
(:data:`QueryWeights`, a search's evidence like its hits) and the chunk's
analysed text.  The sums run in term order, as the index's do, so a chunk
gets the same value either way.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..index.analysis import Analyzer, TermMemo
from ..models import ScoredChunk

__all__ = ["QueryWeights", "annotate_coverage"]

QueryWeights = list[tuple[str, float]]
"""The query's distinct analysed terms, in first-occurrence order, with their BM25 idf."""


def annotate_coverage(
    chunks: Sequence[ScoredChunk], weights: QueryWeights, analyzer: Analyzer, memo: TermMemo
) -> None:
    """Set ``query_coverage`` on the ``chunks`` that lack it (``-1``), in place.

    ``analyzer`` must be the one that indexed the corpus (a chunk's terms are
    analysed as an indexed text's are, memoised by content hash in ``memo``).
    """
    missing = [sc for sc in chunks if sc.query_coverage < 0]
    if not missing:
        return
    total = sum(w for _, w in weights)
    for sc in missing:
        held = memo.terms(sc, analyzer)
        found = sum(w for term, w in weights if term in held)
        sc.query_coverage = found / total if total > 0 else 0.0
