"""Read text files (or folders of them) into chunks.

A file named explicitly is read whatever its extension, as long as it is
UTF-8 text (``LICENSE``, ``GPL-3``, ``notes.text``...).  Folders are walked for
the extensions in :data:`SUFFIXES` (plain text, Markdown, reStructuredText,
HTML and JSON Lines); other files in them are counted in
:attr:`IngestReport.ignored`, unless ``all_files=True``.  HTML is reduced to its
text with the standard library's HTML parser (:mod:`._html`).

This is the reading half of ``zerda index``; it does no embedding and no
indexing.  Every file that cannot be used is *reported* — by path, with the
reason — in :attr:`IngestReport.skipped`, never dropped silently:

* unreadable files (permissions, vanished, a directory named like a file);
* files that are not valid UTF-8 (a UTF-8 byte-order mark is accepted), or
  that hold NUL bytes (binary files that happen to decode);
* empty files, and ``.jsonl`` lines that are not a JSON object with a text.

Text and Markdown files are split into chunks of at most ``max_chars``
characters: paragraphs (blank-line separated; a Markdown heading always starts
a new chunk) are packed greedily, and a paragraph longer than the limit is cut
at sentence ends, then at spaces.  Each chunk's metadata holds the ``source``
(``folder/relative/path`` for files found in a folder given, else the file
name), the ``path`` and
``chunk`` number, and a ``lang`` guess (``"ar"`` or ``"en"``).

A ``.jsonl`` line is one document: ``{"text": ..., "doc_id": ..., "metadata":
{...}}`` (``page_content`` and ``id`` are accepted too); long texts are split
the same way, their metadata is kept and ``source`` defaults to the file.

File reading blocks: call these functions from a worker thread in async code.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from zerda_async.apps._html import html_to_text

__all__ = [
    "HTML_SUFFIXES",
    "SUFFIXES",
    "TEXT_SUFFIXES",
    "Chunk",
    "IngestReport",
    "Skipped",
    "detect_language",
    "read_paths",
    "split_text",
]

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst"})
"""Plain-text types found in folders: split at paragraphs, headings and sentences."""
HTML_SUFFIXES = frozenset({".html", ".htm"})
"""HTML types found in folders: their text is extracted first."""
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".jsonl"}
"""File types :func:`read_paths` reads inside folders (lower-case suffixes)."""

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?؟。])\s+")
_HEADING = re.compile(r"^#{1,6}\s")
_ARABIC = re.compile(r"[\u0600-\u06FF]")
_LETTER = re.compile(r"[^\W\d_]")


class Chunk(msgspec.Struct):
    """One chunk of text to index (duck-types as a document: ``doc_id``, ``text``, ``metadata``)."""

    doc_id: str
    text: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class Skipped(msgspec.Struct):
    """A file (or ``file:line``) that was not used, and why."""

    path: str
    reason: str


class IngestReport(msgspec.Struct):
    """What :func:`read_paths` found: the chunks, the files read and the files skipped."""

    chunks: list[Chunk] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    skipped: list[Skipped] = msgspec.field(default_factory=list)
    ignored: int = 0
    """Files inside the folders given whose type is not one of :data:`SUFFIXES`."""
    short: int = 0
    """Chunks shorter than the ``min_chars`` given (the filter drops them at query time)."""


def detect_language(text: str) -> str:
    """``"ar"`` when at least 30 % of the letters are Arabic, else ``"en"``."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    arabic = sum(1 for ch in letters if _ARABIC.match(ch))
    return "ar" if arabic / len(letters) >= 0.3 else "en"


def _hard_split(text: str, max_chars: int) -> Iterator[str]:
    """Cut ``text`` at the last space before ``max_chars`` (mid-word only when there is none)."""
    while len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        yield text[:cut].strip()
        text = text[cut:].strip()
    if text:
        yield text


def _pieces(paragraph: str, max_chars: int) -> Iterator[str]:
    """A paragraph as pieces of at most ``max_chars``: whole sentences, cut at spaces if needed."""
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        for piece in _hard_split(sentence.strip(), max_chars):
            if current and len(current) + 1 + len(piece) <= max_chars:
                current = f"{current} {piece}"
            else:
                if current:
                    yield current
                current = piece
    if current:
        yield current


def split_text(text: str, max_chars: int = 800) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters (see module notes)."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    chunks: list[str] = []
    current = ""
    for raw in _PARAGRAPH_BREAK.split(text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        if _HEADING.match(paragraph) and current:
            chunks.append(current)
            current = ""
        for piece in _pieces(paragraph, max_chars):
            if not current:
                current = piece
            elif len(current) + 2 + len(piece) <= max_chars:
                current = f"{current}\n\n{piece}"
            else:
                chunks.append(current)
                current = piece
    if current:
        chunks.append(current)
    return chunks


def _walk(root: Path) -> Iterator[Path]:
    """Files under ``root``, sorted, skipping hidden files and folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    text = data.decode("utf-8-sig")
    if "\x00" in text:
        raise ValueError("binary file (holds NUL bytes)")
    return text


def _describe(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (invalid byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)


def _text_chunks(label: str, text: str, max_chars: int) -> list[Chunk]:
    return [
        Chunk(
            doc_id=f"{label}#{i}",
            text=piece,
            metadata={
                "source": label,
                "path": label,
                "chunk": i,
                "lang": detect_language(piece),
            },
        )
        for i, piece in enumerate(split_text(text, max_chars))
    ]


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


def _read_file(path: Path, label: str, max_chars: int, report: IngestReport) -> None:
    try:
        text = _read_text(path)
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        report.skipped.append(Skipped(str(path), _describe(exc)))
        return
    raw = text
    if path.suffix.lower() in HTML_SUFFIXES:
        text = html_to_text(text)
    if not text.strip():
        report.skipped.append(
            Skipped(str(path), "empty file" if not raw.strip() else "no text in the HTML")
        )
        return
    report.files.append(str(path))
    if path.suffix.lower() != ".jsonl":
        report.chunks.extend(_text_chunks(label, text, max_chars))
        return
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            report.chunks.extend(_jsonl_record(json.loads(line), label, line_no, max_chars))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            report.skipped.append(Skipped(f"{path}:{line_no}", str(exc)))


def read_paths(
    paths: Iterable[str | os.PathLike[str]],
    max_chars: int = 800,
    *,
    all_files: bool = False,
    min_chars: int = 0,
) -> IngestReport:
    """Read every file named in ``paths`` and the supported files of every folder (recursively).

    A file named explicitly is read whatever its extension (``.jsonl`` as
    JSON Lines, ``.html``/``.htm`` as HTML, anything else as plain text);
    inside folders only :data:`SUFFIXES` are read, or every file with
    ``all_files=True``.  Raises :class:`FileNotFoundError` when a path does
    not exist.  Chunks shorter than ``min_chars`` are kept and counted in
    :attr:`IngestReport.short`.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    report = IngestReport()
    seen: set[Path] = set()

    def read_once(path: Path, label: str) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            _read_file(path, label, max_chars, report)

    for given in paths:
        root = Path(given)
        if not root.exists():
            raise FileNotFoundError(f"no such file or directory: {root}")
        if root.is_dir():
            prefix = root.resolve().name
            for path in _walk(root):
                if all_files or path.suffix.lower() in SUFFIXES:
                    read_once(path, f"{prefix}/{path.relative_to(root).as_posix()}")
                else:
                    report.ignored += 1
        else:
            read_once(root, root.name)
    report.short = sum(1 for chunk in report.chunks if len(chunk.text) < min_chars)
    return report
