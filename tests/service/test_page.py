"""The page at ``/`` in a real headless chromium, driven over the DevTools protocol."""

from __future__ import annotations

import html
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import numpy as np
import pytest
from PIL import Image

from zerda_async.apps.server import create_app

from .browser import CHROMIUM_FLAGS, chromium_or_skip, chromium_page
from .support import live_server, memory_opener

pytestmark = pytest.mark.anyio

STAGES = ["analysis", "retrieved", "filtered", "ranked", "composed", "guarded", "done"]
OUT = Path(__file__).resolve().parents[2] / "bench" / "out"

QUESTIONS = [
    pytest.param("Where does the Nile flow?", "english", "ltr", id="english"),
    pytest.param("كيف تحضر القهوة العربية؟", "arabic", "rtl", id="arabic"),
]


async def _expected(query: str, template: str) -> dict[str, Any]:
    """The result of ``query`` from a fresh service (a cache miss, like the page's)."""
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/v1/context", json={"query": query, "template": template})
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("query", "template", "direction"), QUESTIONS)
async def test_a_typed_question_streams_its_stages_and_shows_the_context(
    query: str, template: str, direction: str
) -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, chromium_page() as page:
        await page.goto(url + "/")
        # Record each timeline entry as it is added, so the order of arrival is checked.
        await page.evaluate(
            "window.arrived = [];"
            "new MutationObserver(ms => ms.forEach(m => m.addedNodes.forEach("
            "n => arrived.push(n.dataset.event)))).observe("
            "document.getElementById('timeline'), {childList: true}); true"
        )
        await page.type_text("#q", query)
        await page.evaluate(f"document.getElementById('template').value = {json.dumps(template)}")
        await page.evaluate("document.getElementById('run').click()")
        state = await page.wait_for(
            "['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state"
        )
        assert state == "done", await page.evaluate("document.getElementById('status').textContent")
        arrived = await page.evaluate("window.arrived")
        shown = await page.evaluate("document.getElementById('context').textContent")
        section_dir = await page.evaluate(
            "getComputedStyle(document.getElementById('context')).direction"
        )
        sources = await page.evaluate(
            "[...document.querySelectorAll('#citations li')].map(li => li.dataset.docId)"
        )
        marks = await page.evaluate(
            "[...document.querySelectorAll('#context mark')].map(m => m.textContent)"
        )
        address = await page.evaluate("location.search")
        await page.screenshot(OUT / f"page-{template}.png")
    expected = await _expected(query, template)
    assert arrived == STAGES
    assert shown == expected["context"]
    assert section_dir == direction
    # Real results carry citations: the page lists them and highlights each cited span.
    cited = [c["doc_id"] for c in expected["citations"]]
    assert cited
    assert sources == cited
    context = expected["context"]
    assert marks == [context[c["start"] : c["end"]] for c in expected["citations"]]
    assert address == f"?q={quote(query, safe='').replace('%20', '+')}&template={template}"


async def test_citations_are_highlighted_at_their_code_point_offsets() -> None:
    # Offsets count code points: the emoji before the spans is one point but two
    # UTF-16 units, so a page slicing JavaScript strings would be off by one.
    context = "📚 Sources:\n[1] The Nile flows north.\n[2] القهوة العربية تقدم بالهيل.\n"
    spans = [("The Nile flows north.", False), ("القهوة العربية تقدم", True)]
    citations = []
    for i, (text, truncated) in enumerate(spans):
        start = context.index(text)
        citations.append(
            {
                "doc_id": f"d{i}",
                "source": f"s{i}",
                "label": f"[{i + 1}]",
                "start": start,
                "end": start + len(text),
                "truncated": truncated,
            }
        )
    result = {
        "context": context,
        "context_length": len(context),
        "citations": citations,
        "template": "structured",
        "query_analysis": {"language": "en"},
    }
    app = create_app(memory_opener())
    async with live_server(app) as url, chromium_page() as page:
        await page.goto(url + "/")
        await page.evaluate(f"zerdaPage.showResult({json.dumps(result)}); true")
        marks = await page.evaluate(
            "[...document.querySelectorAll('#context mark')].map(m => [m.textContent, m.className])"
        )
        whole = await page.evaluate("document.getElementById('context').textContent")
        blocks = await page.evaluate(
            "[...document.querySelectorAll('#context > .block')].map(b => b.textContent)"
        )
        # A cited span running over a line break keeps its lines in one block.
        spanning = {**result, "context": "head\none two\nthree\nfour\n"}
        spanning["citations"] = [{**citations[0], "start": 9, "end": 18}]
        await page.evaluate(f"zerdaPage.showResult({json.dumps(spanning)}); true")
        joined = await page.evaluate(
            "[...document.querySelectorAll('#context > .block')].map(b => b.textContent)"
        )
    assert marks == [[spans[0][0], "cite"], [spans[1][0], "cite truncated"]]
    assert whole == context
    assert blocks == [line + "\n" for line in context.split("\n")[:-1]]
    assert joined == ["head\n", "one two\nthree\n", "four\n"]


async def test_each_citation_names_its_file_page_and_section() -> None:
    context = "[1] Leave is 30 days.\n[2] Rabat is the capital.\n"
    cited: list[tuple[str, dict[str, Any]]] = [
        ("Leave is 30 days.", {"source": "handbook.docx", "section": "HR › Leave"}),
        ("Rabat is the capital.", {"source": "atlas.pdf", "page": 2}),
    ]
    citations: list[dict[str, Any]] = []
    for i, (text, origin) in enumerate(cited):
        start = context.index(text)
        citations.append(
            {"doc_id": f"d{i}", "label": f"[{i + 1}]", "start": start, "end": start + len(text)}
            | {"truncated": False, "page": None, "section": None}
            | origin
        )
    result = {"context": context, "citations": citations, "query_analysis": {"language": "en"}}
    app = create_app(memory_opener())
    async with live_server(app) as url, chromium_page() as page:
        await page.goto(url + "/")
        await page.evaluate(f"zerdaPage.showResult({json.dumps(result)}); true")
        places = await page.evaluate(
            "[...document.querySelectorAll('#citations li .src')].map(a => a.textContent)"
        )
    assert places == ["handbook.docx, § HR › Leave", "atlas.pdf, p. 2"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("query", "template", "direction"), QUESTIONS)
async def test_a_shared_link_holds_the_context_in_the_dumped_dom(
    query: str, template: str, direction: str
) -> None:
    exe = chromium_or_skip()
    app = create_app(memory_opener())
    expected = await _expected(query, template)
    async with live_server(app) as url:
        link = f"{url}/?q={quote(query)}&template={template}"
        with tempfile.TemporaryDirectory(prefix="zerda-chromium-") as profile:
            done = await anyio.run_process(
                [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", link],
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-500:]
    dom = done.stdout.decode("utf-8")
    pre = re.search(r'<pre id="context"[^>]*>(.*?)</pre>', dom, re.S)
    assert pre is not None
    shown = html.unescape(re.sub(r"<[^>]+>", "", pre.group(1)))
    assert shown == expected["context"]
    assert 'data-state="done"' in dom
    assert f'<section class="result" id="result" dir="{direction}"' in dom
    marks = re.findall(r'<mark class="cite[^"]*"', pre.group(1))
    assert expected["citations"]
    assert len(marks) == len(expected["citations"])
    for chunk in expected["citations"]:
        assert f'data-doc-id="{chunk["doc_id"]}"' in dom


# The first source label of the context and every "---" separator, located by Ranges
# over the rendered text: their boxes, the label's element and its computed bidi.
_BIDI_PROBE = """(() => {
  const box = document.getElementById('context');
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  const rect = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, end);
    const r = range.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top + scrollY, bottom: r.bottom + scrollY};
  };
  const found = {separators: [], label: null};
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data;
    for (const m of text.matchAll(/^---$/gm)) {
      found.separators.push(rect(node, m.index, m.index + 3));
    }
    const at = text.indexOf('[المصدر');
    if (found.label === null && at >= 0) {
      const close = text.indexOf(']', at);
      const style = getComputedStyle(node.parentElement);
      found.label = {
        open: rect(node, at, at + 1), close: rect(node, close, close + 1),
        line: rect(node, at, close + 1),
        direction: style.direction, unicodeBidi: style.unicodeBidi,
      };
    }
  }
  const r = box.getBoundingClientRect();
  found.box = {left: r.left, right: r.right};
  return found;
})()"""


def _bracket_shapes(png: bytes) -> tuple[str, str]:
    """The shapes of the leftmost and rightmost glyphs of a bracketed label's image.

    A bracket's stem is its darkest column: on the left of the glyph for ``[``,
    on the right for ``]``.
    """
    gray = np.asarray(Image.open(io.BytesIO(png)).convert("L")).astype(int)
    columns = (gray < 128).sum(axis=0)
    inked = np.flatnonzero(columns)
    gaps = np.flatnonzero(np.diff(inked) > 1)
    first = inked[: gaps[0] + 1] if len(gaps) else inked
    last = inked[gaps[-1] + 1 :] if len(gaps) else inked

    def shape(glyph: Any) -> str:
        stem = int(glyph[int(np.argmax(columns[glyph]))])
        return "[" if stem - glyph[0] < glyph[-1] - stem else "]"

    return shape(first), shape(last)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("query", "name"),
    [
        pytest.param("كيف تحضر القهوة العربية؟", "arabic-sources", id="arabic-sources"),
        pytest.param("Where does the Nile flow?", "latin-sources", id="latin-sources"),
    ],
)
async def test_arabic_labels_and_separators_read_right_to_left(query: str, name: str) -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, chromium_page() as page:
        await page.goto(f"{url}/?q={quote(query)}&template=arabic")
        await page.wait_for("document.body.dataset.state === 'done'")
        found = await page.evaluate(_BIDI_PROBE)
        label = found["label"]
        line = label["line"]
        png = await page.capture(
            line["left"] - 4,
            line["top"],
            line["right"] - line["left"] + 8,
            line["bottom"] - line["top"],
        )
        await page.screenshot(OUT / f"page-labels-{name}.png")
    box = found["box"]
    # Separators follow the context's direction: in an Arabic context, on the right.
    assert found["separators"]
    for separator in found["separators"]:
        assert separator["left"] > (box["left"] + box["right"]) / 2, (separator, box)
    # The label is its own right-to-left isolate: "[" opens it on the right ...
    assert (label["direction"], label["unicodeBidi"]) == ("rtl", "isolate")
    assert label["open"]["left"] > label["close"]["left"]
    # ... and, on the screenshot, both brackets face the label: "[" left, "]" right.
    assert _bracket_shapes(png) == ("[", "]")
