"""A fitted relevance floor: a logistic score per script of the listed chunks.

A multilingual embedder's cosines sit on two scales: a question and a chunk
in one script (Arabic with Arabic, Latin with Latin) reach higher cosines than
a question and its answer in the other script, and an off-topic question in
the chunks' script often reaches a higher cosine than an answerable one in the
other.  One margin for both (:class:`~.vector_floor.VectorFloor`) must be
loose for the one and strict for the other.  A :class:`FloorModel` scores the
chunks of each script apart: for the vector-listed chunks in the question's
script with the ``same`` weights, for those in the other script with the
``cross`` weights, and accepts the chunks when either group's score is
positive.  In a bilingual corpus an Arabic question whose answer is an
English chunk then passes on the English chunks' own scale, though Arabic
chunks on another topic rank above it.

The features of a group (:data:`FEATURES`) are its best cosine, that chunk's
``vector_margin`` (its cosine minus the vector list's last), the best
``query_coverage`` among the group's chunks, and whether the question is
written in Arabic (e5-small's cosines from Arabic questions to English
chunks and from English questions to Arabic ones sit on different scales).  An embedder carries its
fitted weights (``E5_FLOOR`` for multilingual-e5-small, fitted by
``bench/bench_floor_fit.py``); the composer passes the user's question as
asked, not the one a conversation's history was added to
(:func:`~.vector_floor.covers_query`).

A group may be judged by fixed margins instead (:class:`MarginRule`, the
rule of :class:`~.vector_floor.VectorFloor` over that group's chunks), and
the other script's group may have its own judge for when it is alone in the
list (``cross_alone``; a :class:`MarginRule` there reads all the chunks,
keyword hits of the question's script too, as a ``VectorFloor`` does):
e5-small judges the other script's chunks by its margin rule, beside
chunks of the question's script and alone (``E5_FLOOR``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .models import ScoredChunk

__all__ = [
    "FEATURES",
    "FloorModel",
    "FloorWeights",
    "MarginRule",
    "check_margins",
    "finite",
    "group_features",
    "script_of",
]

FEATURES = ("cosine", "margin", "coverage", "arabic_question")
"""The order of a :class:`FloorWeights`' weights."""
_ARABIC_QUESTION = FEATURES.index("arabic_question")

_ARABIC = re.compile(r"[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")
_LETTERS = re.compile(r"[^\W\d_]")
_PROBE = 600
"""Characters of a chunk read to tell its script (its opening is enough)."""


def script_of(text: str) -> str:
    """``"ar"`` when Arabic letters are over 30% of ``text``'s letters, else ``"other"``.

    A chunk is judged on its first 600 characters; a question with a Latin
    name or two in an Arabic sentence stays Arabic.
    """
    probe = text[:_PROBE]
    letters = len(_LETTERS.findall(probe))
    return "ar" if letters and len(_ARABIC.findall(probe)) > 0.3 * letters else "other"


def finite(name: str, value: object) -> float:
    """``value`` as a float; a ``ValueError`` naming ``name`` unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_margins(owner: str, accept: object, agree: object) -> None:
    """Refuse margins that are not numbers in [0, 1] with ``agree <= accept``.

    ``owner`` names the class in the message (``MarginRule``, ``VectorFloor``).
    """
    for name, value in (("accept", accept), ("agree", agree)):
        if not 0.0 <= finite(f"{owner}.{name}", value) <= 1.0:
            raise ValueError(f"{owner}.{name} must be a number in [0, 1], got {value!r}")
    if finite("agree", agree) > finite("accept", accept):
        raise ValueError(f"{owner}.agree ({agree}) must not exceed accept ({accept})")


@dataclass(frozen=True, slots=True)
class FloorWeights:
    """A logistic score ``bias + sum(weights[i] * feature[i])`` over :data:`FEATURES`.

    The decision threshold is folded into ``bias``: a positive score accepts.
    """

    bias: float
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        finite("FloorWeights.bias", self.bias)
        if not isinstance(self.weights, tuple) or len(self.weights) != len(FEATURES):
            raise ValueError(
                f"FloorWeights.weights must be a tuple of {len(FEATURES)} numbers"
                f" ({', '.join(FEATURES)}), got {self.weights!r}"
            )
        for name, weight in zip(FEATURES, self.weights, strict=True):
            finite(f"FloorWeights weight of {name}", weight)

    def score(self, features: Sequence[float]) -> float:
        """The score of one group's ``features`` (positive: relevant)."""
        return self.bias + sum(w * x for w, x in zip(self.weights, features, strict=True))


@dataclass(frozen=True, slots=True)
class MarginRule:
    """Fixed margins for one script group, the rule of :class:`~.vector_floor.VectorFloor`.

    The group passes when one of its chunks' ``vector_margin`` reaches
    ``accept``, or one holds the keyword floor's ``min_query_coverage`` and
    its margin reaches ``agree``.  ``arabic_accept``, when set, replaces
    ``accept`` for questions written in Arabic (e5-small's cosines from Arabic
    questions to English chunks sit on their own scale); it must lie in
    [``agree``, 1] too.
    """

    accept: float
    agree: float
    arabic_accept: float | None = None

    def __post_init__(self) -> None:
        check_margins("MarginRule", self.accept, self.agree)
        if self.arabic_accept is not None:
            value = finite("MarginRule.arabic_accept", self.arabic_accept)
            if not self.agree <= value <= 1.0:
                raise ValueError(
                    f"MarginRule.arabic_accept must be a number in [agree ({self.agree}), 1],"
                    f" got {self.arabic_accept!r}"
                )

    def passes(
        self, group: Sequence[ScoredChunk], minimum: float | None, arabic: bool = False
    ) -> bool:
        """Whether the chunks of one ``group`` pass (``minimum``: ``None`` weighs margins only;
        ``arabic``: the question is written in Arabic).

        This is the one place the margin rule is written: a
        :class:`~.vector_floor.VectorFloor` applies it to all the chunks.
        """
        accept = self.accept
        if arabic and self.arabic_accept is not None:
            accept = self.arabic_accept
        if any(sc.vector_margin >= accept for sc in group):
            return True
        return minimum is not None and any(
            sc.query_coverage >= minimum and sc.vector_margin >= self.agree for sc in group
        )


def _groups(
    chunks: Sequence[ScoredChunk], query: str
) -> list[tuple[bool, list[ScoredChunk], list[float]]]:
    """Per script of the vector-listed ``chunks``: (other script?, its chunks, its features)."""
    scripts = [script_of(sc.text) for sc in chunks]
    asked = script_of(query)
    arabic = 1.0 if asked == "ar" else 0.0
    out: list[tuple[bool, list[ScoredChunk], list[float]]] = []
    pairs = list(zip(scripts, chunks, strict=True))
    for script in dict.fromkeys(s for s, sc in pairs if sc.vector_margin > 0):
        group = [sc for s, sc in pairs if s == script]
        best = max((sc for sc in group if sc.vector_margin > 0), key=lambda sc: sc.vector_score)
        coverage = max(max(sc.query_coverage, 0.0) for sc in group)
        features = [best.vector_score, best.vector_margin, coverage, arabic]
        out.append((script != asked, group, features))
    return out


def group_features(chunks: Sequence[ScoredChunk], query: str) -> list[tuple[bool, list[float]]]:
    """Per script of the vector-listed ``chunks``: (other script than ``query``?, features).

    Only chunks with a positive ``vector_margin`` (those of the vector list,
    bar its last) open a group; a group's coverage also counts the keyword
    hits of its script.  No vector-listed chunk: an empty list.
    """
    return [(cross, features) for cross, _, features in _groups(chunks, query)]


@dataclass(frozen=True, slots=True)
class FloorModel:
    """An embedder's fitted relevance floor (see the module notes).

    ``same`` scores the chunks in the question's script, ``cross`` those in
    the other (fitted weights, or a :class:`MarginRule`); ``depth`` is the
    vector-list length the margins were fitted at (a configuration whose
    ``retriever.fusion_depth`` differs gets the keyword floor only).
    ``cross_alone``, when set, judges the other script's chunks in place of
    ``cross`` when none of the question's script is vector-listed (a
    question asked in the other language than the whole list); a
    :class:`MarginRule` there judges all the chunks, keyword hits of the
    question's script included, so its verdict is that of a
    :class:`~.vector_floor.VectorFloor` with the same margins.
    """

    same: FloorWeights
    cross: FloorWeights | MarginRule
    depth: int = 50
    cross_alone: FloorWeights | MarginRule | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.same, FloorWeights):
            raise ValueError("FloorModel.same must be FloorWeights")
        if not isinstance(self.cross, FloorWeights | MarginRule):
            raise ValueError("FloorModel.cross must be FloorWeights or a MarginRule")
        if self.cross_alone is not None and not isinstance(
            self.cross_alone, FloorWeights | MarginRule
        ):
            raise ValueError("FloorModel.cross_alone must be FloorWeights, a MarginRule or None")
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"FloorModel.depth must be a positive integer, got {self.depth!r}")

    def accepts(
        self, chunks: Sequence[ScoredChunk], query: str, minimum: float | None = None
    ) -> bool | None:
        """Whether some script group of ``chunks`` passes for ``query``.

        A group with weights passes when it scores positive; one with a
        :class:`MarginRule` when the rule passes it (``minimum``: the keyword
        floor's ``min_query_coverage``; ``None`` weighs margins only).
        ``None`` when no chunk came from the vector list: the model has no
        evidence to weigh, and the keyword floor decides.
        """
        groups = _groups(chunks, query)
        if not groups:
            return None
        # Every group's features carry the question's script (_groups read it once).
        arabic = groups[0][2][_ARABIC_QUESTION] > 0
        other = self.cross
        if self.cross_alone is not None and all(cross for cross, _, _ in groups):
            if isinstance(self.cross_alone, MarginRule):
                # The rule alone judges, over every chunk as a VectorFloor
                # does: a keyword hit in the question's script counts too.
                return self.cross_alone.passes(chunks, minimum, arabic)
            other = self.cross_alone
        for cross, group, features in groups:
            judge = other if cross else self.same
            if isinstance(judge, MarginRule):
                if judge.passes(group, minimum, arabic):
                    return True
            elif judge.score(features) > 0:
                return True
        return False
