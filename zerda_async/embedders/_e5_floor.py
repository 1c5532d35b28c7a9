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
    cross=MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree, arabic_accept=0.04),
    depth=50,
    cross_alone=MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree),
)
"""multilingual-e5-small's relevance floor (a :class:`FloorModel`).

Printed by ``bench/bench_floor_fit.py`` from the tune half of the public sets
(articles of even index), with ``retriever.script_centring`` on: the cosines
are those of question vectors without e5's script direction
(``core.script_centring``).  Weights over (best cosine, its margin over a
50-deep vector list's last, best keyword coverage, Arabic question).
``same`` (chunks in the question's script) flags at most 0.5% of the tune
half's answerable questions (4 of 830 rows).  Chunks in the other script are
judged by ``E5_MARGIN_FLOOR``'s margins: beside chunks in the question's
script the fit found them flagging fewer answerable questions than fitted
weights (55.5% vs 58.2% of the tune half's Arabic questions whose answer is
English); alone (``cross_alone``, over all the chunks: ``E5_MARGIN_FLOOR``'s
verdict) the weights flagged fewer English questions (16.0% vs 21.3%) at as
many off-topic flags, but they read the other script's chunks only, so a
keyword hit in the question's own script would no longer count; the margins
stay (``docs/hybrid.md``).  Beside chunks in the question's script, an
Arabic question's other-script chunks pass at a margin of 0.04
(``arabic_accept``): the smallest at which the tune half's off-topic
questions there are still flagged 97.5% of the time (the issue's target;
0.05 flagged all of them and a third of the answerable ones,
``bench/bench_floor_beside.py``)."""
