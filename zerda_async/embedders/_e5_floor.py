"""The relevance floor's calibration for multilingual-e5-small (``docs/embedders.md``).

``E5_FLOOR`` is the fitted model that ``E5Embedder`` carries; ``E5_MARGIN_FLOOR``
the fixed margins it carried before, kept for ``E5Embedder(vector_floor=...)``.
"""

from __future__ import annotations

from zerda_async.core.floor_model import FloorModel, FloorWeights, MarginRule
from zerda_async.core.vector_floor import VectorFloor

__all__ = ["E5_FLOOR", "E5_MARGIN_FLOOR"]

E5_MARGIN_FLOOR = VectorFloor(accept=0.05, agree=0.0, depth=50)
"""The fixed margins e5-small carried before ``E5_FLOOR`` (``bench/bench_floor.py``).

``accept`` lies halfway between the median best margins of off-topic
questions and of answerable questions asked in the other language (rounded
down to 0.005); ``agree`` is the largest multiple of 0.005 at which, in each
kind of answerable question, at most 0.5% of those the keyword floor passes
would be flagged."""

E5_FLOOR = FloorModel(
    same=FloorWeights(-56.0653, (63.7382, 49.3886, 7.5094, 1.3469)),
    cross=MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree),
    depth=50,
    cross_alone=MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree),
)
"""multilingual-e5-small's relevance floor (a :class:`FloorModel`).

Printed by ``bench/bench_floor_fit.py`` from the tune half of the public sets
(articles of even index).  Weights over (best cosine, its margin over a
50-deep vector list's last, best keyword coverage, Arabic question).  ``same``
(chunks in the question's script) flags at most 0.5% of the tune half's
answerable questions (4 of 830 rows, 0.48%; the first fit's interpolated
quantile had let 5 through, 0.6%).  ``cross`` (chunks in the other script)
flags, for Arabic questions and for the others apart, as many of the tune
half's cross-language off-topic questions as ``E5_MARGIN_FLOOR`` does.  When
no chunk in the question's script is listed (``cross_alone``), the margin
rule itself judges, over all the chunks (``E5_MARGIN_FLOOR``'s verdict): at
those flags it loses fewer answerable questions there, while beside chunks
in the question's script the weights lose fewer (``docs/hybrid.md``)."""
