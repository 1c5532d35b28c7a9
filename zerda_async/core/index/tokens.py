"""Tokenisation for BM25: the token rule, and whole corpora to term ids in few regex passes.

:func:`tokenize` is the rule (shared by the index and its queries): runs of at
least two word characters or Arabic-block letters, taken from the lower-cased
text.  There is no stop-word removal and no normalisation, so a hamza form
and its bare letter are different tokens.

:func:`encode_texts` gives exactly the tokens of :func:`tokenize` applied to
each text.  To avoid one regex call per chunk, a batch of texts is
joined with NUL separators, lower-cased once and scanned once by the token
pattern extended with a NUL alternative, so every separator shows up as its
own match and splits the token stream back into documents.  This is exact:

* no token can contain or span a NUL (NUL is neither a word character nor in
  the Arabic block), so each text's matches are unchanged;
* ``str.lower`` is per character except the context-dependent final sigma,
  whose context scan stops at a NUL (it is neither cased nor case-ignorable),
  so lower-casing the joined string equals joining the lower-cased texts.

A batch containing a NUL inside a text, or a text that is not a plain ``str``,
falls back to one :func:`tokenize` call per text (which also raises the
documented ``AttributeError`` for ``None``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["TOKEN_BATCH", "TOKEN_PATTERN", "Tokenizer", "encode_texts", "tokenize"]

TOKEN_PATTERN: re.Pattern[str] = re.compile(r"[\w\u0600-\u06FF]{2,}")
"""Compiled token regex (Unicode-aware ``\\w`` plus the Arabic block U+0600–U+06FF)."""


def tokenize(text: str) -> list[str]:
    """Return the tokens of ``text.lower()`` in order of appearance (duplicates kept).

    Anything without a ``lower`` method (``None`` included) raises
    :class:`AttributeError`, the same failure the documented package shows.
    """
    return TOKEN_PATTERN.findall(text.lower())


TOKEN_BATCH = 8192
"""Texts per regex pass (and per progress report)."""

_SEPARATOR = "\x00"
_BATCH_PATTERN = re.compile(f"{TOKEN_PATTERN.pattern}|{_SEPARATOR}")


def _tokens_of_batch(texts: Sequence[Any]) -> list[str] | None:
    """All tokens of ``texts`` with one separator between texts, or None (use the fallback)."""
    if not all(type(text) is str for text in texts):
        return None
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:
        return None
    tokens: list[str] = _BATCH_PATTERN.findall(joined.lower())
    return tokens


Tokenizer = Callable[[str], list[str]]
"""Turns one text into its terms (an analyser's ``tokenize``)."""


def _encode_batch(
    texts: Sequence[Any], vocabulary: dict[str, int], tokenizer: Tokenizer | None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    n = len(texts)
    tokens = _tokens_of_batch(texts) if tokenizer is None else None
    if tokens is None:
        rule = tokenize if tokenizer is None else tokenizer
        per_text = [rule(text) for text in texts]
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=n)
        tokens = [token for words in per_text for token in words]
        separated = False
    else:
        separated = True
    local = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    # Local ids first (one dict lookup per token), then one numpy gather to
    # the shared ids; new terms get the next ids in first-occurrence order.
    to_global = np.fromiter(
        (
            -1 if token == _SEPARATOR else vocabulary.setdefault(token, len(vocabulary))
            for token in local
        ),
        dtype=np.int64,
        count=len(local),
    )
    ids = to_global[np.fromiter(map(local.__getitem__, tokens), dtype=np.int64, count=len(tokens))]
    if separated:
        is_sep = ids < 0
        doc_of_token = np.cumsum(is_sep)[~is_sep]
        ids = ids[~is_sep]
        lengths = np.bincount(doc_of_token, minlength=n).astype(np.int64)
    return ids, lengths


def encode_texts(
    texts: Sequence[Any],
    vocabulary: dict[str, int],
    *,
    progress: Callable[[int], None] | None = None,
    tokenizer: Tokenizer | None = None,
) -> list[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """Tokenise ``texts`` into batches of ``(term ids, token count per text)``.

    ``tokenizer`` replaces the documented rule (one call per text); ``None``
    keeps the documented rule and its single-regex-pass batches.
    Batches hold :data:`TOKEN_BATCH` texts each, in order; term ids come from
    ``vocabulary``, which is extended in place with unseen terms (ids
    ``len(vocabulary)``, ``len(vocabulary) + 1``, ... in first-occurrence
    order).  ``progress(done)`` is called after each batch.
    """
    batches = []
    for start in range(0, len(texts), TOKEN_BATCH):
        batches.append(_encode_batch(texts[start : start + TOKEN_BATCH], vocabulary, tokenizer))
        if progress is not None:
            progress(min(start + TOKEN_BATCH, len(texts)))
    return batches
