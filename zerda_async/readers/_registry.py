"""Which reader reads which file, and the one entry point: :func:`read_document`.

Every reader is a :class:`Reader`: a ``kind`` name, the suffixes it claims,
and ``read(path) -> Document`` raising :class:`UnreadableDocument` with a
one-line reason.  A suffix no reader claims is read as plain text.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from ._document import Document
from ._docx import read_docx
from ._html import html_document
from ._markdown import markdown_document
from ._pdf import read_pdf
from ._text import read_text_file

__all__ = ["READERS", "Reader", "read_document", "reader_for"]


@runtime_checkable
class Reader(Protocol):
    """Reads one kind of file into a :class:`Document`."""

    @property
    def kind(self) -> str:
        """The kind's name (``"pdf"``, ``"docx"``, ...), as in :attr:`Document.kind`."""
        ...

    @property
    def suffixes(self) -> frozenset[str]:
        """The lower-case file suffixes this reader claims (``{".pdf"}``)."""
        ...

    def read(self, path: Path) -> Document:
        """The document at ``path``; :class:`UnreadableDocument` when it cannot be read."""
        ...


@dataclass(frozen=True)
class FunctionReader:
    """A :class:`Reader` made of a function."""

    kind: str
    suffixes: frozenset[str]
    function: Callable[[Path], Document]

    def read(self, path: Path) -> Document:
        """``function(path)``."""
        return self.function(path)


def _text(path: Path) -> Document:
    return Document(source=str(path), kind="text", text=read_text_file(path))


def _markdown(path: Path) -> Document:
    return markdown_document(read_text_file(path), str(path))


def _html(path: Path) -> Document:
    return html_document(read_text_file(path), str(path))


TEXT = FunctionReader("text", frozenset({".txt", ".text", ".rst"}), _text)
READERS: tuple[Reader, ...] = (
    FunctionReader("pdf", frozenset({".pdf"}), read_pdf),
    FunctionReader("docx", frozenset({".docx"}), read_docx),
    FunctionReader("html", frozenset({".html", ".htm"}), _html),
    FunctionReader("markdown", frozenset({".md", ".markdown"}), _markdown),
    TEXT,
)
"""The readers, by kind; :func:`reader_for` picks one by suffix."""


def reader_for(path: str | os.PathLike[str]) -> Reader:
    """The reader claiming ``path``'s suffix; the plain-text one for any other."""
    suffix = Path(path).suffix.lower()
    return next((r for r in READERS if suffix in r.suffixes), TEXT)


def read_document(path: str | os.PathLike[str]) -> Document:
    """Read the file at ``path`` with the reader for its suffix.

    Raises :class:`UnreadableDocument` (a ``ValueError``) with a one-line
    reason when the file cannot be read, :class:`FileNotFoundError` when it
    does not exist.
    """
    target = Path(path)
    if not target.exists():
        raise FileNotFoundError(f"no such file: {target}")
    return reader_for(target).read(target)
