"""The awaiting halves of the stages that use shared stores (:class:`~zerda_async.stores.Stores`).

Each function is what one stage's ``apply_async`` does when the engine has the
corresponding store; without it the stage keeps its sync ``apply`` (today's
in-process behaviour).  They run inside the walk, so within a replica they run
in submission order like every shared-state stage:

* retrieval awaits the index store's searches (vector, keyword and metadata
  hits, and the query's term weights when the fusion measures coverage) and
  fuses them with the in-memory engine's own code
  (:func:`~zerda_async.core.retrieval.fuse_found`), so a store returning the
  in-memory index's hits gives the in-memory contexts;
* the cache is keyed by the index store's corpus version, polled at most
  every ``Stores.version_poll`` seconds (read again on a miss); of several
  replicas missing one key, the one holding the store's lock computes and
  the others wait for its entry (single flight);
* a session's history is read at the request's turn and the turn appended
  atomically by the session store (linearizable per session);
* adaptive statistics are sent to the learning store and read back at most
  once a second (eventually consistent).

A cache or learning store that does not answer is bypassed (counted in
``state.bypassed``); a session or index store that does not answer fails the
request with :class:`~zerda_async.errors.StoreUnavailableError` naming it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from zerda_async.core.index.analysis import analyzer_for
from zerda_async.core.models import Composition, ConversationHistory, RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import Found, fuse_found, method_list, plan_search
from zerda_async.core.script_centring import question_vector
from zerda_async.errors import ConfigError, StoreUnavailableError
from zerda_async.pipeline._cache_keys import context_key
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._state import EngineState
from zerda_async.stores import LearningSample, apply_window

__all__ = [
    "LOCK_SECONDS",
    "StoreDown",
    "cached_composition",
    "guarded",
    "read_history",
    "record_learning",
    "record_turn",
    "refresh_learning",
    "release_cache_lock",
    "store_composition",
    "store_retrieve",
]

LOCK_SECONDS = 5.0
"""How long a replica's single-flight lock on a cache key lives (a crashed holder's expires)."""


@dataclass(slots=True)
class StoreDown:
    """A store that failed to answer: until when requests fail at once, why, and whether
    a request is probing it now."""

    until: float
    error: StoreUnavailableError
    probing: bool = False


_POLL_SECONDS = 0.02
_COOL_OFF_SECONDS = 1.0
"""After a store failed to answer, requests skip it (or fail at once) this long, so a dead
store costs one timeout per second rather than one per request and per operation."""
_LEARNING_REFRESH_SECONDS = 1.0


async def store_retrieve(job: Job, state: EngineState) -> list[ScoredChunk]:
    """The hybrid candidates of ``job`` from the index store (the in-memory engine's fusion)."""
    store = state.stores.index
    assert store is not None
    cfg = state.config.retriever
    query = job.effective_query
    plan = plan_search(
        cfg, query, job.options.max_chunks, job.options.metadata_filters, job.options.filters
    )
    k = plan.searched  # each search's depth; the fusion keeps plan.k
    # The run's restricting filters are pushed into every search of the store.
    where = job.options.filters or None
    calls: dict[str, Any] = {}
    if plan.vector and job.query_vector is not None:
        vector = job.query_vector
        if state.query_embedder is not None:
            vector = question_vector(
                vector,
                state.query_embedder.script_direction,
                query,
                centring=cfg.script_centring,
                mapping=cfg.question_map,
            )
        calls["vector"] = lambda: store.vector_search(vector, k, where)
    if plan.keyword:
        calls["keyword"] = lambda: store.keyword_search(query, k, where)
    if plan.pairs:
        search = getattr(store, "metadata_search", None)
        if search is None:
            raise ConfigError(
                f"{type(store).__name__} has no metadata search: disable use_metadata"
            )
        calls["metadata"] = lambda: search(plan.pairs, k, where)
    weigh = getattr(store, "query_weights", None)
    if plan.coverage and weigh is not None:
        calls["terms"] = lambda: weigh(query)
    found = await _all(calls)
    lists = Found(
        vector=_listed(RetrievalMethod.VECTOR, found.get("vector"), cfg.min_vector_score),
        keyword=_listed(RetrievalMethod.KEYWORD, found.get("keyword")),
        metadata=_listed(RetrievalMethod.METADATA, found.get("metadata")),
    )
    terms = found.get("terms")
    return fuse_found(
        plan,
        cfg,
        lists,
        None if terms is None else lambda: terms,
        analyzer_for(cfg.text_analyzer),
        state.term_memo,
    )


def _listed(
    method: RetrievalMethod, hits: list[Any] | None, min_vector_score: float = 0.0
) -> list[ScoredChunk] | None:
    return None if hits is None else method_list(method, hits, min_vector_score)


async def _all(calls: dict[str, Any]) -> dict[str, Any]:
    """Each call's result by name; the store's round trips are independent: run them at once."""
    found: dict[str, Any] = {}
    failures: list[Exception] = []

    async def one(name: str) -> None:
        try:
            found[name] = await calls[name]()
        except Exception as exc:
            failures.append(exc)  # raised as itself below, not in an exception group

    async with anyio.create_task_group() as tg:
        for name in calls:
            tg.start_soon(one, name)
    if failures:
        raise failures[0]
    return found


async def guarded(state: EngineState, store: Any, operation: Any) -> Any:
    """``await operation()`` on ``store``, failing at once while the store is known down.

    After a store failed to answer, requests fail at once (their caller
    bypasses a cache or learning store) for ``_COOL_OFF_SECONDS``; then one
    request probes it (waiting at most one store timeout) while the others
    keep failing at once, until the probe answers.  So a store that does not
    answer costs a request at most one store timeout, and most requests none.
    """
    key = id(store)
    down = state.stores_down.get(key)
    probing = False
    if down is not None:
        if time.monotonic() < down.until or down.probing:
            raise down.error
        down.probing = probing = True
    try:
        result = await operation()
    except StoreUnavailableError as exc:
        state.stores_down[key] = StoreDown(time.monotonic() + _COOL_OFF_SECONDS, exc)
        raise
    finally:
        if probing:
            down.probing = False  # type: ignore[union-attr]
    if down is not None:
        state.stores_down.pop(key, None)  # it answered: up again
    return result


# -- cache ------------------------------------------------------------------------------


async def corpus_version(state: EngineState, *, fresh: bool = False) -> int:
    """The version cache keys carry: the index store's (at most ``Stores.version_poll``
    old, or read now when ``fresh``), else the engine's."""
    stores = state.stores
    if stores.index is not None:
        return int(await guarded(state, stores.index, lambda: stores.corpus_version(fresh=fresh)))
    return state.cache_corpus_version or 0


async def _key_version(state: EngineState, *, fresh: bool = False) -> int | None:
    """:func:`corpus_version`; while the index store does not answer, the last version
    read (a context cached for it is still served), or None when none was read yet."""
    try:
        return await corpus_version(state, fresh=fresh)
    except StoreUnavailableError:
        return state.stores.clock.last


async def cached_composition(job: Job, state: EngineState) -> Composition | None:
    """The shared cache's entry for ``job`` (waiting for another replica computing it), or None.

    Sets ``job.cache_key`` / ``job.cache_version`` for the cache-store stage;
    on a miss this replica holds the key's lock until that stage releases it.
    """
    assert state.cache is not None
    base = context_key(job, state)
    version = await _key_version(state)
    if version is None:
        return None  # no version known: no key (the request fails at retrieval)
    cache = state.stores.cache
    if cache is None:
        job.cache_key, job.cache_version = f"{base}@{version}", version
        return state.cache.get_composition(job.cache_key)
    if not state.private_cache:
        # Engines with other templates may share the store (the private key's
        # configuration fingerprint holds the template already).
        base = f"{state.config.composer.template}|{base}"
    try:
        deadline = time.monotonic() + LOCK_SECONDS
        checked = False
        while True:
            found = await guarded(state, cache, lambda v=version: cache.get(base, v))
            if found is not None:
                return msgspec.json.decode(found, type=Composition)
            if not checked and state.stores.index is not None:
                # A miss is computed from the store as it is now: key it by the version
                # read now, not the polled one (one read more, on misses only).
                checked, latest = True, await _key_version(state, fresh=True)
                if latest is not None and latest != version:
                    version = latest
                    continue
            acquire = lambda v=version: cache.acquire(base, v, LOCK_SECONDS)  # noqa: E731
            if await guarded(state, cache, acquire):
                job.cache_key, job.cache_version, job.cache_locked = base, version, True
                return None
            if time.monotonic() >= deadline:
                # The holder is slow or gone: compute without the lock.
                job.cache_key, job.cache_version = base, version
                return None
            await anyio.sleep(_POLL_SECONDS)
    except StoreUnavailableError:
        state.bypassed["cache"] += 1
        job.cache_key = None
        return None


async def store_composition(job: Job, state: EngineState) -> None:
    """Put ``job``'s context into the cache (when its guard passed) and release its lock."""
    assert job.cache_key is not None and job.cache_version is not None
    composition = Composition(job.context, job.citations, job.nothing_relevant)
    cache = state.stores.cache
    if cache is None:
        if job.guard_passed and state.cache is not None:
            state.cache.put_composition(job.cache_key, composition)
        return
    if job.guard_passed:
        key, version = job.cache_key, job.cache_version
        value = msgspec.json.encode(composition).decode()
        try:
            await guarded(state, cache, lambda: cache.put(key, version, value))
        except StoreUnavailableError:
            state.bypassed["cache"] += 1
            return  # one bypass: the lock is left to expire, not released through a dead store
    await release_cache_lock(job, state)


async def release_cache_lock(job: Job, state: EngineState) -> None:
    """Release the single-flight lock ``job`` holds (if any): after storing its context, or
    when it failed before, so other replicas compute the key at once instead of waiting
    for the lock to expire."""
    cache = state.stores.cache
    if not job.cache_locked or cache is None:
        return
    job.cache_locked = False
    key, version = job.cache_key, job.cache_version
    assert key is not None and version is not None  # set with the lock
    try:
        await guarded(state, cache, lambda: cache.release(key, version))
    except StoreUnavailableError:
        state.bypassed["cache"] += 1


# -- sessions ---------------------------------------------------------------------------


async def read_history(state: EngineState, session_id: str) -> ConversationHistory:
    """The session's history as the session store holds it now."""
    store = state.stores.sessions
    assert store is not None
    history = ConversationHistory(session_id=session_id)
    for turn in await guarded(state, store, lambda: store.turns(session_id)):
        history.add_turn(query=turn.query, answer=turn.answer)
    return history


async def record_turn(state: EngineState, session_id: str, query: str) -> None:
    """Append the turn (atomically, in the session store)."""
    store = state.stores.sessions
    assert store is not None
    await guarded(state, store, lambda: store.append_turn(session_id, query))


# -- learning ---------------------------------------------------------------------------


async def refresh_learning(state: EngineState) -> None:
    """Load the shared window into the adaptive learner (at most once a second)."""
    store = state.stores.learning
    now = time.monotonic()
    if store is None or now - state.learning_read_at < _LEARNING_REFRESH_SECONDS:
        return
    try:
        samples, total = await guarded(state, store, store.window)
    except StoreUnavailableError:
        state.bypassed["learning"] += 1
        return
    state.learning_read_at = now
    apply_window(state.adaptive, samples, total)


async def record_learning(state: EngineState, sample: LearningSample) -> None:
    """Send one run's sample to the learning store."""
    store = state.stores.learning
    assert store is not None
    try:
        await guarded(state, store, lambda: store.record(sample))
    except StoreUnavailableError:
        state.bypassed["learning"] += 1
