"""Every relative link of the documentation resolves, and the README stays a front page.

A link ``[text](path)`` must name an existing file or folder, relative to the
page that holds it; ``path#anchor`` (or ``#anchor`` alone) must also name a
heading of that Markdown page, slugged as GitHub does.  Links inside code
(fenced blocks, inline code) and to other sites are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zerda_async.apps.server import MAX_QUERIES, MAX_QUERY_CHARS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    {
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        ROOT / "RELIABILITY.md",
        ROOT / "bench" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    }
)

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_INDENTED = re.compile(r"^(?: {4}|\t).*$", re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The page without its code: fenced blocks, indented blocks and inline code."""
    text = _FENCE.sub("", text)
    text = _INDENTED.sub("", text)
    return _INLINE_CODE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page`` (repeated headings get ``-1``, ``-2``...)."""
    seen: dict[str, int] = {}
    found = set()
    text = _FENCE.sub("", page.read_text("utf-8"))
    for match in _HEADING.finditer(text):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of ``text`` (held by ``page``) that do not resolve, with why."""
    broken = []
    for match in _LINK.finditer(_prose(text)):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # https:, mailto: ...: another site
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file {resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page, page.read_text("utf-8")) == []


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Two words\n", "utf-8")
    text = (
        "[ok](page.md) [ok](#two-words) [ok](page.md#title) [web](https://example.org/x)\n"
        "[gone](missing.md) [bad anchor](#nowhere) [bad](page.md#three)\n"
        "`[code](not-checked.md)`\n\n```\n[fenced](not-checked.md)\n```\n"
    )
    assert broken_links(page, text) == [
        f"missing.md: no such file {tmp_path / 'missing.md'}",
        "#nowhere: no heading #nowhere in page.md",
        "page.md#three: no heading #three in page.md",
    ]


def test_slugs_follow_github() -> None:
    assert slug("Quick start (sync)") == "quick-start-sync"
    assert slug("Scale-out: PostgreSQL, HNSW and replicas (`bench_scaleout.py`)") == (
        "scale-out-postgresql-hnsw-and-replicas-bench_scaleoutpy"
    )
    assert slug("1. Sync latency") == "1-sync-latency"


def test_the_readme_is_a_front_page() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= 400
    for needed in ("make demo", "make test", ". .venv/bin/activate"):
        assert needed in text
    assert len(list((ROOT / "docs").glob("*.md"))) >= 5  # the index and four pages or more


def test_the_service_page_states_the_limits_the_service_enforces() -> None:
    page = (ROOT / "docs" / "service.md").read_text("utf-8")
    rows = {
        line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| `")
    }
    limit = f"at most {MAX_QUERY_CHARS:,} characters"
    assert limit in rows["`POST /v1/context`"]
    assert limit in rows["`POST /v1/context/multi`"]
    assert f"1–{MAX_QUERIES} queries" in rows["`POST /v1/context/multi`"]
