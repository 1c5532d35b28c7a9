"""``zerda index`` over a mixed folder of PDF, Word, HTML, Markdown and text, Arabic and English.

One run reads every kind; ``zerda query --json`` cites the PDF's page and the
Word section a question is about; no chunk holds a web page's navigation or
footer; the run says how many files of each kind it read and skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.documents import FOOTER, NAV, web_page, write_docx, write_pdf, write_scan

from zerda_async.apps import read_manifest, read_paths

from .conftest import run_zerda


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed") / "library"
    root.mkdir()
    write_pdf(
        root / "harbour.pdf",
        [
            ["The harbour authority report covers the year 2025."],
            ["The harbour handled 4,200 container ships during the winter season."],
        ],
    )
    write_pdf(
        root / "rabat.pdf",
        [["تقع مدينة الرباط على ساحل المحيط الأطلسي وهي عاصمة المغرب منذ عام 1912."]],
        arabic=True,
    )
    write_docx(
        root / "handbook.docx",
        [
            ("title", "Staff handbook"),
            ("h1", "Leave"),
            ("h2", "Parental leave"),
            ("p", "Parents receive sixteen weeks of paid parental leave."),
            ("h1", "Equipment"),
            ("p", "Laptops are replaced every four years."),
        ],
    )
    (root / "visit.html").write_text(
        web_page("Visiting Fez", [("Old town", ["The tanneries of Fez are centuries old."])]),
        encoding="utf-8",
    )
    (root / "coffee.md").write_text(
        "# Coffee\n\n## Brewing\n\nArabic coffee is brewed with cardamom.\n", encoding="utf-8"
    )
    (root / "nile.txt").write_text("النيل أطول نهر في أفريقيا.\n", encoding="utf-8")
    write_scan(root / "scan.pdf")
    return root


@pytest.fixture(scope="module")
def indexed(mixed: Path) -> tuple[Path, Any]:
    out = mixed.parent / "idx"
    done = run_zerda(["index", str(mixed), "--out", str(out), "--embedder", "none"])
    assert done.returncode == 0, done.stderr
    return out, done


def _cite(index: Path, question: str) -> dict[str, Any]:
    done = run_zerda(["query", str(index), question, "--json"])
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["citations"], result["context"]
    first: dict[str, Any] = result["citations"][0]
    return first


def test_one_run_reads_every_kind_and_says_what_it_skipped(indexed: tuple[Path, Any]) -> None:
    out, done = indexed
    lines = done.stdout.splitlines()
    assert lines[0].startswith("indexed ")
    assert lines[1] == "read 6 file(s): 1 docx, 1 html, 1 markdown, 2 pdf, 1 text; skipped 1: 1 pdf"
    skipped = [line for line in done.stderr.splitlines() if line.startswith("zerda: skipped")]
    assert len(skipped) == 1 and "scan.pdf: no text layer" in skipped[0]
    assert "reading [" not in done.stderr, "no progress line in a pipe"
    assert len(read_manifest(str(out)).files) == 6


def test_a_question_about_page_two_cites_the_pdf_at_page_two(indexed: tuple[Path, Any]) -> None:
    cite = _cite(indexed[0], "How many container ships did the harbour handle in winter?")
    assert cite["source"] == "library/harbour.pdf" and cite["page"] == 2
    assert "section" not in cite  # a PDF without headings: no section


def test_a_question_about_a_word_section_cites_its_title(indexed: tuple[Path, Any]) -> None:
    cite = _cite(indexed[0], "How many weeks of parental leave do parents receive?")
    assert cite["source"] == "library/handbook.docx" and "page" not in cite
    assert cite["section"] == "Leave › Parental leave"
    assert cite["doc_end"] - cite["doc_start"] == cite["end"] - cite["start"]


def test_an_arabic_question_finds_the_arabic_pdf(indexed: tuple[Path, Any]) -> None:
    cite = _cite(indexed[0], "ما هي عاصمة المغرب؟")
    assert cite["source"] == "library/rabat.pdf" and cite["page"] == 1


def test_no_chunk_holds_the_pages_navigation_or_footer(mixed: Path) -> None:
    # The chunks zerda index wrote are those read_paths cuts (the same call).
    chunks = read_paths([mixed], max_chars=400).chunks
    page = [c.text for c in chunks if c.metadata["kind"] == "html"]
    assert page and any("tanneries" in text for text in page)
    for chrome in (*NAV, FOOTER):
        assert not any(chrome in c.text for c in chunks)
