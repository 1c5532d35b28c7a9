"""The service as one of several replicas: ``--store`` and ``--state`` URLs to stores.

``--store`` is a saved index directory (the index in this process, as before)
or a ``postgresql://`` URL (any libpq form) of a
:class:`~zerda_async.stores.PostgresIndexStore` written by ``zerda index
--store``.  ``--state`` is ``memory`` (this process), ``redis://`` or
``postgresql://``: where sessions, the context cache and the adaptive
statistics live.  The stores are opened once per process, shared by the
engines of every template, and closed when the last engine closes; a store
that is down at start-up makes the engine fail to open, and the next request
tries again (so the service recovers by itself).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from zerda_async.apps._profiles import EF_SEARCH, KEYWORD_ONLY, profile_config
from zerda_async.apps._saved_index import open_index
from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders import HashingEmbedder, embedder_from_params
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import IndexFormatError, StoreUnavailableError, UsageError
from zerda_async.stores import VERSION_POLL_SECONDS, MemorySessionStore, Stores

if TYPE_CHECKING:
    from zerda_async.stores import SearchMode

__all__ = [
    "EMBEDDER_SETTING",
    "PROFILE_SETTING",
    "StoreProfile",
    "StoreSet",
    "is_postgres_url",
    "probe",
    "read_profile",
]

EMBEDDER_SETTING = "embedder"
"""Index-store setting of stores written before profiles were recorded: the hashing
embedder's parameters (such a store was built with the documented profile)."""

PROFILE_SETTING = "profile"
"""Index-store setting recording how ``zerda index --store`` built it (:class:`StoreProfile`)."""


@dataclass(frozen=True)
class StoreProfile:
    """The profile, text analyser and embedder an index store was built with.

    ``embed_heading`` records ``retriever.embed_heading``: whether the vectors
    were embedded from each chunk's search heading and text (records written
    before it lack it: they were not).
    """

    profile: str
    text_analyzer: str
    embedder: str
    embedder_params: dict[str, Any] = field(default_factory=dict)
    embed_heading: bool = False

    @classmethod
    def built_with(cls, profile: str, name: str, embedder: Any) -> StoreProfile:
        """The record of a store built now with ``profile`` and the embedder ``name``."""
        retriever = profile_config(profile).retriever
        params = {} if embedder is None else embedder.params()
        return cls(profile, retriever.text_analyzer, name, params, retriever.embed_heading)

    def config(self) -> ContextEngineConfig:
        """A fresh configuration of the profile (the one the store's contexts come from)."""
        config = profile_config(self.profile)
        config.retriever.embed_heading = self.embed_heading
        return config

    def make_embedder(self) -> Any:
        """The embedder of the store's vectors (``None``: keyword search only)."""
        return None if self.embedder == KEYWORD_ONLY else embedder_from_params(self.embedder_params)

    def record(self) -> dict[str, Any]:
        """The JSON value of :data:`PROFILE_SETTING`.

        ``embed_heading`` is written only when true: a store built without it
        keeps the record older replicas read.
        """
        record = asdict(self)
        if not self.embed_heading:
            del record["embed_heading"]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StoreProfile:
        """The profile a :meth:`record` holds; a key this version does not know is an error.

        A newer writer's key may change what the vectors are (as
        ``embed_heading`` does), so reading past it would serve wrong results:
        the error names it instead.
        """
        unknown = sorted(set(record) - {f.name for f in fields(cls)})
        if unknown:
            raise IndexFormatError(
                "the index store",
                f"its {PROFILE_SETTING!r} record has the unknown key {unknown[0]!r}"
                " (written by a newer zerda-async: upgrade this one to read it)",
            )
        return cls(**record)

    def describe(self) -> str:
        """One line for messages, like a saved index's."""
        dim = self.embedder_params.get("dim")
        vectors = "keyword search only" if self.embedder == KEYWORD_ONLY else self.embedder
        extra = f" ({dim} dimensions)" if dim else ""
        if self.embed_heading and self.embedder != KEYWORD_ONLY:
            extra += ", headings embedded with the text"
        return f"{self.profile} profile, text analyser {self.text_analyzer}, {vectors}{extra}"


async def read_profile(index: Any) -> StoreProfile | None:
    """What the index store records about how it was built (``None``: nothing written yet)."""
    record = await index.setting(PROFILE_SETTING)
    if record is not None:
        return StoreProfile.from_record(record)
    params = await index.setting(EMBEDDER_SETTING)
    if params is None and await index.count() == 0:
        return None
    # Written before profiles were recorded: the documented profile (and hashing vectors).
    documented = profile_config("documented").retriever.text_analyzer
    name = HashingEmbedder.name if params else KEYWORD_ONLY
    return StoreProfile("documented", documented, name, dict(params or {}))


_PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(value: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) connection URL."""
    return value.startswith(_PG_SCHEMES)


def check_state_url(state: str) -> None:
    """Raise :class:`UsageError` unless ``state`` is ``memory``, a Redis or a PostgreSQL URL."""
    redis = state.startswith(("redis://", "rediss://", "unix://"))
    if state != "memory" and not redis and not is_postgres_url(state):
        raise UsageError(f"--state {state!r}: use 'memory', redis://... or postgresql://...")


class StoreSet:
    """The stores of one service process, opened by the first engine and closed by the last."""

    def __init__(
        self,
        store: str,
        state: str,
        *,
        prefix: str = "zerda_",
        request_timeout: float = 30.0,
        vector_search: str = "exact",
        ef_search: int = EF_SEARCH,
    ) -> None:
        check_state_url(state)
        self.vector_search, self.ef_search = vector_search, ef_search
        # A request may await a few store operations: each gets a share of its deadline,
        # so a store that does not answer is reported (503) before the request times out.
        self.timeout = max(0.2, min(5.0, request_timeout / 4))
        self.store, self.state, self.prefix = store, state, prefix
        self.stores: Stores | None = None
        self._users = 0
        self._lock = anyio.Lock()
        # With --state memory the sessions still live in one store per process,
        # so the engines of every template see the same conversations.
        self._memory_sessions = MemorySessionStore()
        # The recorded profile's configuration, once an index store is opened.
        self.base_config: ContextEngineConfig | None = None

    async def _open(self) -> Stores:
        opened: list[Any] = []
        try:
            index, embedder = await self._open_index(opened)
            sessions, cache, learning = await self._open_state(opened)
        except BaseException:
            for store in opened:
                with contextlib.suppress(Exception):
                    await store.aclose()
            raise
        # A local copy polls the corpus version itself: asking it costs no round trip,
        # and a second poll on top would only delay what the copy already knows.
        poll = 0.0 if self.vector_search == "local" else VERSION_POLL_SECONDS
        return Stores(
            index=index,
            sessions=sessions,
            cache=cache,
            learning=learning,
            embedder=embedder,
            version_poll=poll,
        )

    async def _open_index(self, opened: list[Any]) -> tuple[Any, Any]:
        """The PostgreSQL index store and its recorded embedder (``None``s for a directory)."""
        if not is_postgres_url(self.store):
            return None, None
        from zerda_async.stores import PostgresIndexStore

        index = await PostgresIndexStore.open(
            self.store,
            prefix=self.prefix,
            # One store timeout, like the state stores: a stopped index store fails a
            # request within it (docs/sessions.md, the failure timeline).
            operation_timeout=self.timeout,
            connect_timeout=self.timeout,
            # The store refuses a mode it does not know, naming it.
            search=cast("SearchMode", self.vector_search),
            ef_search=self.ef_search,
        )
        opened.append(index)
        recorded = await read_profile(index)
        if recorded is None:
            return index, None
        # Searches tokenise queries with the analyser the store was built with.
        index.analyzer = recorded.text_analyzer
        self.base_config = recorded.config()
        return index, recorded.make_embedder()

    async def _open_state(self, opened: list[Any]) -> tuple[Any, Any, Any]:
        """The session, cache and learning stores of ``--state`` (memory: this process's)."""
        if self.state.startswith(("redis://", "rediss://", "unix://")):
            from zerda_async.stores import RedisCacheStore, RedisLearningStore, RedisSessionStore

            options: dict[str, Any] = {
                "prefix": self.prefix.replace("_", ":"),
                "operation_timeout": self.timeout,
            }
            redis_stores = (
                RedisSessionStore(self.state, **options),
                RedisCacheStore(self.state, **options),
                RedisLearningStore(self.state, **options),
            )
            opened += redis_stores
            return redis_stores
        if is_postgres_url(self.state):
            from zerda_async.stores import (
                PostgresCacheStore,
                PostgresLearningStore,
                PostgresSessionStore,
            )

            found = []
            for kind in (PostgresSessionStore, PostgresCacheStore, PostgresLearningStore):
                store = await kind.open(
                    self.state, prefix=self.prefix, operation_timeout=self.timeout
                )
                opened.append(store)
                found.append(store)
            return found[0], found[1], found[2]
        return self._memory_sessions, None, None

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[Stores]:
        """The opened stores for the ``with`` block (opened on first use, closed after the last)."""
        async with self._lock:
            if self.stores is None:
                self.stores = await self._open()
            self._users += 1
        try:
            yield self.stores
        finally:
            async with self._lock:
                self._users -= 1
                if self._users == 0 and self.stores is not None:
                    stores, self.stores = self.stores, None
                    with anyio.CancelScope(shield=True):
                        await stores.aclose()

    @contextlib.asynccontextmanager
    async def engine(
        self, config: ContextEngineConfig, **engine_kwargs: Any
    ) -> AsyncIterator[AsyncContextEngine]:
        """An engine with ``config`` over these stores (or the saved index directory)."""
        async with self.use() as stores:
            if stores.index is None:
                async with open_index(
                    Path(self.store), config, stores=stores, **engine_kwargs
                ) as e:
                    yield e
            else:
                if self.base_config is not None:
                    # The store's recorded profile, with the request's template on top.
                    template, metadata = config.composer.template, config.retriever.use_metadata
                    config = copy.deepcopy(self.base_config)
                    config.composer.template, config.retriever.use_metadata = template, metadata
                async with AsyncContextEngine(config, stores=stores, **engine_kwargs) as e:
                    yield e

    def description(self) -> dict[str, Any]:
        """What ``/healthz`` shows about the stores (no passwords)."""
        from zerda_async.stores import redact

        return {"store": redact(self.store), "state": redact(self.state)}


async def probe(stores: Stores | None, timeout: float) -> dict[str, str]:
    """Each configured store's name -> ``"ok"`` or why it does not answer (for ``/readyz``)."""
    if stores is None:
        return {}
    checks: list[tuple[str, Any]] = []
    if stores.index is not None:
        checks.append((stores.index.name, stores.index.version))
    if stores.sessions is not None:
        sessions = stores.sessions
        checks.append((sessions.name, lambda: sessions.turns("zerda-readyz")))
    if stores.cache is not None:
        cache = stores.cache
        checks.append((cache.name, lambda: cache.get("zerda-readyz", -1)))
    if stores.learning is not None:
        checks.append((stores.learning.name, stores.learning.window))
    found: dict[str, str] = {}
    for name, check in checks:
        try:
            with anyio.fail_after(timeout):
                await check()
        except StoreUnavailableError as exc:
            found[name] = str(exc)
        except TimeoutError:
            found[name] = f"{name} did not answer within {timeout:g} s"
        else:
            found[name] = "ok"
    return found
