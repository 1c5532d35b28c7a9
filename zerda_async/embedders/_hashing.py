"""A dependency-free, offline embedder: feature hashing of words and character n-grams.

It is *lexical*, not semantic: texts are similar when they share words or
word pieces, never because they mean the same thing ("car" and "automobile"
are unrelated to it), and unrelated texts still score about 0.3-0.4 cosine
through shared n-grams, so next to BM25 it adds noise rather than recall
(measured in issue 10).  :func:`~zerda_async.embedders.default_embedder`
never returns it.  It needs no model download and no network, which makes
it the zero-setup default of the ``zerda`` command line, the HTTP service and
the demo.  For semantic retrieval pass a real model's ``embed`` function (any
``text -> vector`` callable, plain or coroutine) to ``index()`` instead; the
engine needs no particular model.

Features of each word of the normalised text:

* the word itself (weight 1);
* for Arabic words, the word without a leading definite article or
  conjunction + article (``ال``, ``وال``, ``بال``, ``كال``, ``فال``, ``لل``),
  so ``التعلم`` and ``تعلم`` share a feature (weight 1);
* each character ``ngram``-gram of the word padded with ``<`` and ``>``
  (weight ``ngram_weight``), which matches inflected forms and typos partly.

Arabic-aware normalisation: diacritics and tatweel are removed and the alef
forms (``أ إ آ ٱ``) are unified, ``ى`` becomes ``ي`` and ``ة`` becomes ``ه``,
so spelling variants hash alike.  Features are hashed (blake2b, stable across
processes and machines) into ``dim`` buckets with a hashed sign; the vector is
L2-normalised, so the dot product of two embeddings is their cosine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["HashingEmbedder"]

_DIACRITICS = re.compile(r"[\u064B-\u065F\u0670\u0640]")
_ALEF = re.compile(r"[\u0622\u0623\u0625\u0671]")
_WORD = re.compile(r"[\w\u0600-\u06FF]+")
_ARABIC_LETTER = re.compile(r"[\u0621-\u064A]")
# Longest first: "وال" must be tried before "ال".
_ARTICLES = ("وال", "بال", "كال", "فال", "لل", "ال")
_MIN_STEM = 2


def _normalise(text: str) -> str:
    text = _DIACRITICS.sub("", text.lower())
    text = _ALEF.sub("\u0627", text)
    return text.replace("\u0649", "\u064a").replace("\u0629", "\u0647")


def _strip_article(word: str) -> str | None:
    """``word`` without a leading Arabic article, or ``None`` when it has none."""
    if not _ARABIC_LETTER.match(word):
        return None
    for prefix in _ARTICLES:
        if word.startswith(prefix) and len(word) - len(prefix) >= _MIN_STEM:
            return word[len(prefix) :]
    return None


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dim: int) -> tuple[int, bool]:
    """The bucket of ``feature`` and whether it is added negatively."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dim, bool(digest[4] & 1)


class HashingEmbedder:
    """Maps text to an L2-normalised ``dim``-dimensional float64 vector (lexical, offline).

    Use it as ``embed_fn`` (one text) or its :meth:`embed_batch` as
    ``batch_embed_fn``; :meth:`params` and :meth:`from_params` record and
    rebuild the configuration, so a saved index can be queried with the
    embedder that built it.
    """

    name = "hashing"

    def __init__(self, dim: int = 256, ngram: int = 3, ngram_weight: float = 0.5) -> None:
        if dim < 1 or ngram < 1:
            raise ValueError(f"dim and ngram must be positive, got dim={dim}, ngram={ngram}")
        if not ngram_weight >= 0:
            raise ValueError(f"ngram_weight must be >= 0, got {ngram_weight}")
        self.dim = dim
        self.ngram = ngram
        self.ngram_weight = ngram_weight

    def params(self) -> dict[str, Any]:
        """The constructor arguments (JSON-serialisable)."""
        return {"dim": self.dim, "ngram": self.ngram, "ngram_weight": self.ngram_weight}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> HashingEmbedder:
        """The embedder described by :meth:`params` output."""
        return cls(
            dim=int(params.get("dim", 256)),
            ngram=int(params.get("ngram", 3)),
            ngram_weight=float(params.get("ngram_weight", 0.5)),
        )

    def _features(self, text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        for word in _WORD.findall(_normalise(text)):
            features.append(("w:" + word, 1.0))
            stem = _strip_article(word)
            if stem is not None:
                features.append(("w:" + stem, 1.0))
            padded = f"<{word}>"
            if self.ngram_weight > 0:
                for i in range(max(1, len(padded) - self.ngram + 1)):
                    features.append(("g:" + padded[i : i + self.ngram], self.ngram_weight))
        return features

    def __call__(self, text: Any) -> NDArray[np.float64]:
        """The embedding of one text (``None`` and non-strings are embedded as ``str``)."""
        vec = np.zeros(self.dim, dtype=np.float64)
        for feature, weight in self._features("" if text is None else str(text)):
            bucket, negative = _slot(feature, self.dim)
            vec[bucket] += -weight if negative else weight
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        """One row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float64)
        return np.stack([self(text) for text in texts])

    def __repr__(self) -> str:
        return (
            f"HashingEmbedder(dim={self.dim}, ngram={self.ngram}, ngram_weight={self.ngram_weight})"
        )
