"""The relevance floor's vector evidence, calibrated per embedder.

The recommended profile says "nothing relevant" when no chunk holds
``composer.min_query_coverage`` of the query's idf-weighted words.  Words
cannot judge a question in another language than the documents, and a
question on another topic in the documents' language often shares one common
word with some chunk.  The vector list can help with both, but a cosine means
something only on its embedder's scale: multilingual-e5-small puts nearly
every pair between 0.7 and 0.95, another model spreads them otherwise.  So the
thresholds come from the embedder (an optional ``vector_floor`` attribute, a
:class:`VectorFloor`), never from the configuration; an embedder without one
leaves the keyword floor alone.

The evidence of a chunk is its ``vector_margin``: its cosine minus the last
cosine of the vector list (``retriever.fusion = "convex"`` sets it; lists of
``fusion_depth`` candidates).  With a floor the check (:func:`covers_query`)
accepts the chunks when

* some chunk's margin reaches ``accept`` — the vector list alone finds it
  standing out (a question in another language), or
* some chunk holds ``min_query_coverage`` of the query's words *and* its own
  margin reaches ``agree`` — the keyword match is one the embedder lists too,
  not a shared common word in a chunk about something else.

When no fused chunk came from the vector list (vector search off, no
embedder, another fusion), only the keywords decide, as without a floor.

An embedder may carry a fitted :class:`~.floor_model.FloorModel` instead (a
logistic score per script of the listed chunks, which reads the question's
text too); :data:`Floor` names either kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .floor_model import FloorModel, MarginRule, check_margins
from .models import ScoredChunk

__all__ = ["Floor", "VectorFloor", "covers_query", "floor_of"]


@dataclass(frozen=True, slots=True)
class VectorFloor:
    """An embedder's calibration of the relevance floor (see the module notes).

    ``accept``: the margin above which a chunk is relevant whatever its words;
    ``agree``: the margin a keyword-matched chunk must reach too; ``depth``:
    the vector-list length the margins were measured at (a configuration whose
    ``retriever.fusion_depth`` differs gets the keyword floor only).
    """

    accept: float
    agree: float
    depth: int = 50

    def __post_init__(self) -> None:
        check_margins("VectorFloor", self.accept, self.agree)
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"VectorFloor.depth must be a positive integer, got {self.depth!r}")

    @property
    def rule(self) -> MarginRule:
        """The margins as a :class:`~.floor_model.MarginRule` (which holds the rule)."""
        return MarginRule(self.accept, self.agree)


Floor = VectorFloor | FloorModel
"""An embedder's relevance floor: fixed margins or a fitted model."""


def floor_of(*owners: Any) -> Floor | None:
    """The ``vector_floor`` of the first of ``owners`` that has one, or ``None``.

    Each owner is an embedder, or a bound method of one (``emb.embed_batch``
    passed alone): its ``__self__`` is looked at too.  Anything that is not a
    :class:`VectorFloor` or a :class:`~.floor_model.FloorModel` counts as none.
    """
    for owner in owners:
        for candidate in (owner, getattr(owner, "__self__", None)):
            if candidate is None:
                continue
            found = getattr(candidate, "vector_floor", None)
            if isinstance(found, VectorFloor | FloorModel):
                return found
    return None


def covers_query(
    chunks: Sequence[ScoredChunk],
    minimum: float,
    vector_margin: float = 0.0,
    floor: Floor | None = None,
    query: str | None = None,
) -> bool:
    """False when ``minimum`` is set and the chunks do not show that anything is relevant.

    Without ``floor``: some chunk with a measured ``query_coverage`` (``-1`` is
    not measured: such chunks never trigger the check) must reach ``minimum``,
    unless ``vector_margin`` is positive and some chunk's ``vector_margin``
    reaches it (the fixed margin of ``composer.min_vector_margin``).  With
    ``floor``, see the module notes; a :class:`~.floor_model.FloorModel` also
    reads ``query``, the question the chunks were retrieved for, and refuses
    to guess it: ``query`` left out with such a floor is a ``ValueError``
    (an empty text would silently read as a question not in Arabic).
    """
    if isinstance(floor, FloorModel) and query is None:
        raise ValueError("covers_query: a FloorModel floor needs the question (query=...)")
    if minimum <= 0:
        return True
    if vector_margin > 0 and any(sc.vector_margin >= vector_margin for sc in chunks):
        return True
    measured = [sc for sc in chunks if sc.query_coverage >= 0]
    if not measured:
        return True
    if isinstance(floor, FloorModel):
        verdict = floor.accepts(chunks, query or "", minimum)
        if verdict is not None:
            return verdict
    elif floor is not None and any(sc.vector_margin > 0 for sc in chunks):
        return floor.rule.passes(chunks, minimum)
    return max(sc.query_coverage for sc in measured) >= minimum
