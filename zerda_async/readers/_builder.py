"""Assembling a document's text block by block, recording where its headings start."""

from __future__ import annotations

from ._document import Heading

__all__ = ["TextBuilder"]


class TextBuilder:
    """Blocks (paragraphs, headings, tables) joined by blank lines, headings recorded."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.headings: list[Heading] = []

    def _add(self, text: str) -> int:
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        return start

    def paragraph(self, text: str) -> None:
        """A block of text (blank ones are left out)."""
        text = text.strip()
        if text:
            self._add(text)

    def heading(self, title: str, level: int) -> None:
        """A heading line: starts a section at ``level`` (1 is the outermost)."""
        title = " ".join(title.split())
        if title:
            self.headings.append(Heading(self._add(title), level, title))

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._parts)
