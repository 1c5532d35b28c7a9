"""The recommended profile's measured values (:meth:`ContextEngineConfig.recommended`).

Each constant says what it is and which bench measured it; ``core.config``
re-exports them, and ``recommended()`` applies them.
"""

from __future__ import annotations

__all__ = [
    "RECOMMENDED_BUDGETS",
    "RECOMMENDED_FUSION_DEPTH",
    "RECOMMENDED_MIN_QUERY_COVERAGE",
    "RECOMMENDED_MIN_VECTOR_MARGIN",
    "RECOMMENDED_RELEVANCE_FLOOR",
]

RECOMMENDED_BUDGETS: tuple[int, int, int] = (3000, 4000, 6000)
"""Context budgets (characters) of the recommended profile for low, medium, high complexity.

Low was 2,000: the answer's chunk of a simple question often ranks 6th to 9th,
behind its neighbours, and 3,000 characters hold more of those.  With e5, on the
public sets (``bench/bench_budgets.py``), the answer was in the default context
of up to 3 more questions in 100 (ARCD 95.8% -> 97.0%, XQuAD Arabic 98.2% ->
99.3%, 20 COVID-QA articles 79.9% -> 82.9%, across languages +1 to +2 points),
for about 800 more characters of context on average (2,200 -> 3,000).  Part
of it is the adaptive budget: it shrinks a budget over twice the recent mean,
so at 2,000 it also cut the medium and high budgets down.
"""

RECOMMENDED_RELEVANCE_FLOOR: float = 0.06
"""The recommended profile's ``composer.relevance_floor`` (see ``bench/bench_packing.py``).

Just above the 0.05 that the documented ranker's position factor alone gives a
chunk, so a chunk needs some keyword or vector evidence to be packed.  It is on
the ranker's ``composite_score`` scale: a different ranker needs its own value.
"""

RECOMMENDED_MIN_QUERY_COVERAGE: float = 0.15
"""The recommended profile's ``composer.min_query_coverage`` (``bench/bench_quality.py``).

An absolute relevance floor: below it the best chunk holds under 15% of the
query's idf-weighted terms.  On ARCD and COVID-QA it flagged 0.5% / 0% of the
answerable questions and 97.5% / 100% of the other language's questions; the
best chunk of a same-language question on another topic often shares one common
word, so only some of those are flagged (see docs/quality.md).
"""

RECOMMENDED_FUSION_DEPTH: int = 50
"""The recommended profile's ``retriever.fusion_depth`` (candidates per method, convex fusion).

Deeper than ``top_k`` (20) so a chunk ranked 20th-50th by both methods can be
fused into the top 20; 50 measured above 20 and 30 and level with 100.
"""

RECOMMENDED_MIN_VECTOR_MARGIN: float = 0.05
"""A fixed ``composer.min_vector_margin`` for multilingual-e5-small (``docs/hybrid.md``);
the recommended profile takes the embedder's own calibration instead
(``composer.embedder_floor``): a margin means something only on one model's scale.
"""
