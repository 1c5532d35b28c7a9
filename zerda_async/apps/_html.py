"""The text of an HTML page, for ``zerda index``: the standard library's HTML parser.

:class:`html.parser.HTMLParser` tokenises real-world HTML (unclosed tags,
entities, comments, ``<script>`` bodies) the way the HTML5 tokenizer does for
our needs, so no dependency is added.  What is kept and why:

* text, with whitespace runs collapsed (as a browser renders it), except
  inside ``<pre>``/``<textarea>``, whose line breaks are the content;
* a paragraph break (blank line) around every block element, so the chunker
  packs paragraphs as it does for plain text;
* headings as Markdown headings (``## Title``), so each starts a new chunk;
* list items as ``- item`` lines, ``<br>`` as a line break;
* nothing from ``<script>``, ``<style>``, ``<template>``, ``<noscript>``,
  ``<head>`` (apart from ``<title>``, kept as a top heading) or comments.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "template", "noscript", "svg", "math", "iframe", "object"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header",
        "hr", "html", "main", "nav", "ol", "p", "section", "summary", "table", "tbody",
        "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_PRE = frozenset({"pre", "textarea"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "wbr"})
_SPACES = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


class _TextExtractor(HTMLParser):
    """Collects the text of a page as paragraphs (see the module notes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0
        self._pre_depth = 0
        self._in_head = False
        self._in_title = False

    def _break(self, text: str = "\n\n") -> None:
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip_depth += 1
            return
        if tag == "head":
            self._in_head = True
        elif tag == "title":
            self._in_title = True
            self._break()
            self.parts.append("# ")
        elif tag in _HEADINGS:
            self._break()
            self.parts.append("#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCK:
            self._break()
        elif tag == "li":
            self._break("\n")
            self.parts.append("- ")
        elif tag == "br":
            self._break("\n")
        elif tag in _PRE:
            self._break()
            self._pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag == "head":
            self._in_head = False
        elif tag == "title":
            self._in_title = False
            self._break()
        elif tag in _HEADINGS or tag in _BLOCK:
            self._break()
        elif tag in _PRE:
            self._pre_depth = max(0, self._pre_depth - 1)
            self._break()

    def handle_data(self, data: str) -> None:
        if self._skip_depth or (self._in_head and not self._in_title):
            return
        if self._pre_depth:
            self.parts.append(data)
        else:
            self.parts.append(_SPACES.sub(" ", data))


def html_to_text(html: str) -> str:
    """The readable text of ``html``: paragraphs separated by blank lines, headings as ``#``."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = "\n".join(lines)
    text = _BLANK_LINES.sub("\n\n", text).strip()
    # A heading marker left without text (an empty <h2>) is noise.
    return re.sub(r"^#{1,6}\s*$\n?", "", text, flags=re.MULTILINE).strip()
