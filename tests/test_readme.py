"""The README's Python examples run as written (with the few names they assume defined).

Every fenced ``python`` block of README.md is one test.  A block whose first
line is ``# readme-test: skip (<reason>)`` is skipped with that reason (it
needs a package or a server the tests do not have).  Blocks using ``await``
at top level run in an event loop.  Each runs in a fresh temporary directory
holding ``demo-index`` (the demo corpus saved as an index).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from zerda_async import ContextEngineConfig
from zerda_async.apps._demo import DemoChunk, load_demo_corpus
from zerda_async.apps.cli import main as zerda
from zerda_async.embedders import HashingEmbedder

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_SKIP = re.compile(r"#\s*readme-test:\s*skip\s*\((?P<reason>[^)]*)\)")


def _blocks() -> list[Any]:
    text = README.read_text("utf-8")
    params = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        code = match.group(1)
        skip = _SKIP.match(code)
        marks = [pytest.mark.skip(reason=skip.group("reason"))] if skip else []
        # Leading newlines make tracebacks name the README's own line numbers.
        params.append(pytest.param("\n" * line + code, id=f"README.md:{line}", marks=marks))
    return params


def _namespace() -> dict[str, Any]:
    """The names the examples assume: a corpus, embedders, a model, a progress bar."""
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


def test_the_readme_has_examples() -> None:
    assert len(_blocks()) >= 3


@pytest.mark.timeout(120)
@pytest.mark.parametrize("code", _blocks())
def test_readme_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # What the README's console example does: zerda index ... --out demo-index.
    corpus = Path(__file__).resolve().parents[1] / "zerda_async" / "apps" / "data"
    assert zerda(["index", str(corpus / "demo_corpus.jsonl"), "--out", "demo-index"]) == 0
    namespace = _namespace()
    compiled = compile(code, str(README), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if compiled.co_flags & inspect.CO_COROUTINE:

        async def run() -> None:
            await eval(compiled, namespace)

        anyio.run(run)
    else:
        exec(compiled, namespace)
