"""Readers measured: HTML main-content extraction, and Arabic PDFs read in order.

HTML (``_html_pages.py``: five pages of common site templates, each with its
content sentences, its chrome strings and its section headings known), for
each extractor:

* the ``trafilatura`` reader ``zerda_async.readers`` uses;
* ``selectolax`` with rules (drop ``nav``/``header``/``footer``/``aside``,
  scripts, forms; keep ``<main>`` or ``<article>`` when there is one);

(``zerda index`` used the standard library's ``html.parser`` before; it kept
every menu and footer — 30 of the 31 chrome strings, measured by this script
before that extractor was removed with the readers' arrival.)

Scores: content sentences kept, chrome strings leaked (navigation, banners,
sidebars, footers, comments), section headings found as headings, and the
median time per page.

Arabic PDFs: ARCD paragraphs (``../shared/quality-data``, real Arabic
Wikipedia text with numbers, Latin names and punctuation) written into PDFs
by ``fpdf2`` with DejaVu Sans and HarfBuzz shaping, right-aligned, one
paragraph after another over several pages; then read back.  Score: the
share of the paragraphs' words recovered in order (the longest common
subsequence of the word lists over the words written), for pypdf's plain
extraction and for the PDF reader.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    command_line,
    describe_load,
    describe_machine,
    format_table,
    quality_data_dir,
    write_summary,
)
from _html_pages import PAGES, Page

from zerda_async.readers import (
    html_document,
    normalise_presentation_forms,
    read_document,
    stripped_blocks,
)

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

Extractor = Callable[[str], tuple[str, list[str]]]


def _squash(text: str) -> str:
    return " ".join(text.split())


def with_trafilatura(html: str) -> tuple[str, list[str]]:
    """The reader's text and heading titles."""
    document = html_document(html, "page.html")
    return document.text, [h.title for h in document.headings]


def with_selectolax(html: str) -> tuple[str, list[str]]:
    """Tag rules over selectolax's tree."""
    blocks = stripped_blocks(html)
    return "\n\n".join(b for b, _ in blocks), [b for b, level in blocks if level is not None]


EXTRACTORS: dict[str, Extractor] = {
    "trafilatura (the reader)": with_trafilatura,
    "selectolax + tag rules": with_selectolax,
}


def score_page(page: Page, extract: Extractor, repeats: int) -> tuple[int, int, int, float]:
    """(content kept, chrome leaked, headings found, median ms) for one page."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        text, heads = extract(page.html)
        times.append((time.perf_counter() - started) * 1000)
    flat = _squash(text)
    kept = sum(_squash(s) in flat for s in page.main)
    leaked = sum(_squash(s) in flat for s in page.chrome)
    found = sum(h in heads for h in page.headings)
    return kept, leaked, found, statistics.median(times)


def html_rows(repeats: int) -> list[list[str]]:
    """One row per extractor: its totals over the pages, and the pages it leaked on."""
    rows = []
    mains = sum(len(p.main) for p in PAGES)
    chrome = sum(len(p.chrome) for p in PAGES)
    heads = sum(len(p.headings) for p in PAGES)
    for name, extract in EXTRACTORS.items():
        kept = leaked = found = 0
        times, leaky = [], []
        for page in PAGES:
            k, lk, f, ms = score_page(page, extract, repeats)
            kept, leaked, found = kept + k, leaked + lk, found + f
            times.append(ms)
            if lk:
                leaky.append(f"{page.name.split(' (')[0]} ({lk})")
        rows.append(
            [
                name,
                f"{kept}/{mains} ({kept / mains:.0%})",
                f"{leaked}/{chrome} ({leaked / chrome:.0%})",
                f"{found}/{heads} ({found / heads:.0%})",
                f"{statistics.fmean(times):.2f} ms",
                ", ".join(leaky) or "—",
            ]
        )
    return rows


# -- Arabic PDFs ------------------------------------------------------------------------


def arabic_paragraphs(data: Path, count: int) -> list[str]:
    """The first ``count`` ARCD paragraphs."""
    with gzip.open(data / "arcd-train.json.gz", "rt", encoding="utf-8") as fh:
        articles = json.load(fh)["data"]
    found = [p["context"] for a in articles for p in a["paragraphs"]]
    return [_squash(p) for p in found[:count]]


def write_pdf(paragraphs: list[str], path: Path) -> None:
    """The paragraphs right-aligned in DejaVu Sans with HarfBuzz shaping (fpdf2)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("dejavu", fname=str(FONT))
    pdf.set_font("dejavu", size=11)
    pdf.set_text_shaping(True)
    pdf.add_page()
    for paragraph in paragraphs:
        pdf.multi_cell(0, 7, paragraph, align="R", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    pdf.output(str(path))


def drawable(words: list[str]) -> list[str]:
    """The words DejaVu Sans has a glyph for every character of (the others are not drawn)."""
    from fontTools.ttLib import TTFont  # type: ignore[import-untyped]

    cmap = TTFont(str(FONT)).getBestCmap()
    return [w for w in words if all(ord(ch) in cmap for ch in w)]


def in_order(written: list[str], read: str) -> float:
    """The share of the ``written`` words found in ``read`` in the same order (LCS)."""
    matcher = difflib.SequenceMatcher(None, written, read.split(), autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / len(written)


def nfc(text: str) -> str:
    """``text`` in Unicode's composed canonical form."""
    return unicodedata.normalize("NFC", text)


def pdf_rows(data: Path, count: int) -> list[list[str]]:
    """pypdf's plain extraction against the reader, over ``count`` ARCD paragraphs."""
    import pypdf

    paragraphs = arabic_paragraphs(data, count)
    # Compared in NFC: the order of several marks on one letter is the
    # canonical one whatever order the glyphs were drawn in.
    every = unicodedata.normalize("NFC", " ".join(paragraphs)).split()
    written = drawable(every)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "arabic.pdf"
        write_pdf(paragraphs, path)
        pages = len(pypdf.PdfReader(path).pages)
        started = time.perf_counter()
        plain = "\n".join(p.extract_text() for p in pypdf.PdfReader(path).pages)
        plain_s = time.perf_counter() - started
        started = time.perf_counter()
        document = read_document(path)
        reader_s = time.perf_counter() - started
    words = f"{len(written):,} words ({len(every) - len(written)} not drawable)"
    return [
        [
            "pypdf extract_text() (+ NFKC of presentation forms)",
            f"{count} paragraphs, {words}, {pages} pages",
            f"{in_order(written, nfc(normalise_presentation_forms(plain))):.1%}",
            f"{plain_s / pages * 1000:.0f} ms",
        ],
        [
            "zerda_async.readers (layout, reading order, ligatures)",
            f"{count} paragraphs, {words}, {pages} pages",
            f"{in_order(written, document.text):.1%}",
            f"{reader_s / pages * 1000:.0f} ms",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=quality_data_dir())
    parser.add_argument("--paragraphs", type=int, default=60, help="ARCD paragraphs in the PDF")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per HTML page")
    args = parser.parse_args()
    text = [
        "# Readers (bench/bench_readers.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        "",
        f"HTML main content, {len(PAGES)} pages ({'; '.join(p.name for p in PAGES)}):",
        "",
        format_table(
            [
                "extractor",
                "content kept",
                "chrome leaked",
                "headings found",
                "per page",
                "leaked on",
            ],
            html_rows(args.repeats),
        ),
        "",
        "Arabic PDF (fpdf2 + DejaVu Sans + HarfBuzz shaping), words recovered in order:",
        "",
        format_table(
            ["extraction", "PDF", "words in order", "per page"],
            pdf_rows(args.data, args.paragraphs),
        ),
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('readers', out)}")


if __name__ == "__main__":
    main()
