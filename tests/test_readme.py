"""The Python examples of README.md and of every ``docs/*.md`` page run as written.

Every fenced ``python`` block is one test.  A block whose first line is
``# readme-test: skip (<reason>)`` is skipped with that reason (it needs a
package or a server the tests do not have).  Blocks using ``await`` at top
level run in an event loop.  Each runs in a fresh temporary directory holding
``demo-index`` (the demo corpus saved as an index by ``zerda index``).

README.md's examples get no names at all: a newcomer copies them as they are,
so they must define what they use (``chunks`` included).  The reference pages
say once that their examples assume a few names (a list of ``chunks``, an
embedder, an answer...); those are given here.
"""

from __future__ import annotations

import ast
import inspect
import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from zerda_async import ContextEngineConfig
from zerda_async.apps import DemoChunk, load_demo_corpus
from zerda_async.apps.cli import main as zerda
from zerda_async.embedders import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_SKIP = re.compile(r"#\s*readme-test:\s*skip\s*\((?P<reason>[^)]*)\)")


def _blocks() -> list[Any]:
    params = []
    for page in PAGES:
        text = page.read_text("utf-8")
        name = page.relative_to(ROOT).as_posix()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            code = match.group(1)
            skip = _SKIP.match(code)
            marks = [pytest.mark.skip(reason=skip.group("reason"))] if skip else []
            # Leading newlines make tracebacks name the page's own line numbers.
            params.append(pytest.param(page, "\n" * line + code, id=f"{name}:{line}", marks=marks))
    return params


def _namespace() -> dict[str, Any]:
    """The names the reference pages' examples assume: a corpus, embedders, a model..."""
    hashing = HashingEmbedder()

    async def embed_async(text: Any) -> Any:
        return hashing(text)

    async def embed_batch_async(texts: Any) -> Any:
        return hashing.embed_batch(texts)

    class Model:
        embed = staticmethod(hashing)
        embed_batch = staticmethod(hashing.embed_batch)

    corpus = load_demo_corpus()
    extra = DemoChunk(doc_id="doc-new", text="Dates ripen in late summer.", metadata={})
    return {
        "__name__": "readme_example",
        "chunks": corpus,
        "my_embed": hashing,
        "embed_async": embed_async,
        "embed_batch_async": embed_batch_async,
        "queries": ["What is RAG?", "ما هو التعلم الآلي؟", "How is Arabic coffee served?"],
        "llm_answer": "Retrieval-augmented generation grounds answers in documents.",
        "config": ContextEngineConfig(),
        "model": Model(),
        "bar": lambda done, total: None,
        "new_chunks": [extra],
        "changed_chunks": [corpus[0]],
    }


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the README's console example does: ``zerda index ... --out demo-index``."""
    out = tmp_path_factory.mktemp("demo") / "demo-index"
    corpus = ROOT / "zerda_async" / "apps" / "data" / "demo_corpus.jsonl"
    assert zerda(["index", str(corpus), "--out", str(out)]) == 0
    return out


def test_the_pages_have_examples() -> None:
    names = {param.values[0].name for param in _blocks()}
    assert len(_blocks()) >= 10
    assert "README.md" in names


def test_the_readme_quick_starts_run_on_their_own() -> None:
    # README examples run with no names given (see test_example_runs), so a
    # quick start using an undefined ``chunks`` fails there; both must run.
    readme = [p for p in _blocks() if p.values[0] == README and not p.marks]
    assert len(readme) >= 2


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("page", "code"), _blocks())
def test_example_runs(
    page: Path, code: str, demo_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(demo_index, tmp_path / "demo-index")
    namespace = {"__name__": "readme_example"} if page == README else _namespace()
    # dont_inherit: the example must not run under this module's __future__ imports.
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    compiled = compile(code, str(page), "exec", flags=flags, dont_inherit=True)
    if compiled.co_flags & inspect.CO_COROUTINE:

        async def run() -> None:
            await eval(compiled, namespace)

        anyio.run(run)
    else:
        exec(compiled, namespace)
