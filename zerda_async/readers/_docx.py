"""Word ``.docx`` files through ``python-docx``: headings, paragraphs and tables, in order.

The body is walked in document order so that tables stay where they are
between paragraphs.  A paragraph whose style is ``Heading N`` starts a section
at level N; the ``Title`` paragraph is text and the document's title (unless
the file's properties hold one).  A table becomes one block, a row per line
and its cells separated by `` | `` (a cell merged across columns once).
A file that is not a Word archive (or a corrupt one) raises
:class:`UnreadableDocument`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ._builder import TextBuilder
from ._document import Document, UnreadableDocument, import_extra

__all__ = ["read_docx"]

_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre)\s*(\d)$", re.IGNORECASE)


def _style(paragraph: Any) -> str:
    return str(getattr(paragraph.style, "name", "") or "").strip()


def _heading_level(paragraph: Any) -> int | None:
    """The heading level of a paragraph from its style name, or None for body text."""
    match = _HEADING_STYLE.match(_style(paragraph))
    return int(match.group(1)) if match else None


def _table_text(table: Any) -> str:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # a merged cell repeats in each column
                cells.append(text)
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _open(path: Path) -> Any:
    docx = import_extra("docx", ".docx", "python-docx")
    try:
        return docx.Document(str(path))
    except Exception as exc:  # a missing part, bad zip, broken XML: all mean "corrupt"
        raise UnreadableDocument(
            f"not a readable Word .docx file ({type(exc).__name__}: {exc})"
        ) from None


def read_docx(path: Path) -> Document:
    """The text of the Word document at ``path`` with its headings (see the module notes)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    word = _open(path)
    out = TextBuilder()
    title = ""
    for element in word.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            paragraph = Paragraph(element, word)
            level = _heading_level(paragraph)
            if level is not None:
                out.heading(paragraph.text, level)
                continue
            out.paragraph(paragraph.text)
            if not title and _style(paragraph).lower() == "title":
                title = " ".join(paragraph.text.split())
        elif tag == "tbl":
            out.paragraph(_table_text(Table(element, word)))
    text = out.text
    if not text.strip():
        raise UnreadableDocument("no text in the Word document")
    own_title = (word.core_properties.title or "").strip()
    return Document(
        source=str(path),
        kind="docx",
        text=text,
        title=own_title or title,
        headings=tuple(out.headings),
    )
