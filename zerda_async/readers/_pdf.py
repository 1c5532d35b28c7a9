"""PDF files through ``pypdf`` (pure Python): the text of each page, in reading order.

A page without Arabic is extracted with pypdf's default mode, which follows
the content stream and keeps the line breaks.  A page with Arabic is
extracted in pypdf's layout mode, which places the text by position (each
line in visual order, left to right) and then turned into reading order line
by line (:mod:`._bidi`); presentation forms are normalised on every page.

Pages are joined by a blank line; :attr:`Document.pages` records where each
starts.  A PDF that is encrypted (with a password other than the empty one),
broken, or has no text on any page (a scan without a text layer) raises
:class:`UnreadableDocument` with the reason.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ._bidi import has_arabic, logical_lines, normalise_presentation_forms
from ._document import Document, UnreadableDocument, import_extra

__all__ = ["read_pdf"]

PAGE_SEPARATOR = "\n\n"


def _page_text(page: Any) -> str:
    text = page.extract_text() or ""
    if has_arabic(text):
        visual = page.extract_text(extraction_mode="layout", layout_mode_space_vertically=False)
        text = logical_lines(visual or "", text)
    return normalise_presentation_forms(text).strip()


def _open(path: Path) -> Any:
    pypdf = import_extra("pypdf", "PDF", "pypdf")
    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("encrypted PDF (it needs a password)")
        len(reader.pages)  # a broken page tree fails here, not halfway through
    except UnreadableDocument:
        raise
    except (pypdf.errors.PyPdfError, OSError, ValueError, KeyError, TypeError) as exc:
        raise UnreadableDocument(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    return reader


def _title(reader: Any) -> str:
    try:
        info = reader.metadata
    except Exception:  # a broken info dictionary loses the title, not the text
        return ""
    title = getattr(info, "title", None) if info is not None else None
    return str(title).strip() if title else ""


def read_pdf(path: Path) -> Document:
    """The text of every page of the PDF at ``path`` (see the module notes)."""
    reader = _open(path)
    parts: list[str] = []
    starts: list[int] = []
    at = 0
    # pypdf logs (not raises) what it repairs in a sloppy file; a skipped file says why.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        for page in reader.pages:
            text = _page_text(page)
            starts.append(at)
            parts.append(text)
            at += len(text) + len(PAGE_SEPARATOR)
    except UnreadableDocument:
        raise
    except Exception as exc:  # whatever pypdf trips on in a page, the file is named
        raise UnreadableDocument(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    text = PAGE_SEPARATOR.join(parts)
    if not text.strip():
        raise UnreadableDocument(
            f"no text layer in its {len(parts)} page(s) (a scan? run OCR on it first)"
        )
    return Document(
        source=str(path),
        kind="pdf",
        text=text,
        title=_title(reader),
        pages=tuple(starts),
        metadata={"pages": len(parts)},
    )
