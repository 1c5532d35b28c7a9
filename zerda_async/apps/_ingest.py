"""Read text files (or folders of them) into chunks.

A file named explicitly is read whatever its extension, as long as it is
UTF-8 text (``LICENSE``, ``GPL-3``, ``notes.text``...).  Folders are walked for
the extensions in :data:`SUFFIXES` (PDF, Word ``.docx``, HTML, Markdown, plain
text, reStructuredText and JSON Lines); other files in them are counted in
:attr:`IngestReport.ignored`, unless ``all_files=True``.  Every kind but JSON
Lines is read by :mod:`zerda_async.readers` (PDF text per page, the main
content of an HTML page, headings of Markdown, Word and HTML) and cut by its
span chunker: each chunk is a verbatim slice of the document's text, and its
metadata says where it came from (``page``, ``section``, ``doc_start`` /
``doc_end``, the document's ``title`` and ``kind``).  The title and section
path are also the chunk's ``search_heading``, which BM25 indexes with its text
(measured by ``bench/bench_headings.py``).

This is the reading half of ``zerda index``; it does no embedding and no
indexing.  Every file that cannot be used is *reported* — by path, with the
reason — in :attr:`IngestReport.skipped`, never dropped silently:

* unreadable files (permissions, vanished, a directory named like a file);
* files that are not valid UTF-8 (a UTF-8 byte-order mark is accepted), or
  that hold NUL bytes (binary files that happen to decode);
* encrypted or broken PDFs, PDFs without a text layer, corrupt ``.docx``;
* empty files, and ``.jsonl`` lines that are not a JSON object with a text.

Documents are split into chunks of at most ``max_chars`` characters:
paragraphs (blank-line separated) are packed greedily, a heading or a page
break always starts a new chunk, and a paragraph longer than the limit is cut
at sentence ends, then at spaces.  Each chunk's metadata holds the ``source``
(``folder/relative/path`` for files found in a folder given, else the file
name), the ``path`` and ``chunk`` number, a ``lang`` guess (``"ar"`` or
``"en"``) and its origin (above).  :attr:`IngestReport.kinds` counts the files
of each kind read and skipped.

A ``.jsonl`` line is one document: ``{"text": ..., "doc_id": ..., "metadata":
{...}}`` (``page_content`` and ``id`` are accepted too); long texts are split
the same way, their metadata is kept and ``source`` defaults to the file.

File reading blocks: call these functions from a worker thread in async code.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import msgspec

from zerda_async.apps._split import split_text
from zerda_async.core.index.chunks import SEARCH_HEADING
from zerda_async.readers import (
    READERS,
    Document,
    UnreadableDocument,
    chunk_document,
    chunk_size_for,
    read_text_file,
    reader_for,
)

__all__ = [
    "HTML_SUFFIXES",
    "SECTION_SEPARATOR",
    "SUFFIXES",
    "TEXT_SUFFIXES",
    "Chunk",
    "FileProgress",
    "IngestReport",
    "KindCount",
    "Skipped",
    "detect_language",
    "document_chunks",
    "read_paths",
    "search_heading",
    "split_text",
]

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst"})
"""Plain-text types found in folders: split at paragraphs, headings and sentences."""
HTML_SUFFIXES = frozenset({".html", ".htm"})
"""HTML types found in folders: their main content is extracted first."""
SUFFIXES = frozenset().union(*(r.suffixes for r in READERS)) | TEXT_SUFFIXES | {".jsonl"}
"""File types :func:`read_paths` reads inside folders (lower-case suffixes)."""

SECTION_SEPARATOR = " › "
"""Joins a chunk's section path (heading titles, outermost first) in its metadata."""
_ARABIC = re.compile(r"[\u0600-\u06FF]")
_LETTER = re.compile(r"[^\W\d_]")


class FileProgress(Protocol):
    """What counts the files :func:`read_paths` reads (``apps._progress.Progress`` does)."""

    def advance(self, n: int = 1) -> None:
        """``n`` more files read."""

    def close(self) -> None:
        """Reading is over."""


class Chunk(msgspec.Struct):
    """One chunk of text to index (duck-types as a document: ``doc_id``, ``text``, ``metadata``)."""

    doc_id: str
    text: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class Skipped(msgspec.Struct):
    """A file (or ``file:line``) that was not used, and why."""

    path: str
    reason: str


class KindCount(msgspec.Struct):
    """Files of one kind (``"pdf"``, ``"docx"``, ``"html"``, ...) read and skipped."""

    read: int = 0
    skipped: int = 0


class IngestReport(msgspec.Struct):
    """What :func:`read_paths` found: the chunks, the files read and the files skipped."""

    chunks: list[Chunk] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    skipped: list[Skipped] = msgspec.field(default_factory=list)
    ignored: int = 0
    """Files inside the folders given whose type is not one of :data:`SUFFIXES`."""
    short: int = 0
    """Chunks shorter than the ``min_chars`` given (the filter drops them at query time)."""
    kinds: dict[str, KindCount] = msgspec.field(default_factory=dict)
    """Files read and skipped, by kind (``"pdf"``, ``"docx"``, ``"html"``, ``"markdown"``,
    ``"text"``, ``"jsonl"``)."""

    def describe_kinds(self) -> str:
        """``read 4 files: 1 pdf, 1 docx, 2 text; skipped 1: 1 pdf`` (kinds by name)."""
        read = [(k, c.read) for k, c in sorted(self.kinds.items()) if c.read]
        skipped = [(k, c.skipped) for k, c in sorted(self.kinds.items()) if c.skipped]
        line = f"read {sum(n for _, n in read)} file(s)"
        if read:
            line += ": " + ", ".join(f"{n} {k}" for k, n in read)
        if skipped:
            line += f"; skipped {sum(n for _, n in skipped)}: "
            line += ", ".join(f"{n} {k}" for k, n in skipped)
        return line

    def count(self, kind: str, *, read: bool) -> None:
        """Count one file of ``kind`` as read or skipped."""
        tally = self.kinds.setdefault(kind, KindCount())
        if read:
            tally.read += 1
        else:
            tally.skipped += 1


def detect_language(text: str) -> str:
    """``"ar"`` when at least 30 % of the letters are Arabic, else ``"en"``."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    arabic = sum(1 for ch in letters if _ARABIC.match(ch))
    return "ar" if arabic / len(letters) >= 0.3 else "en"


def _walk(root: Path) -> Iterator[Path]:
    """Files under ``root``, sorted, skipping hidden files and folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def _jsonl_record(record: Any, label: str, line_no: int, max_chars: int) -> list[Chunk]:
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    text = record.get("text") or record.get("page_content")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('no non-empty "text" (or "page_content") string')
    doc_id = record.get("doc_id") or record.get("id") or f"{label}:{line_no}"
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError('"metadata" must be a JSON object')
    metadata = {str(k): v for k, v in metadata.items()}
    metadata.setdefault("source", label)
    metadata.setdefault("lang", detect_language(text))
    pieces = split_text(text, max_chars)
    if len(pieces) == 1:
        return [Chunk(doc_id=str(doc_id), text=pieces[0], metadata=metadata)]
    return [
        Chunk(doc_id=f"{doc_id}#{i}", text=piece, metadata={**metadata, "chunk": i})
        for i, piece in enumerate(pieces)
    ]


def search_heading(title: str, section: tuple[str, ...]) -> str:
    """The document title and section path, for keyword search (the title once)."""
    parts = [title] if title else []
    parts += [s for s in section if not parts or s != parts[0]]
    return SECTION_SEPARATOR.join(parts)


def document_chunks(document: Document, label: str, max_chars: int) -> list[Chunk]:
    """The chunks of ``document`` (read from ``label``) with their origin in the metadata."""
    chunks = []
    for i, piece in enumerate(chunk_document(document, max_chars)):
        metadata: dict[str, Any] = {
            "source": label,
            "path": label,
            "chunk": i,
            "lang": detect_language(piece.text),
            "kind": document.kind,
        }
        if document.title:
            metadata["title"] = document.title
        if piece.page is not None:
            metadata["page"] = piece.page
        if piece.section:
            metadata["section"] = SECTION_SEPARATOR.join(piece.section)
        metadata["doc_start"], metadata["doc_end"] = piece.start, piece.end
        heading = search_heading(document.title, piece.section)
        if heading:
            metadata[SEARCH_HEADING] = heading
        chunks.append(Chunk(doc_id=f"{label}#{i}", text=piece.text, metadata=metadata))
    return chunks


def _read_jsonl(path: Path, label: str, max_chars: int, report: IngestReport) -> None:
    try:
        text = read_text_file(path)
    except UnreadableDocument as exc:
        report.skipped.append(Skipped(str(path), str(exc)))
        report.count("jsonl", read=False)
        return
    report.files.append(str(path))
    report.count("jsonl", read=True)
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            report.chunks.extend(_jsonl_record(json.loads(line), label, line_no, max_chars))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            report.skipped.append(Skipped(f"{path}:{line_no}", str(exc)))


def _read_file(
    path: Path, label: str, max_chars: int, report: IngestReport, long_chars: int = 0
) -> None:
    if path.suffix.lower() == ".jsonl":
        _read_jsonl(path, label, max_chars, report)
        return
    reader = reader_for(path)
    try:
        document = reader.read(path)
    except UnreadableDocument as exc:
        report.skipped.append(Skipped(str(path), str(exc)))
        report.count(reader.kind, read=False)
        return
    report.files.append(str(path))
    report.count(reader.kind, read=True)
    size = chunk_size_for(len(document.text), max_chars, long_chars)
    report.chunks.extend(document_chunks(document, label, size))


def _files_to_read(
    paths: Iterable[str | os.PathLike[str]], all_files: bool
) -> tuple[list[tuple[Path, str]], int]:
    """(path, label) of every file to read, once each, and the count of files ignored."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    ignored = 0

    def add(path: Path, label: str) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            found.append((path, label))

    for given in paths:
        root = Path(given)
        if not root.exists():
            raise FileNotFoundError(f"no such file or directory: {root}")
        if root.is_dir():
            prefix = root.resolve().name
            for path in _walk(root):
                if all_files or path.suffix.lower() in SUFFIXES:
                    add(path, f"{prefix}/{path.relative_to(root).as_posix()}")
                else:
                    ignored += 1
        else:
            add(root, root.name)
    return found, ignored


def read_paths(
    paths: Iterable[str | os.PathLike[str]],
    max_chars: int = 800,
    *,
    all_files: bool = False,
    min_chars: int = 0,
    progress: Callable[[int], FileProgress] | None = None,
    long_chars: int = 0,
) -> IngestReport:
    """Read every file named in ``paths`` and the supported files of every folder (recursively).

    A file named explicitly is read whatever its extension (``.jsonl`` as
    JSON Lines, the kinds of :data:`zerda_async.readers.READERS` by their
    readers, anything else as plain text);
    inside folders only :data:`SUFFIXES` are read, or every file with
    ``all_files=True``.  Raises :class:`FileNotFoundError` when a path does
    not exist.  Chunks shorter than ``min_chars`` are kept and counted in
    :attr:`IngestReport.short`.  ``progress(total)``, when given, is called
    once with the number of files to read and returns what counts them
    (``advance(1)`` after each file, ``close()`` at the end).  ``long_chars``
    (> 0) is the chunk size of a long file (at least
    :data:`~zerda_async.readers.LONG_DOCUMENT` characters of text,
    :func:`~zerda_async.readers.chunk_size_for`); a JSON Lines record is cut at ``max_chars``.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    files, ignored = _files_to_read(paths, all_files)
    report = IngestReport(ignored=ignored)
    counter = None if progress is None else progress(len(files))
    try:
        for path, label in files:
            _read_file(path, label, max_chars, report, long_chars)
            if counter is not None:
                counter.advance(1)
    finally:
        if counter is not None:
            counter.close()
    report.short = sum(1 for chunk in report.chunks if len(chunk.text) < min_chars)
    return report
