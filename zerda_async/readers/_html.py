"""HTML pages through ``trafilatura``: the main content only, with its headings.

trafilatura finds a page's main content by its structure and text density and
drops the rest — navigation, headers, footers, sidebars, cookie banners,
"related articles" lists, comments — also on pages that mark them up with
``<div class="menu">`` rather than ``<nav>``.  It was chosen over stripping
tags with ``selectolax`` by measuring both on pages of those kinds
(``bench/bench_readers.py``; figures in ``bench/README.md``).

Its XML output keeps the structure: ``<head rend="hN">`` headings start
sections, paragraphs, list items (one ``- item`` line each), tables (a row
per line, cells separated by `` | ``), quotes and code blocks become blocks.

A page too small for trafilatura to judge (under :data:`SMALL_PAGE` characters of
main content found: there it may keep a bold word and drop its paragraph, or run
the navigation into the text) is read by :func:`stripped_blocks` instead: the
page's text without its ``<nav>``, ``<header>``, ``<footer>``, ``<aside>``,
scripts and styles (``selectolax``).
"""

from __future__ import annotations

import re
from typing import Any

from ._builder import TextBuilder
from ._document import Document, UnreadableDocument, import_extra

__all__ = ["html_document", "stripped_blocks"]

SMALL_PAGE = 250
"""Main content shorter than this (trafilatura's own minimum) is read by tag rules."""
_BLOCKS = frozenset({"p", "quote", "code", "lb"})
_CHROME = "nav, header, footer, aside, script, style, noscript, template, form, iframe, svg"
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_TAGS = _HEADING_TAGS | {"p", "div", "li", "tr", "pre", "blockquote", "section", "td"}


def stripped_blocks(html: str) -> list[tuple[str, int | None]]:
    """The blocks of ``html`` without its page chrome: ``(text, heading level or None)``.

    The content of ``<main>`` (or ``<article>``) when the page has one, else
    of ``<body>``, without the tags named in the module notes; one block per
    innermost block element.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(_LINE_BREAK.sub(" ", html))
    for node in tree.css(_CHROME):
        node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body or tree.root
    if root is None:
        return []
    blocks: list[tuple[str, int | None]] = []
    for node in root.traverse(include_text=False):
        tag = node.tag or ""
        if tag in _BLOCK_TAGS and not any(
            child.tag in _BLOCK_TAGS for child in node.iter(include_text=False)
        ):
            line = " ".join(node.text(separator="").split())
            if line:
                level = int(tag[1]) if tag in _HEADING_TAGS else None
                blocks.append((line, level))
    return blocks


def _text(element: Any) -> str:
    """The element's text with spaces squeezed; a line break (``<lb/>``) is a space."""
    for line_break in element.iter("lb"):
        line_break.text = " "
    return " ".join("".join(element.itertext()).split())


def _list_text(element: Any) -> str:
    return "\n".join(f"- {_text(item)}" for item in element.iter("item") if _text(item))


def _table_text(element: Any) -> str:
    rows = []
    for row in element.iter("row"):
        cells = [_text(cell) for cell in row.iter("cell")]
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _walk(element: Any, out: TextBuilder) -> None:
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == "head":
            rend = str(child.get("rend", "h2"))
            level = int(rend[1]) if len(rend) == 2 and rend[1].isdigit() else 2
            out.heading(_text(child), level)
        elif tag == "list":
            out.paragraph(_list_text(child))
        elif tag == "table":
            out.paragraph(_table_text(child))
        elif tag in _BLOCKS:
            out.paragraph("".join(child.itertext()) if tag == "code" else _text(child))
        elif tag in ("div", "main", "body", "article", "section"):
            _walk(child, out)
        elif tag:
            out.paragraph(_text(child))


def html_document(html: str, source: str) -> Document:
    """The main content of the page ``html`` (read from ``source``) with its headings."""
    trafilatura = import_extra("trafilatura", "HTML", "trafilatura")
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # a signal alarm: not in a thread
    found = trafilatura.bare_extraction(
        html,
        config=config,
        include_comments=False,
        include_tables=True,
        include_formatting=True,
        with_metadata=True,
        favor_recall=True,
    )
    body = getattr(found, "body", None)
    out = TextBuilder()
    if body is not None:
        _walk(body, out)
    blocks = stripped_blocks(html) if len(out.text) < SMALL_PAGE else []
    if blocks:
        out = TextBuilder()
        for block, level in blocks:
            if level is None:
                out.paragraph(block)
            else:
                out.heading(block, level)
    if not out.text.strip():
        raise UnreadableDocument("no text in the HTML page")
    return Document(
        source=source,
        kind="html",
        text=out.text,
        title=str(getattr(found, "title", "") or "").strip() if found is not None else "",
        headings=tuple(out.headings),
    )
