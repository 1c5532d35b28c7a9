"""Stores: where the index, sessions, cached contexts and learning statistics live.

Protocols (async): :class:`IndexStore`, :class:`SessionStore`,
:class:`CacheStore`, :class:`LearningStore`.  Implementations:

* in memory (the zero-setup default, today's single-process behaviour):
  :class:`MemoryIndexStore`, :class:`MemorySessionStore`,
  :class:`MemoryCacheStore`, :class:`MemoryLearningStore`;
* PostgreSQL + pgvector (``stores`` extra): :class:`PostgresIndexStore`, and
  :class:`PostgresSessionStore`, :class:`PostgresCacheStore`,
  :class:`PostgresLearningStore` for a deployment with one dependency;
* Redis (``stores`` extra): :class:`RedisSessionStore`, :class:`RedisCacheStore`,
  :class:`RedisLearningStore`; :func:`stored_vectors` reads back a
  PostgreSQL index store's vectors by doc id (re-indexing reuses them).

The PostgreSQL and Redis classes are imported on first use, so this package
imports without the extra installed.  They run on asyncio only.
"""

from __future__ import annotations

import importlib
from typing import Any

from zerda_async.stores._filters import Condition, Filters, matches, parse_filters
from zerda_async.stores._learning import apply_window
from zerda_async.stores._memory import (
    LEARNING_WINDOW,
    MemoryCacheStore,
    MemoryIndexStore,
    MemoryLearningStore,
    MemorySessionStore,
    query_terms,
)
from zerda_async.stores._protocols import (
    CacheStore,
    Hit,
    IndexStore,
    LearningSample,
    LearningStore,
    SearchMode,
    SessionStore,
    StoredChunk,
    StoredTurn,
)
from zerda_async.stores._set import Stores
from zerda_async.stores._urls import redact
from zerda_async.stores._version import VERSION_POLL_SECONDS, VersionClock

_LAZY = {
    "PostgresIndexStore": "zerda_async.stores._postgres_index",
    "PostgresSessionStore": "zerda_async.stores._postgres_state",
    "PostgresCacheStore": "zerda_async.stores._postgres_state",
    "PostgresLearningStore": "zerda_async.stores._postgres_state",
    "RedisSessionStore": "zerda_async.stores._redis",
    "RedisCacheStore": "zerda_async.stores._redis",
    "RedisLearningStore": "zerda_async.stores._redis",
    "stored_vectors": "zerda_async.stores._pg_stored_vectors",
}

__all__ = [
    "LEARNING_WINDOW",
    "VERSION_POLL_SECONDS",
    "CacheStore",
    "Condition",
    "Filters",
    "Hit",
    "IndexStore",
    "LearningSample",
    "LearningStore",
    "MemoryCacheStore",
    "MemoryIndexStore",
    "MemoryLearningStore",
    "MemorySessionStore",
    "PostgresCacheStore",
    "PostgresIndexStore",
    "PostgresLearningStore",
    "PostgresSessionStore",
    "RedisCacheStore",
    "RedisLearningStore",
    "RedisSessionStore",
    "SearchMode",
    "SessionStore",
    "StoredChunk",
    "StoredTurn",
    "Stores",
    "VersionClock",
    "apply_window",
    "matches",
    "parse_filters",
    "query_terms",
    "redact",
    "stored_vectors",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'zerda_async.stores' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
