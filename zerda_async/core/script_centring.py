"""Script centring: a question vector without the embedder's Arabic-versus-Latin direction.

A multilingual embedder places text of one script nearer to other text of
that script, whatever it says: multilingual-e5-small's cosines between an
Arabic question and an English chunk sit lower than between two Arabic
texts.  In a corpus of both, an Arabic question's English answer is then
outranked by Arabic chunks on other topics (``bench/README.md``, script
centring: the answer was in the vector list's top 20 for 60% of such
questions held-out).

An embedder may carry a :class:`ScriptDirection`: the unit direction from
the mean of its Latin-script passage vectors to the mean of its Arabic ones
(``E5_DIRECTION`` for e5-small, measured by ``bench/bench_script_centring.py``
on the tune half).  With ``retriever.script_centring`` on, the engine removes
that component from the question vector before the vector search:
``q' = q - (q . d) d``.  A chunk's cosine then no longer rewards sharing the
question's script; what is left is what the texts say.  Only the question
changes, so every index placement (in memory, a saved directory, an index
store, PostgreSQL's exact or HNSW search) scans as before and ranks alike.
Ties stay ties: two chunks with one vector get one cosine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .question_map import QuestionMap, map_question

__all__ = ["ScriptDirection", "centre_query", "direction_of", "question_vector"]


class ScriptDirection:
    """A unit direction in an embedder's vector space (the script offset; module notes).

    ``values`` are any finite, not all-zero numbers; they are scaled to
    length 1 once.  ``question_map``: the embedder's learned correction of
    centred question vectors of one script (``core.question_map``), applied
    with ``retriever.question_map``.  Read-only.
    """

    __slots__ = ("_map", "_unit")

    def __init__(self, values: Iterable[float], question_map: QuestionMap | None = None) -> None:
        raw = [float(v) for v in values]
        if not raw or not all(math.isfinite(v) for v in raw):
            raise ValueError("ScriptDirection needs finite numbers, at least one")
        vector = np.asarray(raw, dtype=np.float64)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            raise ValueError("ScriptDirection must not be all zeros")
        unit = vector / norm
        unit.setflags(write=False)
        self._unit: NDArray[np.float64] = unit
        if question_map is not None and not isinstance(question_map, QuestionMap):
            raise TypeError(
                f"ScriptDirection question_map must be a QuestionMap or None,"
                f" got {type(question_map).__name__}"
            )
        if question_map is not None and question_map.dim != unit.shape[0]:
            raise ValueError(
                f"ScriptDirection of dimension {unit.shape[0]} cannot carry a QuestionMap"
                f" of dimension {question_map.dim}"
            )
        self._map = question_map

    @property
    def unit(self) -> NDArray[np.float64]:
        """The direction as a read-only unit vector (float64)."""
        return self._unit

    @property
    def dim(self) -> int:
        """Its dimension (the embedder's)."""
        return int(self._unit.shape[0])

    @property
    def question_map(self) -> QuestionMap | None:
        """The embedder's question map, if it has one (``core.question_map``)."""
        return self._map

    def __repr__(self) -> str:
        return f"ScriptDirection(dim={self.dim})"


def direction_of(*owners: Any) -> ScriptDirection | None:
    """The ``script_direction`` of the first of ``owners`` that has one, or ``None``.

    Each owner is an embedder, or a bound method of one (``emb.embed_query``
    passed alone): its ``__self__`` is looked at too.  Anything that is not a
    :class:`ScriptDirection` counts as none.
    """
    for owner in owners:
        for candidate in (owner, getattr(owner, "__self__", None)):
            if candidate is None:
                continue
            found = getattr(candidate, "script_direction", None)
            if isinstance(found, ScriptDirection):
                return found
    return None


def centre_query(vector: ArrayLike, direction: ScriptDirection | None) -> NDArray[np.float64]:
    """``vector`` (flattened, float64) less its component along ``direction``.

    Unchanged when ``direction`` is ``None`` or of another dimension (the
    vector search then reports a wrong dimension as it always does) or the
    vector holds a NaN or infinity (the engine's query check names it).
    """
    query = np.asarray(vector, dtype=np.float64).flatten()
    if direction is None or query.shape[0] != direction.dim or not np.isfinite(query).all():
        return query
    unit = direction.unit
    centred: NDArray[np.float64] = query - float(query @ unit) * unit
    return centred


def question_vector(
    vector: ArrayLike,
    direction: ScriptDirection | None,
    question: str,
    *,
    centring: bool,
    mapping: bool,
) -> Any:
    """The question vector the vector search is given (``retriever.script_centring`` and
    ``retriever.question_map``, passed as ``centring`` and ``mapping``).

    Without ``centring``: ``vector`` itself (the map was fitted on centred
    vectors, so it needs centring on).  Else it is centred
    (:func:`centre_query`) and, with ``mapping``, goes through the direction's
    question map when ``question`` is written in the map's script.
    """
    if not centring:
        return vector
    centred = centre_query(vector, direction)
    if not mapping or direction is None:
        return centred
    return map_question(centred, direction.question_map, question)
