"""Turns a golden case into calls on ``sync_api`` and its outcome into normal form.

The case format is described in ``README.md`` next to ``cases.jsonl``.  Engine
steps are replayed through an "engine driver" so the same cases can be
replayed through the async engine as well (see ``tests/engine``).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
from support.chunks import Chunk, bare_chunk
from support.embedding import hashed_embedding

import sync_api
from sync_api import legacy_compat, pipeline

CASES_FILE = Path(__file__).with_name("cases.jsonl")


def load_cases() -> list[dict[str, Any]]:
    """Every case of ``cases.jsonl``, in file order."""
    with CASES_FILE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class SplitTokenizer:
    """Whitespace tokenizer for ``make_token_counter``."""

    def encode(self, text: str) -> list[str]:
        return text.split()


_CHUNK_FIELDS = {"doc_id", "text", "metadata", "source", "timestamp"}


def case_chunk(attrs: dict[str, Any]) -> Any:
    """The case's chunk: a :class:`Chunk` when it has the usual fields, else an
    object carrying exactly the attributes the case names (a missing ``doc_id``,
    ``page_content`` instead of ``text``)."""
    if {"doc_id", "text"} <= attrs.keys() <= _CHUNK_FIELDS:
        return Chunk(**attrs)
    return bare_chunk(**attrs)


def config_from(spec: dict[str, Any] | None) -> sync_api.ContextEngineConfig:
    cfg = sync_api.ContextEngineConfig()
    for key, value in (spec or {}).items():
        if isinstance(value, dict):
            section = getattr(cfg, key)
            for field, field_value in value.items():
                setattr(section, field, field_value)
        else:
            setattr(cfg, key, value)
    return cfg


def counter_from(name: str | None) -> Callable[[str], int] | None:
    table: dict[str, Callable[[str], int]] = {
        "char_counter": sync_api.char_counter,
        "pipeline_char_counter": pipeline.char_counter,
        "len": len,
        "ws_tokens": sync_api.make_token_counter(SplitTokenizer()),
    }
    return None if name in (None, "default") else table[name]


def scored_from(spec: dict[str, Any]) -> sync_api.ScoredChunk:
    fields = (
        "vector_score",
        "keyword_score",
        "metadata_score",
        "recency_score",
        "composite_score",
        "retrieval_rank",
    )
    kwargs: dict[str, Any] = {k: spec[k] for k in fields if k in spec}
    if "source_quality" in spec:
        kwargs["source_quality"] = sync_api.SourceQuality[spec["source_quality"]]
    return sync_api.ScoredChunk(chunk=case_chunk(spec["chunk"]), **kwargs)


def analysis_of(cfg: Any, query: Any, keywords: list[str] | None = None) -> Any:
    analysis = sync_api.RuleBasedQueryAnalyzer(cfg).analyze(query)
    if keywords is not None:
        analysis.keywords = list(keywords)
    return analysis


def analysis_fields(a: Any) -> dict[str, Any]:
    return {
        "original_query": a.original_query,
        "normalized": a.normalized,
        "intent": a.intent.value,
        "complexity": a.complexity.value,
        "keywords": list(a.keywords),
        "entities": list(a.entities),
        "is_arabic": a.is_arabic,
        "language": a.language,
        "question_type": a.question_type,
        "context_budget": a.context_budget,
    }


def error_of(exc: BaseException) -> dict[str, Any]:
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


def normal_form(value: Any) -> Any:
    """Tuples to lists, enums to values, floats rounded to 9 decimals."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return repr(value) if math.isnan(value) or math.isinf(value) else round(value, 9)
    if isinstance(value, np.generic):
        return normal_form(value.item())
    if isinstance(value, dict):
        return {str(k): normal_form(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normal_form(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "name"):
        return normal_form(value.value)
    return repr(value)


# -- one replay function per kind ---------------------------------------------


def replay_config(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    values = {}
    for path in inp["read"]:
        obj: Any = cfg
        for part in path.split("."):
            obj = getattr(obj, part)
        values[path] = obj
    return {"values": values}


def replay_counter(inp: dict[str, Any]) -> Any:
    counter = counter_from(inp["counter"]) or sync_api.char_counter
    return {"value": counter(inp["text"])}


def replay_analyze(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    return {"analysis": analysis_fields(sync_api.RuleBasedQueryAnalyzer(cfg).analyze(inp["query"]))}


def replay_scored_chunk(inp: dict[str, Any]) -> Any:
    try:
        sc = scored_from(inp)
    except Exception as exc:
        return error_of(exc)
    first, second = tuple(sc)
    return {
        "text": sc.text,
        "doc_id": sc.doc_id,
        "metadata": sc.metadata,
        "source": sc.source,
        "content_hash": sc.content_hash,
        "char_count": sc.char_count,
        "to_dict": sc.to_dict(),
        "iter_is_chunk": first is sc.chunk,
        "iter_score": second,
    }


def replay_chunk_filter(inp: dict[str, Any]) -> Any:
    flt = sync_api.ChunkFilter(config_from(inp.get("config")))
    chunks = [scored_from(c) for c in inp["chunks"]]
    mode = inp.get("mode", "filter")
    if mode == "filter":
        kept = flt.filter(chunks)
    else:
        vectors: list[Any] = []
        for spec, emb in zip(inp["chunks"], inp["embeddings"], strict=False):
            if emb == "embed":
                text = spec["chunk"].get("text") or spec["chunk"].get("page_content") or ""
                vectors.append(hashed_embedding(text))
            else:
                vectors.append(None if emb is None else np.asarray(emb, dtype=np.float64))
        if mode == "dedup_semantic":
            kept = flt._dedup_semantic(chunks, vectors)
        else:
            kept = flt.filter_with_embeddings(chunks, vectors)
    return {"ids": [sc.doc_id for sc in kept]}


def replay_ranker(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    analysis = analysis_of(cfg, inp["query"], inp.get("keywords"))
    chunks = [scored_from(c) for c in inp["chunks"]]
    ranked = sync_api.CompositeRanker(cfg).rank(chunks, analysis, max_n=inp.get("max_n"))
    return {
        "ids": [sc.doc_id for sc in ranked],
        "composite": [sc.composite_score for sc in ranked],
        "all_composite_after": [sc.composite_score for sc in chunks],
    }


def replay_composer(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    counter = counter_from(inp.get("counter"))
    composer = (
        sync_api.SmartContextComposer(cfg)
        if counter is None
        else sync_api.SmartContextComposer(cfg, counter)
    )
    analysis = analysis_of(cfg, inp.get("query", "test query"))
    context = composer.compose([scored_from(c) for c in inp["chunks"]], analysis, inp["budget"])
    out: dict[str, Any] = {"context": context, "stats": composer.get_stats(context)}
    if inp.get("extra_stats"):
        out["extra_stats"] = [composer.get_stats(s) for s in inp["extra_stats"]]
    return out


def replay_guard(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    guard = (
        sync_api.ContextGuard(cfg, embed_fn=hashed_embedding)
        if inp.get("embed")
        else sync_api.ContextGuard(cfg)
    )
    passed, warnings = guard.validate(inp["context"], inp["query"], analysis_of(cfg, inp["query"]))
    return {"passed": passed, "warnings": list(warnings)}


def replay_cache(inp: dict[str, Any]) -> Any:
    cache = sync_api.ContextCache(max_size=inp["max_size"], ttl_seconds=inp["ttl"])
    results: list[Any] = []
    for op in inp["ops"]:
        kind = op["op"]
        try:
            if kind == "put":
                cache.put(op["key"], op["value"])
                results.append(None)
            elif kind == "get":
                results.append({"get": cache.get(op["key"])})
            elif kind == "clear":
                cache.clear()
                results.append(None)
            elif kind == "stats":
                results.append({"stats": dict(cache.stats)})
            elif kind == "make_key":
                results.append({"key": cache.make_key(op["query"], op.get("filters"))})
            else:
                raise ValueError(f"unknown cache op {kind!r}")
        except Exception as exc:
            if kind == "put" and op.get("expect_error"):
                results.append(error_of(exc))
            else:
                raise
    return {"results": results}


def replay_adaptive(inp: dict[str, Any]) -> Any:
    cfg = config_from(inp.get("config"))
    analyzer = sync_api.RuleBasedQueryAnalyzer(cfg)
    learner = sync_api.AdaptiveLearningSystem(cfg)
    results: list[Any] = []
    for op in inp["ops"]:
        kind = op["op"]
        if kind == "record":
            learner.record(
                query=op["query"],
                analysis=analyzer.analyze(op["query"]),
                context_length=op["context_length"],
                chunk_count=op["chunk_count"],
                response_ms=op["response_ms"],
                guard_passed=op["guard_passed"],
            )
            results.append(None)
        elif kind == "record_many":
            every = op.get("fail_every", 10**9)
            for i in range(op["n"]):
                learner.record(
                    query=op["query"],
                    analysis=analyzer.analyze(op["query"]),
                    context_length=op["context_length"] + i * op.get("step", 0),
                    chunk_count=op["chunk_count"],
                    response_ms=op["response_ms"],
                    guard_passed=(i % every) != (every - 1),
                )
            results.append(None)
        elif kind == "suggest":
            analysis = analyzer.analyze(op["query"])
            if "base_budget" in op:
                analysis.context_budget = op["base_budget"]
            results.append({"budget": learner.suggest_budget(analysis)})
        elif kind == "report":
            results.append({"report": dict(learner.get_performance_report())})
        else:
            raise ValueError(f"unknown adaptive op {kind!r}")
    return {"results": results}


def replay_budget(inp: dict[str, Any]) -> Any:
    strategy = inp["strategy"]
    try:
        if strategy == "equal":
            budgets = sync_api.EqualBudgetAllocation().allocate(inp["total"], inp["n"])
        elif strategy == "weighted":
            budgets = sync_api.WeightedBudgetAllocation(inp["weights"]).allocate(
                inp["total"], inp["n"]
            )
        elif strategy == "complexity":
            analyzer = sync_api.RuleBasedQueryAnalyzer(config_from(inp.get("config")))
            allocator = sync_api.ComplexityBasedAllocation()
            if inp.get("queries") is None:
                budgets = allocator.allocate(inp["total"], inp["n"])
            else:
                analyses = [analyzer.analyze(q) for q in inp["queries"]]
                budgets = allocator.allocate(inp["total"], inp["n"], analyses)
        else:
            raise ValueError(f"unknown strategy {strategy!r}")
    except (ValueError, IndexError, ZeroDivisionError) as exc:
        return error_of(exc)
    return {"budgets": list(budgets)}


def _pairs(items: list[Any]) -> list[tuple[Any, Any]]:
    return [(case_chunk(c), s) for c, s in items]


def _pairs_out(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    return {"ids": [getattr(c, "doc_id", None) for c, _ in pairs], "scores": [s for _, s in pairs]}


def replay_legacy(inp: dict[str, Any]) -> Any:
    op = inp["op"]
    try:
        if op == "validate_chunk":
            legacy_compat.validate_chunk(case_chunk(inp["chunk"]))
            return {"returned": None}
        if op == "prefix_dedup":
            dedup = (
                legacy_compat.PrefixDeduplication()
                if inp.get("prefix_length") is None
                else legacy_compat.PrefixDeduplication(inp["prefix_length"])
            )
            return _pairs_out(dedup.deduplicate(_pairs(inp["items"])))
        if op == "hash_dedup":
            return _pairs_out(legacy_compat.HashDeduplication().deduplicate(_pairs(inp["items"])))
        if op == "score_ranking":
            ranking = legacy_compat.ScoreRanking()
            return _pairs_out(ranking.rank(_pairs(inp["items"]), inp.get("max_chunks")))
        if op == "greedy":
            counter = counter_from(inp.get("counter")) or sync_api.char_counter
            compressor = legacy_compat.GreedyCompression()
            return {
                "result": compressor.compress(
                    inp["context"], inp["target"], counter, inp["separator"]
                ),
                "min_content_length": compressor.MIN_CONTENT_LENGTH,
            }
    except (TypeError, ValueError) as exc:
        return error_of(exc)
    raise ValueError(f"unknown legacy op {op!r}")


def run_fields(res: Any) -> dict[str, Any]:
    """The compared fields of a ``ContextResult``."""
    return {
        "context": res.context,
        "guard_passed": res.guard_passed,
        "guard_warnings": list(res.guard_warnings),
        "chunk_ids": [sc.doc_id for sc in res.chunks_used],
        "chunk_composite": [sc.composite_score for sc in res.chunks_used],
        "total_retrieved": res.total_retrieved,
        "total_after_filter": res.total_after_filter,
        "total_after_rank": res.total_after_rank,
        "total_included": res.total_included,
        "context_length": res.context_length,
        "metadata": dict(res.metadata),
        "analysis": analysis_fields(res.query_analysis),
    }


class EngineDriver(Protocol):
    """What an engine must offer to replay engine steps (sync facade or async adapter).

    An async adapter may implement any method as a coroutine function: see
    :func:`drive_engine_steps_async`.
    """

    def index(self, chunks: list[Any], embed_fn: Any, source_quality_map: Any) -> Any: ...
    def run(self, query: Any, **kwargs: Any) -> Any: ...
    def run_multi(self, queries: Any, **kwargs: Any) -> Any: ...
    def get_history(self) -> Any: ...
    def get_performance_report(self) -> dict[str, Any]: ...
    def clear_cache(self) -> Any: ...
    def legacy(self) -> Any: ...


class SyncDriver:
    """Replays engine steps on ``sync_api.ContextEngine``."""

    def __init__(self, config: Any, counter: Any) -> None:
        self.engine = (
            sync_api.ContextEngine(config=config)
            if counter is None
            else sync_api.ContextEngine(config=config, length_counter=counter)
        )

    def index(self, chunks: list[Any], embed_fn: Any, source_quality_map: Any) -> Any:
        returned = self.engine.index(
            chunks, embed_fn=embed_fn, source_quality_map=source_quality_map
        )
        return returned is self.engine

    def run(self, query: Any, **kwargs: Any) -> Any:
        return self.engine.run(query, **kwargs)

    def run_multi(self, queries: Any, **kwargs: Any) -> str:
        return self.engine.run_multi(queries, **kwargs)

    def get_history(self) -> Any:
        return self.engine.get_history()

    def get_performance_report(self) -> dict[str, Any]:
        return self.engine.get_performance_report()

    def clear_cache(self) -> None:
        self.engine.clear_cache()

    def legacy(self) -> Any:
        return self.engine


DriverFactory = Callable[[Any, Any], EngineDriver]


class Call(NamedTuple):
    """One driver call requested by :func:`engine_steps`; its return value is sent back."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


EngineSteps = Generator[Call, Any, list[Any]]
"""Yields driver calls, receives their results, returns the step outcomes."""


def replay_engine(inp: dict[str, Any], make_driver: DriverFactory = SyncDriver) -> Any:
    return {"steps": drive_engine_steps(make_driver(*engine_setup(inp)), inp["steps"])}


def engine_setup(inp: dict[str, Any]) -> tuple[Any, Any]:
    """The ``(config, length_counter)`` an engine case builds its engine with."""
    spec = inp.get("engine", {})
    return config_from(spec.get("config")), counter_from(spec.get("length_counter"))


def drive_engine_steps(driver: EngineDriver, steps: list[dict[str, Any]]) -> list[Any]:
    """Replay ``steps`` on a driver whose methods are plain functions."""
    protocol = engine_steps(steps)
    try:
        call = next(protocol)
        while True:
            call = protocol.send(getattr(driver, call.method)(*call.args, **call.kwargs))
    except StopIteration as stop:
        outcomes: list[Any] = stop.value
        return outcomes


async def drive_engine_steps_async(driver: Any, steps: list[dict[str, Any]]) -> list[Any]:
    """Replay ``steps`` on a driver whose methods may be coroutine functions."""
    protocol = engine_steps(steps)
    try:
        call = next(protocol)
        while True:
            returned = getattr(driver, call.method)(*call.args, **call.kwargs)
            if inspect.isawaitable(returned):
                returned = await returned
            call = protocol.send(returned)
    except StopIteration as stop:
        outcomes: list[Any] = stop.value
        return outcomes


def engine_steps(steps: list[dict[str, Any]]) -> EngineSteps:
    """The engine-step protocol, independent of how the driver is called (sans I/O)."""
    outcomes: list[Any] = []
    for step in steps:
        op = step["op"]
        if op == "index":
            quality = {
                k: sync_api.SourceQuality[v]
                for k, v in (step.get("source_quality_map") or {}).items()
            }
            returned = yield Call(
                "index",
                (
                    [case_chunk(c) for c in step["chunks"]],
                    hashed_embedding if step.get("embed") else None,
                    quality or None,
                ),
                {},
            )
            outcomes.append({"returned_self": returned})
        elif op == "run":
            names = ("metadata_filters", "max_chunks", "override_budget", "use_history")
            kwargs = {k: step[k] for k in (*names, "record_turn") if k in step}
            outcomes.append(run_fields((yield Call("run", (step["query"],), kwargs))))
        elif op == "run_multi":
            kwargs = dict(step.get("kwargs") or {})
            kwargs.update({k: step[k] for k in ("global_budget", "use_weighted") if k in step})
            outcomes.append({"combined": (yield Call("run_multi", (step["queries"],), kwargs))})
        elif op == "set_last_answer":
            history = yield Call("get_history", (), {})
            if history is not None and history.turns:
                history.turns[-1].answer = step["answer"]
                outcomes.append({"set": True})
            else:
                outcomes.append({"set": False})
        elif op == "history":
            history = yield Call("get_history", (), {})
            outcomes.append(
                None
                if history is None
                else {
                    "queries": [t.query for t in history.turns],
                    "answers": [t.answer for t in history.turns],
                    "contexts": [t.context_used for t in history.turns],
                }
            )
        elif op == "perf_report":
            report = dict((yield Call("get_performance_report", (), {})))
            report.pop("avg_response_ms", None)
            outcomes.append({"report": report})
        elif op == "clear_cache":
            yield Call("clear_cache", (), {})
            outcomes.append(None)
        elif op in ("build", "build_multi", "compress", "context_stats"):
            outcomes.append(_legacy_step((yield Call("legacy", (), {})), step))
        else:
            raise ValueError(f"unknown engine op {op!r}")
    return outcomes


def _legacy_step(legacy: Any, step: dict[str, Any]) -> Any:
    op = step["op"]
    if op == "build":
        items = _pairs(step["chunks"])
        kwargs = {k: step[k] for k in ("max_chunks", "max_length") if k in step}
        return {"context": legacy.build(step["query"], items, **kwargs)}
    if op == "build_multi":
        groups = [_pairs(group) for group in step["all_chunks"]]
        return {"context": legacy.build_multi_query_context(step["queries"], groups)}
    if op == "compress":
        return {"context": legacy.compress_context(step["context"], step["target"])}
    return {"stats": dict(legacy.get_context_stats(step["context"]))}


REPLAYERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "config": replay_config,
    "counter": replay_counter,
    "analyze": replay_analyze,
    "scored_chunk": replay_scored_chunk,
    "chunk_filter": replay_chunk_filter,
    "ranker": replay_ranker,
    "composer": replay_composer,
    "guard": replay_guard,
    "cache": replay_cache,
    "adaptive": replay_adaptive,
    "budget": replay_budget,
    "legacy": replay_legacy,
    "engine": replay_engine,
}


def strip_messages(value: Any) -> Any:
    """Drop exception messages (for cases whose message is CPython wording)."""
    if isinstance(value, dict):
        return {
            k: strip_messages(v)
            for k, v in value.items()
            if not (k == "message" and "type" in value)
        }
    if isinstance(value, list):
        return [strip_messages(v) for v in value]
    return value


def first_difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Where ``actual`` first differs from ``expected`` (floats within tolerance)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
        return None if same else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        if isinstance(expected, int) and isinstance(actual, int):
            return None if expected == actual else f"{path}: expected {expected}, got {actual}"
        tolerance = 1.01e-6 if "composite" in path else 1e-9
        close = abs(float(expected) - float(actual)) <= tolerance
        return None if close else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            if key not in actual:
                return f"{path}.{key}: missing"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        extra = [k for k in actual if k not in expected]
        return f"{path}: unexpected keys {extra}" if extra else None
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: expected length {len(expected)}, got {len(actual)}"
        return None
    return None if expected == actual else f"{path}: expected {expected!r}, got {actual!r}"


def check_case(case: dict[str, Any], outcome: Any) -> str | None:
    """The first difference between a case's expectation and a replayed outcome."""
    expected = case["expected"]
    actual = normal_form(outcome)
    if not case["input"].get("check_message", True):
        expected, actual = strip_messages(expected), strip_messages(actual)
    return first_difference(expected, actual)
