"""Wrong and extreme arguments through the async engine.

``run()`` arguments get exactly the facade's documented outcome (the same
exception type and message, now with a note naming the stage), and the
engine keeps serving.  Arguments that only the async engine has
(``timeout``, ``session_id``, runner settings) fail with clear errors.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.corpus import CORPUS

import sync_api
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.errors import failed_stage
from zerda_async.events import DoneEvent, ErrorEvent

from .support import check_result
from .test_properties_sync_api import WRONG_RUN_ARGUMENTS

pytestmark = pytest.mark.anyio


def _config() -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.retriever.use_metadata = True
    return config


@pytest.mark.parametrize(
    "kwargs",
    [kw for _, kw, _ in WRONG_RUN_ARGUMENTS],
    ids=[name for name, _, _ in WRONG_RUN_ARGUMENTS],
)
async def test_wrong_run_arguments_match_the_facade(kwargs: dict[str, Any]) -> None:
    call = {"query": "What is machine learning?", **kwargs}
    reference = sync_api.ContextEngine(_config()).index(CORPUS)
    try:
        expected: Any = reference.run(**call)
    except Exception as exc:
        expected = exc
    async with AsyncContextEngine(_config()) as engine:
        await engine.index(CORPUS)
        try:
            got: Any = await engine.run(**call)
        except Exception as exc:
            got = exc
        if isinstance(expected, Exception):
            assert type(got) is type(expected) and str(got) == str(expected)
            assert failed_stage(got) == failed_stage(expected) is not None
        else:
            check_result(got, CORPUS)
            assert got.context == expected.context
        check_result(await engine.run("What is retrieval augmented generation?"), CORPUS)
        # The stream reports the same outcome as its last event.
        last = [event async for event in engine.stream(**call)][-1]
        if isinstance(expected, Exception):
            assert isinstance(last, ErrorEvent), last
            assert (last.error_type, last.message, last.stage) == (
                type(expected).__name__,
                str(expected),
                failed_stage(expected),
            )
        else:
            assert isinstance(last, DoneEvent), last
            assert last.result.context == expected.context


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_in_flight": 0}, ValueError, "max_in_flight must be at least 1"),
        ({"workers": 0}, ValueError, "workers and thread_limit must be at least 1"),
        ({"thread_limit": -1}, ValueError, "workers and thread_limit must be at least 1"),
        ({"embed_batch_size": 0}, ValueError, "embed_batch_size >= 1"),
        ({"embed_batch_window": -0.1}, ValueError, "embed_batch_window must be >= 0"),
        ({"vector_dtype": "float16"}, ValueError, "vector_dtype must be one of"),
        ({"max_sessions": 0}, ValueError, "max_sessions must be at least 1 or None"),
    ],
)
def test_bad_engine_settings_raise_at_construction(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        AsyncContextEngine(**kwargs)


async def test_bad_timeouts_and_keywords() -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS)
        with pytest.raises(TimeoutError):
            await engine.run("What is BM25?", timeout=-1)
        with pytest.raises(TimeoutError):
            async for _ in engine.stream("What is BM25?", timeout=0):
                pass
        with pytest.raises(TypeError):
            await engine.run("What is BM25?", timeout="5")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="unexpected keyword argument 'budget'"):
            await engine.run_many(["What is BM25?"], budget=10)
        with pytest.raises(TypeError, match="multiple values for keyword argument"):
            await engine.run_multi(["a", "b"], override_budget=10)
        # Unusual but valid session ids are just dictionary keys.
        for session in ("", "📚", "\x00", "x" * 10_000):
            check_result(await engine.run("What is BM25?", session_id=session), CORPUS)
        assert (await engine.run_many([], concurrency=0)) == []
        assert await engine.run_multi([]) == ""
        check_result(await engine.run("What is RAG?"), CORPUS)
