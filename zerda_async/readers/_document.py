"""What a reader returns: a document's extracted text with its pages and headings.

Every offset counts code points of :attr:`Document.text` (Python ``str``
indices), so a chunk's span (:mod:`._chunking`) is a slice of that text and
its page and section are looked up from the same numbers.
"""

from __future__ import annotations

import importlib
from bisect import bisect_right
from typing import Any

import msgspec

__all__ = ["Document", "Heading", "UnreadableDocument"]


class UnreadableDocument(ValueError):
    """A file a reader cannot turn into text; the message is the one-line reason.

    Raised for an encrypted PDF, a PDF without a text layer (a scan), a
    corrupt ``.docx`` archive, text that is not UTF-8, an empty file...
    """


def import_extra(module: str, what: str, package: str) -> Any:
    """``module`` from the documents extra; :class:`UnreadableDocument` naming it when missing."""
    try:
        return importlib.import_module(module)
    except ImportError:  # pragma: no cover - the documents extra is installed in the tests
        raise UnreadableDocument(
            f"reading {what} needs {package}: pip install 'zerda-async[documents]'"
        ) from None


class Heading(msgspec.Struct, frozen=True):
    """A heading of a document: where its line starts in the text, its level and title."""

    start: int
    level: int
    title: str


class Document(msgspec.Struct, kw_only=True):
    """One file as text, with its structure.

    ``pages[n - 1]`` is the offset where page ``n`` starts (PDF only; empty
    for the other kinds).  ``headings`` are in text order; the section of an
    offset is the path of titles of the headings above it (see
    :meth:`section_at`).  ``title`` is the document's own title (PDF or Word
    properties, HTML ``<title>``, the first top-level heading) or ``""``.
    """

    source: str
    kind: str
    text: str
    title: str = ""
    pages: tuple[int, ...] = ()
    headings: tuple[Heading, ...] = ()
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def page_at(self, offset: int) -> int | None:
        """The 1-based page holding ``offset``, or None for a document without pages."""
        if not self.pages:
            return None
        return max(1, bisect_right(self.pages, offset))

    def section_at(self, offset: int) -> tuple[str, ...]:
        """The titles of the headings that enclose ``offset``, outermost first."""
        path: list[Heading] = []
        for heading in self.headings:
            if heading.start > offset:
                break
            while path and path[-1].level >= heading.level:
                path.pop()
            path.append(heading)
        return tuple(h.title for h in path)
