"""Storing a context in a shared cache store, then releasing the single-flight lock.

``store_composition`` puts the context and releases through
``release_cache_lock``: each store failure counts one bypass, and a failed put
leaves the lock to expire rather than asking a store that just failed.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from zerda_async.errors import StoreUnavailableError
from zerda_async.pipeline import Job, make_job
from zerda_async.pipeline._shared import release_cache_lock, store_composition

pytestmark = pytest.mark.anyio


class FakeCacheStore:
    """Records the calls; ``failing`` names the operations that raise."""

    def __init__(self, *failing: str) -> None:
        self.failing = set(failing)
        self.calls: list[str] = []

    async def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.failing:
            raise StoreUnavailableError("cache", "redis://127.0.0.1:1", f"{name} did not answer")

    async def put(self, key: str, version: int, value: str) -> None:
        await self._call("put")

    async def release(self, key: str, version: int) -> None:
        await self._call("release")


def locked_job(guard_passed: bool = True) -> Job:
    job = make_job("where does the Nile flow?")
    job.cache_key, job.cache_version, job.cache_locked = "key", 3, True
    job.context, job.guard_passed = "a context", guard_passed
    return job


def state_with(store: FakeCacheStore) -> Any:
    return SimpleNamespace(
        stores=SimpleNamespace(cache=store), bypassed={"cache": 0}, stores_down={}
    )


@pytest.mark.parametrize(
    ("failing", "guard_passed", "calls", "bypassed", "still_locked"),
    [
        ((), True, ["put", "release"], 0, False),
        (("put",), True, ["put"], 1, True),  # one bypass; the lock expires by itself
        (("release",), True, ["put", "release"], 1, False),
        ((), False, ["release"], 0, False),  # a failed guard stores nothing
    ],
)
async def test_store_then_release_counts_one_bypass_per_failure(
    failing: tuple[str, ...],
    guard_passed: bool,
    calls: list[str],
    bypassed: int,
    still_locked: bool,
) -> None:
    store = FakeCacheStore(*failing)
    state, job = state_with(store), locked_job(guard_passed)
    await store_composition(job, state)
    assert store.calls == calls
    assert state.bypassed["cache"] == bypassed
    assert job.cache_locked is still_locked


async def test_release_alone_does_nothing_without_a_lock() -> None:
    store = FakeCacheStore()
    job = locked_job()
    job.cache_locked = False
    await release_cache_lock(job, state_with(store))
    assert store.calls == []
