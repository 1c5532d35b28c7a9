"""``RunOptions``: the run options as one object, the same run as the keyword arguments."""

from __future__ import annotations

from typing import Any

import pytest
from support.corpus import CORPUS, QUERIES
from support.embedding import hashed_embedding

from zerda_async import AsyncContextEngine, ContextEngineConfig, RunOptions
from zerda_async.events import DoneEvent

pytestmark = pytest.mark.anyio

KEYWORDS: dict[str, Any] = {"max_chunks": 2, "filters": {"lang": "en"}, "template": "english"}


def fresh_engine() -> AsyncContextEngine:
    config = ContextEngineConfig()
    config.cache.enabled = False  # each call computes its own context
    return AsyncContextEngine(config)


async def test_options_give_the_same_runs_as_the_keywords() -> None:
    options = RunOptions(**KEYWORDS)
    query = QUERIES[0]
    async with fresh_engine() as engine:
        await engine.index(CORPUS, embed_fn=hashed_embedding)
        by_keywords = await engine.run(query, **KEYWORDS)
        by_options = await engine.run(query, options=options)
        streamed = [e async for e in engine.stream(query, options=options)]
        many = await engine.run_many(QUERIES[:3], options=options)
        many_keywords = await engine.run_many(QUERIES[:3], **KEYWORDS)
        multi = await engine.run_multi(QUERIES[:2], options=RunOptions(template="english"))
        multi_keywords = await engine.run_multi(QUERIES[:2], template="english")
    assert by_options.context == by_keywords.context and len(by_options.citations) <= 2
    done = streamed[-1]
    assert isinstance(done, DoneEvent) and done.result.context == by_keywords.context
    assert [r.context for r in many] == [r.context for r in many_keywords]
    assert multi == multi_keywords


async def test_options_and_keywords_together_name_the_keywords() -> None:
    async with fresh_engine() as engine:
        await engine.index(CORPUS)
        with pytest.raises(TypeError, match=r"options= and the keyword arguments \['max_chunks'\]"):
            await engine.run("What is BM25?", max_chunks=3, options=RunOptions())
        with pytest.raises(TypeError, match=r"\['session_id'\]"):
            await engine.run_many(["a"], session_id="s", options=RunOptions())
        with pytest.raises(TypeError, match="options must be a RunOptions, got dict"):
            await engine.run("What is BM25?", options={"max_chunks": 3})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run_multi"):
            await engine.run_multi(["a", "b"], options=RunOptions(override_budget=10))
        # A keyword left at its default is no conflict.
        assert (await engine.run("What is BM25?", use_history=True, options=RunOptions())).context
