"""Question words carried into the documents' language by e5, word by word (issue 19).

Across languages a question shares no words with its answer, so keyword
search finds almost nothing (MRR@20 ~0.05).  e5 places a single word near its
translation too: each content word of the question, embedded alone as a
query, is replaced by the ``k`` corpus words (embedded the same way) with the
highest cosine, weighted by that cosine to the power ``sharpness``, and BM25
scores the chunks with those weighted words.  Digits are kept as they are.

The same word vectors give a floor candidate: how closely the question's
words are matched by the words of the chunk the vectors rank first.

Content words are the product's tokens (``zerda_async.core.index.tokens``)
that its multilingual analyser keeps (not a stop word, long enough); they
are embedded in their surface form, as a reader would translate them.
Embedding a word takes ~2 ms (a few thousand distinct words per corpus), so
the vectors are memoised per process.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from zerda_async.core.index.analysis import analyzer_for
from zerda_async.core.index.tokens import tokenize
from zerda_async.embedders import E5Embedder

__all__ = ["TranslatedKeywords", "WordVectors", "content_words"]

Matrix = np.ndarray
_KEEP = analyzer_for("multilingual-lite")
_BATCH = 256


def content_words(text: str) -> list[str]:
    """The text's tokens that the multilingual analyser keeps, in order (duplicates kept)."""
    return [w for w in tokenize(text) if _KEEP.tokenize(w)]


class WordVectors:
    """e5 query vectors of single words, memoised."""

    def __init__(self, embedder: E5Embedder | None = None) -> None:
        self._embedder = embedder or E5Embedder()
        self._rows: dict[str, Matrix] = {}

    def of(self, words: Sequence[str]) -> Matrix:
        """One unit row per word (float64), in the order given."""
        new = sorted({w for w in words if w not in self._rows})
        for at in range(0, len(new), _BATCH):
            batch = new[at : at + _BATCH]
            rows = np.asarray(self._embedder.embed_queries(batch), dtype=np.float64)
            self._rows.update(zip(batch, rows, strict=True))
        if not words:
            return np.zeros((0, self._embedder.dim))
        return np.vstack([self._rows[w] for w in words])

    def best_match(self, question: str, chunk_text: str) -> Matrix:
        """For each distinct content word of ``question`` (digits left out): its best cosine
        to a word of ``chunk_text``; ``[0.0]`` when either side has none."""
        asked = sorted({w for w in content_words(question) if not w.isdigit()})
        found = sorted({w for w in content_words(chunk_text) if not w.isdigit()})
        if not asked or not found:
            return np.zeros(1)
        return np.asarray((self.of(asked) @ self.of(found).T).max(axis=1))


class TranslatedKeywords:
    """BM25 (k1 1.2, b 0.75) over the chunks' content words, queried with translated words."""

    def __init__(self, texts: Sequence[str], words: WordVectors) -> None:
        docs = [content_words(t) for t in texts]
        self._words = words
        self._vocab = sorted({w for d in docs for w in d})
        column = {w: j for j, w in enumerate(self._vocab)}
        lengths = np.asarray([len(d) for d in docs], dtype=np.float64)
        mean = float(lengths.mean()) if len(docs) else 1.0
        weights = np.zeros((len(docs), len(self._vocab)))
        for i, doc in enumerate(docs):
            for w, f in Counter(doc).items():
                norm = 1.2 * (0.25 + 0.75 * lengths[i] / max(mean, 1e-9))
                weights[i, column[w]] = f * 2.2 / (f + norm)
        df = (weights > 0).sum(axis=0)
        n = len(docs)
        self._matrix = weights * np.log(1 + (n - df + 0.5) / (df + 0.5))
        self._column = column
        self._letters = [j for j, w in enumerate(self._vocab) if not w.isdigit()]
        self._vectors = words.of([self._vocab[j] for j in self._letters])

    def query(self, question: str, k: int = 3, sharpness: float = 4.0) -> dict[str, float]:
        """The weighted corpus words standing for the question's content words."""
        weighted: defaultdict[str, float] = defaultdict(float)
        asked = content_words(question)
        letters = [w for w in asked if not w.isdigit()]
        for w in asked:
            if w.isdigit():
                weighted[w] += 1.0
        if letters and self._letters:
            cosines = self._words.of(letters) @ self._vectors.T
            for row in cosines:
                for j in np.argsort(-row, kind="stable")[:k]:
                    weighted[self._vocab[self._letters[j]]] += max(float(row[j]), 0.0) ** sharpness
        return dict(weighted)

    def scores(self, question: str, k: int = 3, sharpness: float = 4.0) -> Matrix:
        """Every chunk's BM25 score for the translated question (zeros when nothing matches)."""
        out = np.zeros(self._matrix.shape[0])
        for word, weight in self.query(question, k, sharpness).items():
            j = self._column.get(word)
            if j is not None and weight != 0:
                out += weight * self._matrix[:, j]
        return out
