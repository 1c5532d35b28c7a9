"""Duck-typed chunk fields, resolved exactly as :class:`ScoredChunk` resolves them."""

from __future__ import annotations

from typing import Any

__all__ = [
    "SEARCH_HEADING",
    "chunk_doc_id",
    "chunk_metadata",
    "chunk_text",
    "embedding_text",
    "keyword_text",
]

SEARCH_HEADING = "search_heading"
"""The metadata key of a chunk's heading for keyword search (see :func:`keyword_text`)."""


def chunk_text(chunk: Any) -> Any:
    """``chunk.text`` when truthy, else ``chunk.page_content`` as is, else ``""``."""
    value = getattr(chunk, "text", None)
    if value:
        return value
    return getattr(chunk, "page_content", "")


def chunk_metadata(chunk: Any) -> Any:
    """``chunk.metadata`` when truthy, else a new empty dict."""
    return getattr(chunk, "metadata", None) or {}


def chunk_doc_id(chunk: Any) -> Any:
    """``chunk.doc_id`` when truthy, else ``chunk.id`` as is, else ``""``."""
    value = getattr(chunk, "doc_id", None)
    if value:
        return value
    return getattr(chunk, "id", "")


def keyword_text(chunk: Any) -> Any:
    """What the BM25 index reads of ``chunk``: its heading for search, then its text.

    ``zerda index`` puts the document's title and the chunk's section path in
    ``metadata["search_heading"]``, so a chunk deep in a long document still
    matches the words of what it is about; the chunk's text (what contexts
    and citations show) is unchanged.  Without that key (every chunk not read
    by ``zerda index``) this is :func:`chunk_text` exactly.
    """
    text = chunk_text(chunk)
    metadata = chunk_metadata(chunk)
    heading = metadata.get(SEARCH_HEADING) if isinstance(metadata, dict) else None
    if isinstance(heading, str) and heading and isinstance(text, str):
        return f"{heading}\n{text}"
    return text


def embedding_text(chunk: Any, heading: bool) -> Any:
    """What an embedder reads of ``chunk``: with ``heading``, ``"<search heading>: <text>"``.

    ``retriever.embed_heading`` turns this on: the passage vector then carries
    the document title and section path besides the chunk's words.  A chunk
    without a ``search_heading`` (or ``heading`` False) is :func:`chunk_text`.
    """
    text = chunk_text(chunk)
    if not heading:
        return text
    metadata = chunk_metadata(chunk)
    found = metadata.get(SEARCH_HEADING) if isinstance(metadata, dict) else None
    if isinstance(found, str) and found and isinstance(text, str):
        return f"{found}: {text}"
    return text
