"""The context-cache key of a request: the documented one, and the async engine's private one.

The documented engine keys its cache by the raw query and the metadata
filters only, and looks it up before the history enrichment (a documented
quirk: a repeated question gets the cached context even when the
conversation moved on).  The sync facade keeps that key exactly.

The async engine serves many conversations from one cache — across replicas,
from one shared cache store — so there that key would hand one session's
history-enriched context to every other session asking the same words, and
give a session that needs enrichment someone else's unenriched context.  Its
key (``state.private_cache``) therefore holds everything that shapes the
context:

* the *effective* query (after the history enrichment), normalised as the
  documented key normalises the raw one;
* the metadata filters, the restricting ``filters`` and the ``template`` run
  option (as before), ``max_chunks`` and ``override_budget``;
* a fingerprint of the engine's configuration (profile, templates, weights,
  budgets: engines with another configuration never share an entry);
* the scope of the conversation when the enrichment changed the query: such
  a context was built from one conversation's turns and is only ever served
  to that conversation again.  A query the enrichment left alone has no
  scope: its context depends on no history, and every conversation shares it;
* the corpus version (appended by the caller: the in-process version, or the
  index store's as the cache store's second key part).

The adaptive budget is not part of the key: it follows the engine-wide
statistics of every request (documented learning), not one conversation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from zerda_async.core.config import ContextEngineConfig
from zerda_async.pipeline._job import Job, options_cache_suffix
from zerda_async.pipeline._state import EngineState

__all__ = ["config_fingerprint", "context_key", "local_context_key"]


def config_fingerprint(config: ContextEngineConfig) -> str:
    """A short digest of every configuration field (the configuration is mutable: computed
    per call, a few microseconds)."""
    encoded = msgspec.json.encode(config)
    return hashlib.blake2b(encoded, digest_size=8).hexdigest()


def context_key(job: Job, state: EngineState) -> str:
    """The cache key of ``job`` without the corpus version (see the module docstring).

    In the private mode the job's ``effective_query`` must be set (the cache
    lookup enriches the query first).  Raises what the documented key raises
    for a query that is not a string (``AttributeError`` for ``None``).
    """
    assert state.cache is not None
    options = job.options
    suffix = options_cache_suffix(options, state.config.composer.template)
    if not state.private_cache:
        return state.cache.make_key(job.query, options.metadata_filters) + suffix
    key = state.cache.make_key(job.effective_query, options.metadata_filters) + suffix
    if options.max_chunks:
        key += f"|k={options.max_chunks}"
    if options.override_budget:
        key += f"|b={options.override_budget}"
    scope = ""
    if job.effective_query != job.query:
        # Built from this conversation's turns: private to it.  The default
        # conversation (no session id) is this engine's own.  The length
        # prefix keeps a client's session id from forging another key.
        owner = options.session_id
        scope = f"e={state.instance_id}|" if owner is None else f"s{len(owner)}={owner}|"
    return f"{config_fingerprint(state.config)}|{scope}{key}"


def local_context_key(job: Job, state: EngineState) -> str:
    """:func:`context_key` with the in-process corpus version, as the in-process cache keys it."""
    key = context_key(job, state)
    if state.cache_corpus_version is not None:
        key += f"@{state.cache_corpus_version}"
    return key


def cache_holds(job: Job, state: EngineState, effective: Any) -> bool:
    """True when the in-process cache holds the context of ``job`` asked as ``effective``.

    Counts no lookup.  A key that cannot be made says True: the walk's cache
    lookup then raises the documented error, and nothing ahead of it is needed.
    """
    cache = state.cache
    if cache is None:
        return False
    try:
        key = local_context_key(msgspec.structs.replace(job, effective_query=effective), state)
    except Exception:
        return True
    return cache.contains(key)
