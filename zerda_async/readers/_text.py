"""Plain text files: UTF-8 (a byte-order mark accepted), line endings made ``\\n``."""

from __future__ import annotations

from pathlib import Path

from ._document import UnreadableDocument

__all__ = ["decode_text", "read_text_file"]


def decode_text(data: bytes) -> str:
    """``data`` as UTF-8 text, or :class:`UnreadableDocument` saying why it is not."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(
            f"not UTF-8 text (invalid byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    if "\x00" in text:
        raise UnreadableDocument("binary file (holds NUL bytes)")
    if not text.strip():
        raise UnreadableDocument("empty file")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_file(path: Path) -> str:
    """The text of the file at ``path`` (see :func:`decode_text`)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableDocument(exc.strerror or type(exc).__name__) from None
    return decode_text(data)
