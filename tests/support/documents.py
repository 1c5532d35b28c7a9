"""Documents the readers' tests write themselves: PDFs (fpdf2), Word files, web pages.

No binary fixture is checked in: every file is made here, fonts from Debian's
``fonts-dejavu-core`` (Arabic glyphs; ``.ci/run`` installs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _pdf(arabic: bool = False) -> Any:
    from fpdf import FPDF

    pdf = FPDF()
    if arabic or FONT.is_file():
        if not FONT.is_file():
            pytest.skip(f"{FONT} is missing: apt-get install fonts-dejavu-core")
        pdf.add_font("dejavu", fname=str(FONT))
        pdf.set_font("dejavu", size=11)
        pdf.set_text_shaping(True)
    else:
        pdf.set_font("helvetica", size=11)
    return pdf


def write_pdf(
    path: Path,
    pages: Sequence[Sequence[str]],
    *,
    arabic: bool = False,
    title: str = "",
    user_password: str | None = None,
) -> Path:
    """A PDF with one page per item of ``pages``, each a list of paragraphs.

    ``arabic=True`` right-aligns the paragraphs (shaped by HarfBuzz);
    ``user_password`` encrypts the file.
    """
    pdf = _pdf(arabic)
    if title:
        pdf.set_title(title)
    if user_password is not None:
        pdf.set_encryption(owner_password="owner", user_password=user_password)
    for paragraphs in pages:
        pdf.add_page()
        for paragraph in paragraphs:
            pdf.multi_cell(
                0, 7, paragraph, align="R" if arabic else "L", new_x="LMARGIN", new_y="NEXT"
            )
            pdf.ln(4)
    pdf.output(str(path))
    return path


def write_scan(path: Path) -> Path:
    """A PDF page with a drawing and no text layer (what a scanner produces)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_fill_color(120, 120, 120)
    pdf.rect(20, 20, 150, 200, style="F")
    pdf.output(str(path))
    return path


def write_docx(path: Path, blocks: Sequence[tuple[str, Any]], title: str = "") -> Path:
    """A Word file from ``(kind, content)`` blocks.

    Kinds: ``"title"`` (text), ``"h1"``...``"h3"`` (text), ``"p"`` (text),
    ``"table"`` (rows of cell texts).
    """
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for kind, content in blocks:
        if kind == "title":
            document.add_heading(str(content), level=0)
        elif kind.startswith("h"):
            document.add_heading(str(content), level=int(kind[1:]))
        elif kind == "p":
            document.add_paragraph(str(content))
        elif kind == "table":
            rows = list(content)
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    document.save(str(path))
    return path


NAV = ("Home page of the site", "Products and pricing", "Contact our sales team")
FOOTER = "Copyright 2026 Example Travel Ltd. All rights reserved."


def web_page(title: str, sections: Sequence[tuple[str, Sequence[str]]]) -> str:
    """An HTML page: navigation, sidebar and footer around ``sections`` (heading, paragraphs)."""
    nav = "".join(f'<li><a href="/{i}">{text}</a></li>' for i, text in enumerate(NAV))
    body = "".join(
        f"<h2>{heading}</h2>" + "".join(f"<p>{p}</p>" for p in paragraphs)
        for heading, paragraphs in sections
    )
    return (
        f"<!doctype html><html><head><title>{title}</title>"
        "<script>var tracking = 'hidden script text';</script></head><body>"
        f"<header><nav><ul>{nav}</ul></nav></header>"
        '<aside class="sidebar"><h3>Popular</h3><p>Ten cheap flights to Paris</p></aside>'
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        f"<footer><p>{FOOTER}</p></footer></body></html>"
    )
