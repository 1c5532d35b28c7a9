"""Markdown files through ``markdown-it-py``: the text as written, with its heading tree.

The document's text is the file's own (Markdown syntax included), so a chunk
is a slice of the file a reader can find; the parser only says where the
headings are (ATX ``#`` and setext underlined ones, not ``#`` lines inside
code blocks, which a line-by-line look would take for headings).  The first
top-level heading is the title.
"""

from __future__ import annotations

from ._document import Document, Heading, import_extra

__all__ = ["markdown_document"]


def markdown_document(text: str, source: str) -> Document:
    """The Markdown ``text`` (read from ``source``) with its headings."""
    markdown_it = import_extra("markdown_it", "Markdown", "markdown-it-py")
    line_starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(i + 1)
    tokens = markdown_it.MarkdownIt("commonmark").parse(text)
    headings: list[Heading] = []
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        title = " ".join(tokens[i + 1].content.split()) if i + 1 < len(tokens) else ""
        if title:
            headings.append(Heading(line_starts[token.map[0]], int(token.tag[1:]), title))
    title = next((h.title for h in headings if h.level == 1), "")
    return Document(
        source=source, kind="markdown", text=text, title=title, headings=tuple(headings)
    )
