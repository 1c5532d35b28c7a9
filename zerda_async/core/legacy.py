"""The older, tuple-based helpers: chunk validation, dedup, ranking, compression.

They operate on ``(chunk, score)`` pairs whose chunk exposes a ``text`` string.
They match the legacy strategy interfaces only structurally: none of them
subclasses :mod:`.strategy`'s ABCs, as in the documented package.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, ClassVar

from .config import LengthCounter
from .truncation import truncate

__all__ = [
    "GreedyCompression",
    "HashDeduplication",
    "PrefixDeduplication",
    "ScoreRanking",
    "validate_chunk",
]

Pair = tuple[Any, Any]


def validate_chunk(chunk: object) -> None:
    """Raise ``TypeError`` unless ``chunk`` has ``doc_id`` and ``text`` strings.

    Missing attributes are reported first (``doc_id`` before ``text``), then
    the type of ``text``, then the type of ``doc_id``.  ``str`` subclasses pass.
    """
    missing = [attr for attr in ("doc_id", "text") if not hasattr(chunk, attr)]
    if missing:
        raise TypeError(
            f"Chunk is missing required attributes: {missing}. "
            "Chunk must expose 'doc_id: str' and 'text: str'."
        )
    checked: Any = chunk
    if not isinstance(checked.text, str):
        raise TypeError(f"chunk.text must be str, got {type(checked.text).__name__}.")
    if not isinstance(checked.doc_id, str):
        raise TypeError(f"chunk.doc_id must be str, got {type(checked.doc_id).__name__}.")


class PrefixDeduplication:
    """Keeps the first pair of each case-folded ``text`` prefix.

    Every chunk must be at least ``prefix_length`` code points long: the
    first shorter one raises ``ValueError`` and the whole call fails.
    Whitespace is not normalised.
    """

    def __init__(self, prefix_length: int = 100) -> None:
        self.prefix_length = prefix_length

    def deduplicate(self, chunks: Iterable[Pair]) -> list[Pair]:
        """New ``(chunk, score)`` tuples for the first pair of each prefix, in order."""
        seen: set[str] = set()
        unique: list[Pair] = []
        for chunk, score in chunks:
            text = chunk.text
            if self.prefix_length > len(text):
                raise ValueError(
                    f"prefix_length {self.prefix_length} exceeds chunk text length {len(text)}."
                )
            sig = text[: self.prefix_length].lower()
            if sig not in seen:
                seen.add(sig)
                unique.append((chunk, score))
        return unique


class HashDeduplication:
    """Keeps the first pair of each whitespace-normalised, lower-cased ``text``.

    The signature is the same SHA-256 as ``ScoredChunk.content_hash``.
    """

    def deduplicate(self, chunks: Iterable[Pair]) -> list[Pair]:
        """New ``(chunk, score)`` tuples for the first pair of each text, in order."""
        seen: set[str] = set()
        unique: list[Pair] = []
        for chunk, score in chunks:
            normalised = " ".join(chunk.text.lower().split())
            sig = hashlib.sha256(normalised.encode("utf-8")).hexdigest()
            if sig not in seen:
                seen.add(sig)
                unique.append((chunk, score))
        return unique


class ScoreRanking:
    """Orders pairs by score, highest first (stable for ties)."""

    def rank(self, chunks: Iterable[Pair], max_chunks: int | None) -> list[Pair]:
        """The original pairs, sorted; cut to ``max_chunks`` unless it is ``None``.

        ``max_chunks`` has no default, and ``0`` yields ``[]`` (unlike the
        modern ranker, where 0 means "use the default").
        """
        ranked = sorted(chunks, key=lambda pair: pair[1], reverse=True)
        return ranked[:max_chunks] if max_chunks is not None else ranked


class GreedyCompression:
    """Shortens a separator-joined context (header, parts, footer) to a target.

    Middle parts are kept whole while they fit; the first part that does not
    fit is truncated (ending the loop) only when more than
    ``MIN_CONTENT_LENGTH`` units remain, otherwise it is skipped and later
    parts are still tried.  Only two separators are charged, so a final clamp
    often cuts the assembled text and loses the footer.
    """

    MIN_CONTENT_LENGTH: ClassVar[int] = 50

    def compress(self, context: str, target: int, counter: LengthCounter, separator: str) -> str:
        """``context`` cut to at most ``target`` units of ``counter``."""
        if counter(context) <= target:
            return context
        if target <= 0:
            return ""
        parts = context.split(separator)
        if len(parts) <= 2:
            return self._truncate(context, target, counter)

        header, *middle, footer = parts
        overhead = counter(header) + counter(footer) + 2 * counter(separator)
        available = target - overhead
        if available < self.MIN_CONTENT_LENGTH:
            # Too little room for content: only the header survives, cut to the whole target.
            return self._truncate(header, target, counter)

        kept: list[str] = []
        used = 0
        for part in middle:
            part_len = counter(part)
            remaining = available - used
            if remaining <= 0:
                break
            if used + part_len <= available:
                kept.append(part)
                used += part_len
            elif remaining > self.MIN_CONTENT_LENGTH:
                kept.append(self._truncate(part, remaining, counter))
                break
            # Otherwise skip this part; a smaller later one may still fit.

        result = separator.join([header, *kept, footer])
        if counter(result) > target:
            result = self._truncate(result, target, counter)
        return result

    @staticmethod
    def _truncate(text: str, max_len: int, counter: LengthCounter) -> str:
        """Word-boundary truncation with ``"..."``, backing off only past 80 % of the cut."""
        return truncate(text, max_len, counter, 0.8)
