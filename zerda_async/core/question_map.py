"""Question map: a learned linear correction of the question vectors of one script.

Script centring (``core.script_centring``) removes one direction, the mean
offset between an embedder's Arabic and Latin-script texts.  What is left of
the script gap is not one direction: on multilingual-e5-small an Arabic
question still reaches English chunks less well than Arabic ones (vector
list alone, held-out MRR@20 0.71 over English XQuAD against 0.84 over
Arabic XQuAD, the same questions).  A :class:`QuestionMap` is a correction
``q' = q + U (V^T q)``, ``U`` and ``V`` of a few dozen columns, applied to
the centred vectors of questions written in its script only (the script of
the question's text, ``core.floor_model.script_of``).

An embedder's map travels with its script direction
(``ScriptDirection.question_map``).  e5-small's (Arabic questions) moves a
question part of the way toward its English translation: it is fitted by
``bench/bench_question_map.py`` on XQuAD's parallel questions of the tune
half.  With ``retriever.question_map`` on (and ``script_centring``), the
engine applies it after centring (``core.script_centring.question_vector``).
Only the question changes, so every index placement scans as before and
ranks alike.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .floor_model import script_of

__all__ = ["QuestionMap", "map_question"]

_SCRIPTS = ("ar", "other")


def _matrix(name: str, values: ArrayLike) -> NDArray[np.float64]:
    try:
        matrix = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"QuestionMap {name} must be a table of numbers: {exc}") from None
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"QuestionMap {name} must be a non-empty table of numbers")
    if not np.isfinite(matrix).all():
        raise ValueError(f"QuestionMap {name} must hold finite numbers")
    matrix.setflags(write=False)
    return matrix


class QuestionMap:
    """``q -> q + U (V^T q)`` for the vectors of questions written in ``script``.

    ``script`` is ``"ar"`` or ``"other"`` (``core.floor_model.script_of``'s
    two answers); ``u`` and ``v`` are tables of ``dim`` rows and ``rank``
    columns (copied).  Read-only.
    """

    __slots__ = ("_script", "_u", "_v")

    def __init__(self, script: str, u: ArrayLike, v: ArrayLike) -> None:
        if script not in _SCRIPTS:
            raise ValueError(f"QuestionMap script must be one of {_SCRIPTS}, got {script!r}")
        self._script = script
        self._u = _matrix("u", u)
        self._v = _matrix("v", v)
        if self._u.shape != self._v.shape:
            raise ValueError(
                f"QuestionMap u and v must have one shape, got {self._u.shape} and {self._v.shape}"
            )

    @property
    def script(self) -> str:
        """The script of the questions it maps."""
        return self._script

    @property
    def dim(self) -> int:
        """The dimension of the vectors it maps (the embedder's)."""
        return int(self._u.shape[0])

    @property
    def rank(self) -> int:
        """How many directions it moves."""
        return int(self._u.shape[1])

    def apply(self, vector: NDArray[np.float64]) -> NDArray[np.float64]:
        """``vector`` through the map, whatever its question's script (:func:`map_question`
        checks the script).

        Raises :class:`ValueError` if the result is not finite (tables too large
        for the vector: a map of finite numbers can still overflow).
        """
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            moved: NDArray[np.float64] = vector + self._u @ (self._v.T @ vector)
        if not np.isfinite(moved).all():
            raise ValueError(f"{self!r} made a question vector overflow: its tables are too large")
        return moved

    def __repr__(self) -> str:
        return f"QuestionMap({self._script!r}, dim={self.dim}, rank={self.rank})"


def map_question(
    vector: ArrayLike, question_map: QuestionMap | None, question: str
) -> NDArray[np.float64]:
    """``vector`` (flattened, float64) through ``question_map`` when ``question`` is written
    in its script.

    Unchanged when there is no map, the question is in another script, the
    vector has another dimension (the vector search then reports it as it
    always does) or holds a NaN or infinity (the engine's query check names it).
    """
    query = np.asarray(vector, dtype=np.float64).flatten()
    if (
        question_map is None
        or query.shape[0] != question_map.dim
        or not np.isfinite(query).all()
        or script_of(question) != question_map.script
    ):
        return query
    return question_map.apply(query)
