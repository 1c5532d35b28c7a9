"""Keyword score sums of a small corpus in one ``np.bincount``, bit-identical to the term loop.

:meth:`~.keyword_index.KeywordIndex.scores` adds each query term's BM25
weights into a zeroed score per position, term by term (``scores[docs] +=
weights``).  For a corpus of up to :data:`DENSE_SUMS_MAX` positions one
``np.bincount`` over the concatenated postings does the same in a single
call: it walks the postings in order and adds each weight to its position's
float64 sum starting from 0, so every position receives the same additions
in the same order (term order; a document appears once per term) and gets
the same float.  Query coverage (:func:`dense_coverage`) is the same sum
with each term's idf as the weight of all its postings.  Above that size
the loops are kept: on the development machine ``bincount`` became two to
three times slower than the loop at 20,000 positions (``bench/README.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

__all__ = ["DENSE_SUMS_MAX", "dense_coverage", "dense_sums"]

DENSE_SUMS_MAX = 16_384
"""Largest corpus (positions, removed ones included) summed with ``np.bincount``."""


def dense_sums(
    postings: Sequence[tuple[NDArray[np.signedinteger[Any]], NDArray[np.float64]]],
    n_positions: int,
) -> NDArray[np.float64]:
    """Per position, the sum of its weights over ``postings`` (``(docs, weights)`` per term).

    ``docs`` of one term are distinct; the sums run in the order of ``postings``.
    """
    if len(postings) == 1:
        docs, weights = postings[0]
    elif postings:
        docs = np.concatenate([d for d, _ in postings])
        weights = np.concatenate([w for _, w in postings])
    if not postings or docs.shape[0] == 0:
        # No posting at all: bincount would count in integers.
        return np.zeros(n_positions, dtype=np.float64)
    # With weights, bincount sums in float64 (its stubs only know the counting form).
    return cast(NDArray[np.float64], np.bincount(docs, weights=weights, minlength=n_positions))


def dense_coverage(
    held: Sequence[tuple[float, NDArray[np.signedinteger[Any]] | None]],
    positions: NDArray[np.signedinteger[Any]],
    n_positions: int,
) -> NDArray[np.float64]:
    """:func:`~.keyword_index.query_coverage` of ``positions`` by one sum over the corpus.

    ``held`` is each distinct query term's idf and its postings (``None``: none),
    in query order; the same floats as the binary searches of ``query_coverage``.
    """
    total = 0.0
    postings: list[tuple[NDArray[np.signedinteger[Any]], NDArray[np.float64]]] = []
    for weight, docs in held:
        total += weight
        if docs is not None and docs.shape[0]:
            postings.append((docs, np.full(docs.shape[0], weight)))
    found: NDArray[np.float64] = dense_sums(postings, n_positions)[positions]
    return found / total if total > 0 else found
