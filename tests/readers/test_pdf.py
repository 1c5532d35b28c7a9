"""PDF: text per page, the title, and the files that cannot be read (skipped with a reason)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.documents import write_pdf, write_scan

from zerda_async.readers import UnreadableDocument, chunk_document, read_document


def test_each_page_is_found_at_its_offset_and_chunks_name_their_page(tmp_path: Path) -> None:
    pages = [
        ["Annual report of the harbour authority."],
        ["The harbour handled 4,200 ships in 2025.", "Most of them carried containers."],
        ["Dredging of the north basin starts in May."],
    ]
    path = write_pdf(tmp_path / "report.pdf", pages, title="Harbour report 2025")
    document = read_document(path)
    assert document.kind == "pdf" and document.title == "Harbour report 2025"
    assert len(document.pages) == 3 and document.metadata == {"pages": 3}
    for number, paragraphs in enumerate(pages, 1):
        start = document.pages[number - 1]
        assert document.text.startswith(paragraphs[0], start)
        assert document.page_at(start) == number
    chunks = chunk_document(document, 200)
    assert [c.page for c in chunks] == [1, 2, 3]
    assert "4,200 ships" in chunks[1].text
    assert all(c.text == document.text[c.start : c.end] for c in chunks)


def test_a_pdf_with_a_password_is_unreadable_with_the_reason(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "secret.pdf", [["Salaries of 2025."]], user_password="s3cret")
    with pytest.raises(UnreadableDocument, match="encrypted PDF"):
        read_document(path)


def test_a_scan_without_a_text_layer_is_unreadable_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDocument, match=r"no text layer in its 1 page\(s\)"):
        read_document(write_scan(tmp_path / "scan.pdf"))


def test_a_broken_pdf_is_unreadable_with_the_reason(tmp_path: Path) -> None:
    good = write_pdf(tmp_path / "good.pdf", [["Some text."]]).read_bytes()
    (tmp_path / "cut.pdf").write_bytes(good[: len(good) // 3])
    (tmp_path / "fake.pdf").write_text("this is not a PDF at all")
    for name in ("cut.pdf", "fake.pdf"):
        with pytest.raises(UnreadableDocument, match="PDF"):
            read_document(tmp_path / name)
