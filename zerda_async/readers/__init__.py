"""Readers: files in, documents with text, metadata and structure out.

:func:`read_document` picks a reader by suffix — PDF (``pypdf``, text per
page, Arabic in reading order), Word ``.docx`` (``python-docx``: headings,
paragraphs, tables), HTML (``trafilatura``: main content only), Markdown
(``markdown-it-py``: the heading tree), plain text — and returns a
:class:`Document`.  :func:`chunk_document` cuts it into chunks that are slices
of its text, each with its page and section path.  A file that cannot be read
raises :class:`UnreadableDocument` with a one-line reason.

Readers block (file I/O, parsing): call them from a worker thread in async code.
"""

from ._bidi import normalise_presentation_forms, visual_to_logical
from ._chunking import (
    LONG_DOCUMENT,
    PARAGRAPH_BREAK,
    SENTENCE_END,
    DocumentChunk,
    chunk_document,
    chunk_size_for,
    chunk_spans,
)
from ._document import Document, Heading, UnreadableDocument
from ._html import html_document, stripped_blocks
from ._registry import READERS, Reader, read_document, reader_for
from ._text import read_text_file

__all__ = [
    "LONG_DOCUMENT",
    "PARAGRAPH_BREAK",
    "READERS",
    "SENTENCE_END",
    "Document",
    "DocumentChunk",
    "Heading",
    "Reader",
    "UnreadableDocument",
    "chunk_document",
    "chunk_size_for",
    "chunk_spans",
    "html_document",
    "normalise_presentation_forms",
    "read_document",
    "read_text_file",
    "reader_for",
    "stripped_blocks",
    "visual_to_logical",
]
