"""A dependency-free, offline embedder: feature hashing of words and character n-grams.

It is *lexical*, not semantic: texts are similar when they share words or
word pieces, never because they mean the same thing.  It needs no model
download, which makes it the zero-setup default of the demo; pass a real
model's ``embed`` function to ``index()`` for semantic retrieval.

Arabic-aware normalisation: diacritics and tatweel are removed and the alef
forms (``أ إ آ ٱ``) are unified, ``ى`` becomes ``ي`` and ``ة`` becomes ``ه``,
so spelling variants hash alike.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["HashingEmbedder"]

_DIACRITICS = re.compile(r"[\u064B-\u065F\u0670\u0640]")
_ALEF = re.compile(r"[\u0622\u0623\u0625\u0671]")
_WORD = re.compile(r"[\w\u0600-\u06FF]+")


def _normalise(text: str) -> str:
    text = _DIACRITICS.sub("", text.lower())
    text = _ALEF.sub("\u0627", text)
    return text.replace("\u0649", "\u064a").replace("\u0629", "\u0647")


class HashingEmbedder:
    """Maps text to an L2-normalised ``dim``-dimensional float64 vector.

    Each word contributes with weight 1 and each character ``ngram``-gram of
    the padded word with weight ``ngram_weight``; features are hashed (blake2b)
    into buckets with a hashed sign, which keeps collisions unbiased.
    """

    def __init__(self, dim: int = 256, ngram: int = 3, ngram_weight: float = 0.5) -> None:
        if dim < 1 or ngram < 1:
            raise ValueError(f"dim and ngram must be positive, got dim={dim}, ngram={ngram}")
        self.dim = dim
        self.ngram = ngram
        self.ngram_weight = ngram_weight

    def _features(self, text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        for word in _WORD.findall(_normalise(text)):
            features.append(("w:" + word, 1.0))
            padded = f"<{word}>"
            for i in range(max(1, len(padded) - self.ngram + 1)):
                features.append(("g:" + padded[i : i + self.ngram], self.ngram_weight))
        return features

    def __call__(self, text: Any) -> NDArray[np.float64]:
        """The embedding of one text (``None`` and non-strings are embedded as ``str``)."""
        vec = np.zeros(self.dim, dtype=np.float64)
        for feature, weight in self._features("" if text is None else str(text)):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vec[bucket] += -weight if digest[4] & 1 else weight
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        """One row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float64)
        return np.stack([self(text) for text in texts])
