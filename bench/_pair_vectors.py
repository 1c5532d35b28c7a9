"""Multilingual USE v3 vectors cached like e5's, and the e5 + USE pair over both caches.

``UseVectors`` is :class:`~_e5_vectors.E5Vectors` for the product's
``UniversalSentenceEncoder`` (one BLAS thread): USE is symmetric, so a
question and a chunk are embedded alike and cached under one key, the
SHA-256 of the text, in ``bench/out/cache/use-v3/``.

``PairEmbedder`` is the product's ``E5UseEmbedder`` over both caches, in the
engine's shape (``f(query)``, ``f.embed_batch(chunks)``): each text's unit
e5 vector scaled by ``sqrt(w)`` beside its unit USE vector scaled by
``sqrt(1 - w)``, so the dot product of two such vectors is
``w cos_e5 + (1 - w) cos_use`` and every index placement ranks by that
weighted cosine unchanged.  Its script direction is ``E5_USE_DIRECTION``
(e5's, zero over the USE half); its floor is whatever the caller gives
(``E5_USE_FLOOR`` for the shipped one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _e5_vectors import CACHE_ROOT, QUERY, E5Vectors, Matrix

from zerda_async.core.vector_floor import Floor
from zerda_async.embedders import E5_USE_DIRECTION, UniversalSentenceEncoder

__all__ = ["PairEmbedder", "UseVectors"]

_TEXT = ""
"""USE's key prefix: none (one form for questions and chunks)."""


class UseVectors(E5Vectors):
    """USE v3 vectors of texts, memoised in memory and on disk (questions = chunks)."""

    dim = 512

    def __init__(self, cache: Path | None = None) -> None:
        self._model = UniversalSentenceEncoder(threads=1)
        self.name = "multilingual USE v3 (UniversalSentenceEncoder, 1 BLAS thread)"
        self._setup(cache if cache is not None else CACHE_ROOT / "use-v3")

    def passages(self, texts: Sequence[Any], progress: bool = False) -> Matrix:
        """Unit USE vectors of ``texts``."""
        return self._embed(_TEXT, [str(t or "") for t in texts], progress)

    def queries(self, texts: Sequence[Any], progress: bool = False) -> Matrix:
        """The same as :meth:`passages`: USE is symmetric."""
        return self.passages(texts, progress)


assert _TEXT != QUERY


class PairEmbedder:
    """e5 and USE side by side, weighted ``w`` / ``1 - w`` (module notes)."""

    def __init__(
        self, e5: E5Vectors, use: UseVectors, w: float, vector_floor: Floor | None = None
    ) -> None:
        self.e5, self.use, self.w = e5, use, w
        self.name = f"e5 + USE (w {w})"
        self.vector_floor = vector_floor
        self.script_direction = E5_USE_DIRECTION
        self._scale = (math.sqrt(w), math.sqrt(1.0 - w))

    def join(self, e5_rows: Matrix, use_rows: Matrix) -> np.ndarray:
        """The pair's rows of matching e5 and USE rows."""
        a, b = self._scale
        return np.hstack([a * e5_rows.astype(np.float64), b * use_rows.astype(np.float64)])

    def __call__(self, text: Any) -> Any:
        return self.join(self.e5.queries([text]), self.use.queries([text]))[0]

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return self.join(self.e5.passages(texts), self.use.passages(texts))
