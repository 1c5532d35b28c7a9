"""Word, HTML and Markdown: their text, their heading tree, and what is left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.documents import FOOTER, NAV, web_page, write_docx

from zerda_async.readers import (
    READERS,
    Reader,
    UnreadableDocument,
    chunk_document,
    read_document,
    reader_for,
)


def test_docx_headings_paragraphs_and_tables_in_document_order(tmp_path: Path) -> None:
    path = write_docx(
        tmp_path / "handbook.docx",
        [
            ("title", "Staff handbook"),
            ("p", "This handbook applies to every employee."),
            ("h1", "Leave"),
            ("h2", "Annual leave"),
            ("p", "Every employee has 30 days of annual leave."),
            ("table", [["Years of service", "Extra days"], ["5", "2"], ["10", "4"]]),
            ("h2", "Sick leave"),
            ("p", "Report sick leave to your manager before 10 am."),
            ("h1", "Equipment"),
            ("p", "Laptops are replaced every four years."),
        ],
    )
    document = read_document(path)
    assert document.kind == "docx" and document.title == "Staff handbook"
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Leave"),
        (2, "Annual leave"),
        (2, "Sick leave"),
        (1, "Equipment"),
    ]
    assert "Years of service | Extra days\n5 | 2\n10 | 4" in document.text
    sections = {c.text.splitlines()[-1]: c.section for c in chunk_document(document, 400)}
    assert sections["10 | 4"] == ("Leave", "Annual leave")
    assert sections["Report sick leave to your manager before 10 am."] == ("Leave", "Sick leave")
    assert sections["Laptops are replaced every four years."] == ("Equipment",)


def test_a_corrupt_docx_is_unreadable_with_the_reason(tmp_path: Path) -> None:
    good = write_docx(tmp_path / "good.docx", [("p", "text")]).read_bytes()
    (tmp_path / "cut.docx").write_bytes(good[: len(good) // 2])
    (tmp_path / "fake.docx").write_text("not a zip archive")
    for name in ("cut.docx", "fake.docx"):
        with pytest.raises(UnreadableDocument, match=r"not a readable Word \.docx file"):
            read_document(tmp_path / name)


def test_html_keeps_the_main_content_and_its_headings_only(tmp_path: Path) -> None:
    page = web_page(
        "Visiting Rabat",
        [
            ("Getting there", ["Rabat-Salé airport is eight kilometres from the centre."]),
            ("Where to stay", ["The medina has small riads with courtyards."]),
        ],
    )
    path = tmp_path / "rabat.html"
    path.write_text(page, encoding="utf-8")
    document = read_document(path)
    assert document.kind == "html" and document.title == "Visiting Rabat"
    for chrome in (*NAV, FOOTER, "Ten cheap flights to Paris", "hidden script text"):
        assert chrome not in document.text
    assert [h.title for h in document.headings if h.level == 2] == [
        "Getting there",
        "Where to stay",
    ]
    chunks = chunk_document(document, 400)
    riads = next(c for c in chunks if "riads" in c.text)
    assert riads.section[-1] == "Where to stay"


def test_a_tiny_page_falls_back_to_its_text(tmp_path: Path) -> None:
    path = tmp_path / "tiny.htm"
    path.write_text("<p>hello <b>world</b><br>again</p>", encoding="utf-8")
    assert read_document(path).text == "hello world again"


def test_markdown_keeps_its_source_text_and_heading_tree(tmp_path: Path) -> None:
    text = (
        "# Guide\n\nIntro.\n\n## Install\n\n```sh\n# not a heading\npip install x\n```\n\n"
        "Setext title\n------------\n\nBody.\n"
    )
    path = tmp_path / "guide.md"
    path.write_text(text, encoding="utf-8")
    document = read_document(path)
    assert document.text == text and document.title == "Guide"
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Guide"),
        (2, "Install"),
        (2, "Setext title"),
    ]
    assert document.text.startswith("## Install", document.headings[1].start)


def test_every_reader_keeps_the_protocol_and_other_suffixes_read_as_text(tmp_path: Path) -> None:
    assert all(isinstance(r, Reader) for r in READERS)
    assert {r.kind for r in READERS} == {"pdf", "docx", "html", "markdown", "text"}
    assert reader_for("LICENSE").kind == "text" and reader_for("A.PDF").kind == "pdf"
    (tmp_path / "notes.log").write_text("line one\r\nline two\r\n", encoding="utf-8")
    assert read_document(tmp_path / "notes.log").text == "line one\nline two\n"
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_document(tmp_path / "missing.pdf")
