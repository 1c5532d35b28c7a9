"""The benchmarks' feature-hashing embedder: deterministic, cheap, no model to load."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

_WORD = re.compile(r"\w+")


class HashedEmbedder:
    """Deterministic signed feature-hashing embedder (``dim`` = 64 or 384, say).

    With ``dim=64`` it is exactly ``tests/golden/replay.py::hashed_embedding``:
    md5 of each lower-cased ``\\w+`` token picks a bucket, a weight in
    [0.5, 1.5] and a sign; the vector is L2-normalised.  Token features are
    memoised (same values, computed once per distinct token), which keeps the
    embedder itself from dominating index time.  ``calls`` counts invocations.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self._features: dict[str, tuple[int, float]] = {}
        self.calls = 0

    def _feature(self, token: str) -> tuple[int, float]:
        found = self._features.get(token)
        if found is None:
            digest = hashlib.md5(token.encode("utf-8")).digest()
            bucket = int.from_bytes(digest[0:4], "little") % self.dim
            weight = 0.5 + int.from_bytes(digest[4:6], "little") / 65535.0
            found = self._features[token] = (bucket, -weight if digest[6] & 1 else weight)
        return found

    def vector(self, text: Any) -> NDArray[np.float64]:
        """The embedding of one text, without counting a call."""
        acc = [0.0] * self.dim
        feature = self._feature
        for token in _WORD.findall(str(text or "").lower()):
            bucket, weight = feature(token)
            acc[bucket] += weight
        vec = np.array(acc, dtype=np.float64)
        length = float(np.linalg.norm(vec))
        return vec / length if length > 0 else vec

    def __call__(self, text: Any) -> NDArray[np.float64]:
        self.calls += 1
        return self.vector(text)

    def matrix(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        """One row per text, without counting a call."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float64)
        return np.stack([self.vector(t) for t in texts])
