"""Duck-typed chunk fields, resolved exactly as :class:`ScoredChunk` resolves them."""

from __future__ import annotations

from typing import Any

__all__ = ["chunk_doc_id", "chunk_metadata", "chunk_text"]


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
