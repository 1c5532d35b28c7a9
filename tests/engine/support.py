"""Shared helpers of the async-engine tests: a corpus, a sync reference, comparisons.

The reference for every async result is ``sync_api.ContextEngine`` running the
same calls one by one.  :class:`SubmissionLog` records the order in which
requests and engine-state barriers actually entered the async engine (the
order its serializability contract is about), and :func:`check_against_sync`
replays that order on a :class:`SyncReference` and compares everything.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Required, TypedDict

from golden.replay import analysis_fields, first_difference, normal_form, run_fields
from support.corpus import CORPUS, QUALITY, QUERIES
from support.embedding import hashed_embedding
from support.engines import wait_until

import sync_api
from zerda_async import (
    AsyncContextEngine,
    ContextEngineConfig,
    ContextResult,
    SourceQuality,
)
from zerda_async.core.retrieval import HybridRetriever, KeywordRetriever
from zerda_async.errors import failed_stage
from zerda_async.pipeline import Request, make_job, run_job

__all__ = [
    "CORPUS",
    "QUALITY",
    "QUERIES",
    "CountingRetriever",
    "IndexCall",
    "SubmissionLog",
    "SyncReference",
    "check_against_sync",
    "config_factory",
    "engine_state",
    "force_inline",
    "force_threads",
    "hashed_embedding",
    "history_fields",
    "outcome_fields",
    "report_fields",
    "result_fields",
    "result_of",
    "wait_until",
]


def config_factory(**overrides: Any) -> Callable[[], ContextEngineConfig]:
    """A factory of fresh configs (``section__field=value`` sets a section field)."""

    def make() -> ContextEngineConfig:
        cfg = ContextEngineConfig()
        for key, value in overrides.items():
            if "__" in key:
                section, field = key.split("__", 1)
                setattr(getattr(cfg, section), field, value)
            else:
                setattr(cfg, key, value)
        return cfg

    return make


class IndexCall(TypedDict, total=False):
    """The keyword arguments of one ``index`` call, replayed on the sync reference."""

    chunks: Required[Sequence[Any]]
    embed_fn: Callable[[Any], Any] | None
    source_quality_map: Mapping[str, SourceQuality] | None


def result_of(request: Request) -> ContextResult:
    """The result a logged request ended with (fails when it raised or never ran)."""
    outcome = request.outcome
    assert isinstance(outcome, ContextResult), f"{request.job.query!r} ended with {outcome!r}"
    return outcome


# -- comparisons ----------------------------------------------------------------------


def result_fields(res: Any) -> dict[str, Any]:
    """Every compared field of a ``ContextResult`` (``pipeline_ms`` is timing).

    The golden cases' fields plus each chunk's vector and keyword scores and
    source quality.
    """
    return {
        **run_fields(res),
        "chunk_vector": [sc.vector_score for sc in res.chunks_used],
        "chunk_keyword": [sc.keyword_score for sc in res.chunks_used],
        "chunk_quality": [sc.source_quality.name for sc in res.chunks_used],
        # Citations are not compared here: tests wrap the composer in delegates,
        # which cite nothing (see tests/engine/test_citations.py).
        "nothing_relevant": res.nothing_relevant,
    }


def outcome_fields(outcome: Any) -> dict[str, Any]:
    """A result's fields, or an exception's type, message and failing stage."""
    if isinstance(outcome, BaseException):
        return {
            "error": type(outcome).__name__,
            "message": str(outcome),
            "stage": failed_stage(outcome),
        }
    return result_fields(outcome)


def history_fields(history: Any) -> Any:
    """The turns of a conversation (timestamps excluded)."""
    if history is None:
        return None
    return {
        "max_turns": history.max_turns,
        "turns": [
            {
                "turn_id": t.turn_id,
                "query": t.query,
                "answer": t.answer,
                "context": t.context_used,
                "analysis": None if t.analysis is None else analysis_fields(t.analysis),
            }
            for t in history.turns
        ],
    }


def report_fields(report: dict[str, Any]) -> dict[str, Any]:
    """A performance report without the timing average."""
    return {k: v for k, v in report.items() if k != "avg_response_ms"}


def assert_same(expected: Any, actual: Any, what: str) -> None:
    """Fail with the first difference (floats compared with the golden tolerance)."""
    difference = first_difference(normal_form(expected), normal_form(actual))
    assert difference is None, f"{what}: {difference}"


def engine_state(engine: Any, sessions: list[str | None]) -> dict[str, Any]:
    """Everything shared that a request can change: report, cache stats, histories."""
    return {
        "report": report_fields(engine.get_performance_report()),
        "histories": {str(sid): history_fields(engine.get_history(sid)) for sid in sessions},
    }


# -- the sync reference -----------------------------------------------------------------


class SyncReference:
    """The sync runner, one request at a time, on a ``sync_api.ContextEngine``'s state.

    The state is switched to the async engine's mode (``private_cache``: one
    conversation per ``session_id``, the cache keyed by the effective query
    and private to the conversation that enriched it, a session's cache hit
    still a turn of it), so each request runs the very stage list the async
    engine runs, with its sessions, through the documented sync runner.
    """

    def __init__(self, make_config: Callable[[], ContextEngineConfig], **components: Any) -> None:
        self.engine = sync_api.ContextEngine(config=make_config(), **components)
        self.state = self.engine._state
        self.state.private_cache = True

    def index(self, chunks: Any, **kwargs: Any) -> None:
        self.engine.index(chunks, **kwargs)

    def run(self, query: Any, *, session_id: str | None = None, **kwargs: Any) -> Any:
        """The result, or the exception the run raised."""
        try:
            return run_job(make_job(query, session_id=session_id, **kwargs), self.state)
        except Exception as exc:
            return exc

    def get_history(self, session_id: str | None = None) -> Any:
        return self.state.history if session_id is None else self.state.sessions.get(session_id)

    def get_performance_report(self) -> dict[str, Any]:
        return self.engine.get_performance_report()

    def clear_cache(self) -> None:
        self.engine.clear_cache()

    def set_answer(self, session_id: str | None, answer: str) -> None:
        history = self.get_history(session_id)
        history.turns[-1].answer = answer


class SubmissionLog:
    """Records what entered the async engine, in the order it entered.

    Wraps the runner's ``submit``, ``try_inline`` and ``barrier``: a
    request's place in the serial order is fixed inside ``submit`` (or
    ``try_inline``, for a request run in its caller's task) with no checkpoint
    before the wrapper appends it, and a barrier is queued synchronously at
    the start of ``barrier``, so the log order is the engine's serial order.
    """

    def __init__(self, engine: AsyncContextEngine) -> None:
        self.entries: list[tuple[str, Any]] = []
        runner = engine._runner
        submit, try_inline, barrier = runner.submit, runner.try_inline, runner.barrier
        cache = engine._state.cache

        async def logged_submit(job: Any, sink: Any = None, on_finish: Any = None) -> Request:
            request = await submit(job, sink, on_finish)
            self.entries.append(("run", request))
            return request

        def logged_try_inline(job: Any) -> Request | None:
            request = try_inline(job)
            if request is not None:
                self.entries.append(("run", request))
            return request

        async def logged_barrier(apply: Callable[[], None]) -> None:
            is_clear = cache is not None and getattr(apply, "__self__", None) is cache
            self.entries.append(("clear_cache" if is_clear else "index", apply))
            await barrier(apply)

        runner.submit = logged_submit  # type: ignore[method-assign,unused-ignore]
        runner.try_inline = logged_try_inline  # type: ignore[method-assign,unused-ignore]
        runner.barrier = logged_barrier  # type: ignore[method-assign,unused-ignore]

    def external(self, name: str, *args: Any) -> None:
        """Record a caller action taken while the engine is idle (e.g. setting an answer)."""
        self.entries.append((name, args))

    @property
    def requests(self) -> list[Request]:
        return [item for kind, item in self.entries if kind == "run"]


def replay_request(reference: SyncReference, request: Request) -> Any:
    """Run ``request``'s query with its options on the reference."""
    opts = request.job.options
    return reference.run(
        request.job.query,
        session_id=opts.session_id,
        metadata_filters=opts.metadata_filters,
        max_chunks=opts.max_chunks,
        override_budget=opts.override_budget,
        use_history=opts.use_history,
        record_turn=opts.record_turn,
    )


def check_against_sync(
    engine: AsyncContextEngine,
    log: SubmissionLog,
    reference: SyncReference,
    *,
    index_calls: Sequence[IndexCall] | None = None,
    sessions: list[str | None] | None = None,
) -> int:
    """Replay ``log`` on ``reference``; compare every outcome and the final state.

    ``index_calls`` are the keyword arguments of the ``index`` calls logged as
    barriers, in order.  Returns the number of compared requests.
    """
    pending_index = list(index_calls or [])
    compared = 0
    for kind, item in log.entries:
        if kind == "run":
            assert item.done.is_set(), "a logged request has no outcome yet"
            expected = replay_request(reference, item)
            assert_same(
                outcome_fields(expected),
                outcome_fields(item.outcome),
                f"request {compared} ({item.job.query!r}, {item.job.options})",
            )
            compared += 1
        elif kind == "clear_cache":
            reference.clear_cache()
        elif kind == "index":
            reference.index(**pending_index.pop(0))
        elif kind == "answer":
            reference.set_answer(*item)
        else:
            raise AssertionError(f"unknown log entry {kind!r}")
    assert not pending_index, "fewer index barriers than index calls"
    session_ids: list[str | None] = list(sessions or [None])
    if sessions is None:
        session_ids += sorted(
            {r.job.options.session_id for r in log.requests if r.job.options.session_id}
        )
    assert_same(engine_state(reference, session_ids), engine_state(engine, session_ids), "state")
    return compared


# -- engine internals the tests steer -----------------------------------------------------


def force_threads(engine: AsyncContextEngine) -> None:
    """Run every speculative stage group in a worker thread."""
    engine._runner.policy.forced = True  # what offload="threads" sets at construction


def force_inline(engine: AsyncContextEngine) -> None:
    """Run every speculative stage group on the event loop."""
    engine._runner.policy.forced = False  # what offload="inline" sets at construction


# -- injected components ------------------------------------------------------------------


def keyword_retriever(make_config: Callable[[], ContextEngineConfig]) -> HybridRetriever:
    """A deterministic keyword-only hybrid retriever over :data:`CORPUS`."""
    config = make_config()
    return HybridRetriever(config=config, keyword_retriever=KeywordRetriever(config, chunks=CORPUS))


class CountingRetriever:
    """Delegates to a retriever and counts its calls per query (thread-safe).

    ``gate`` (a ``threading.Event``), when given, makes the first call wait
    for it: the call runs in a worker thread in those tests.
    """

    def __init__(self, inner: Any, gate: threading.Event | None = None) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.gate = gate
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def retrieve(self, query: str, top_k: int, filters: Any = None) -> Any:
        with self._lock:
            first = self.total == 0
            self.calls[query] += 1
        if first and self.gate is not None:
            assert self.gate.wait(10), "the gate was never opened"
        return self.inner.retrieve(query=query, top_k=top_k, filters=filters)


@contextmanager
def raises_in(stage_component: Any, attribute: str, exc: BaseException) -> Iterator[None]:
    """Temporarily make ``stage_component.attribute`` raise ``exc``."""
    original = getattr(stage_component, attribute)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    setattr(stage_component, attribute, boom)
    try:
        yield
    finally:
        setattr(stage_component, attribute, original)
