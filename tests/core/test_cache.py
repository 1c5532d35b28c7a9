"""Tests of the context cache (spec: guard_and_learning.md §4)."""

from __future__ import annotations

import hashlib
import inspect
import time
from typing import Any

import pytest

from zerda_async.core.cache import ContextCache


class FakeClock:
    """A settable clock, so expiry is deterministic."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _cache(max_size: int = 256, ttl: int = 300) -> tuple[ContextCache, FakeClock]:
    clock = FakeClock()
    return ContextCache(max_size=max_size, ttl_seconds=ttl, clock=clock), clock


# ── defaults and construction ────────────────────────────────────────────────


def test_defaults() -> None:
    cache = ContextCache()
    assert cache.stats == {
        "size": 0,
        "max_size": 256,
        "hits": 0,
        "misses": 0,
        "hit_rate": "0%",
        "ttl_sec": 300,
    }


def test_default_clock_is_time_time() -> None:
    param = inspect.signature(ContextCache).parameters["clock"]
    assert param.default is time.time
    assert param.kind is inspect.Parameter.KEYWORD_ONLY


def test_default_clock_round_trip() -> None:
    cache = ContextCache()
    cache.put("k", "v")
    assert cache.get("k") == "v"


# ── make_key ─────────────────────────────────────────────────────────────────


def test_make_key_spec_examples() -> None:
    cache = ContextCache()
    expected = "5d41402abc4b2a76b9719d911017c592"
    assert cache.make_key("Hello") == expected
    assert cache.make_key(" hello ") == expected
    assert cache.make_key("hello", {}) == expected
    assert cache.make_key("hello", None) == expected
    assert cache.make_key("hello", {"b": 1, "a": "x"}) == "2993dd1a9d11f3f34ba5eee882aa5bc0"


def test_make_key_filters_are_sorted_then_str() -> None:
    cache = ContextCache()
    raw = "hello[('a', 'x'), ('b', 1)]"
    assert cache.make_key("HELLO", {"a": "x", "b": 1}) == hashlib.md5(raw.encode()).hexdigest()


def test_make_key_empty_query() -> None:
    assert ContextCache().make_key("   ") == "d41d8cd98f00b204e9800998ecf8427e"


@pytest.mark.parametrize(
    ("filters", "english", "blank"),
    [
        (None, "c6b256eca9c19cf00db35851528681bd", "d41d8cd98f00b204e9800998ecf8427e"),
        ({}, "c6b256eca9c19cf00db35851528681bd", "d41d8cd98f00b204e9800998ecf8427e"),
        ({"lang": "en"}, "5c92d057f1f376be6109fade88261cad", "8b705ff24e1dd13893c749fd11e61571"),
        (
            {"year": 2024, "lang": "en"},
            "c404c624f2990d29ff88f5521c1d53e4",
            "fe671f12198073cafb0e95b9a27b8066",
        ),
        (
            {"lang": "en", "year": 2024},
            "c404c624f2990d29ff88f5521c1d53e4",
            "fe671f12198073cafb0e95b9a27b8066",
        ),
        (
            {"date": {"$gte": "2023-01-01"}, "source": "pdf"},
            "22ebbc22bacea4827220ff7a850c1dd4",
            "be29ceb8cc10b56591aa0b866115ce65",
        ),
        (
            {"tags": ["a", "b"], "flag": True, "n": None, "x": 1.5},
            "e7269d7b761e15c80ef409a98a334e79",
            "ad5db233f9f7ddb3727aeec9aa140e41",
        ),
    ],
)
def test_make_key_golden_values(filters: dict[str, Any] | None, english: str, blank: str) -> None:
    cache = ContextCache()
    for query in ("What is AI?", "  what is ai?  ", "WHAT IS AI?"):
        assert cache.make_key(query, filters) == english
    for query in ("", "   "):
        assert cache.make_key(query, filters) == blank


def test_make_key_unicode_is_utf8() -> None:
    query = "ما هو التعلم الآلي؟"
    assert ContextCache().make_key(f" {query}\n") == hashlib.md5(query.encode()).hexdigest()


def test_make_key_nested_values_depend_on_insertion_order() -> None:
    cache = ContextCache()
    a = cache.make_key("q", {"f": {"x": 1, "y": 2}})
    b = cache.make_key("q", {"f": {"y": 2, "x": 1}})
    assert a != b


def test_make_key_incomparable_filter_keys_raise() -> None:
    with pytest.raises(TypeError):
        ContextCache().make_key("q", {1: "a", "b": 2})  # type: ignore[dict-item]


def test_make_key_mixed_value_types() -> None:
    # Distinct keys never tie, so values are never compared; mixed value types are fine.
    key = ContextCache().make_key("q", {"a": 1, "b": "x", "c": None})
    assert len(key) == 32


def test_make_key_none_query_raises() -> None:
    with pytest.raises(AttributeError):
        ContextCache().make_key(None)  # type: ignore[arg-type]


def test_make_key_does_not_touch_counters() -> None:
    cache = ContextCache()
    cache.make_key("q")
    assert cache.stats["hits"] == 0
    assert cache.stats["misses"] == 0


# ── get / put / TTL ──────────────────────────────────────────────────────────


def test_miss_then_hit() -> None:
    cache, _ = _cache()
    assert cache.get("a") is None
    cache.put("a", "A")
    assert cache.get("a") == "A"
    assert cache.stats["hits"] == 1
    assert cache.stats["misses"] == 1


def test_ttl_is_strict() -> None:
    cache, clock = _cache(ttl=10)
    cache.put("a", "A")
    clock.now += 10
    assert cache.get("a") == "A"
    clock.now += 0.001
    assert cache.get("a") is None
    assert cache.stats["size"] == 0


def test_negative_ttl_expires_immediately() -> None:
    cache, _ = _cache(ttl=-1)
    cache.put("a", "A")
    assert cache.get("a") is None


def test_hit_does_not_refresh_timestamp() -> None:
    cache, clock = _cache(ttl=10)
    cache.put("a", "A")
    clock.now += 8
    assert cache.get("a") == "A"
    clock.now += 8
    assert cache.get("a") is None


def test_overwrite_refreshes_timestamp_but_not_position() -> None:
    cache, clock = _cache(max_size=2, ttl=10)
    cache.put("a", "A")
    cache.put("b", "B")
    clock.now += 8
    cache.put("a", "A2")
    clock.now += 8
    assert cache.get("a") == "A2"  # timestamp was refreshed
    cache.put("c", "C")  # evicts "a", still oldest in the order
    assert cache.get("a") is None
    assert cache.get("c") == "C"


def test_fifo_not_lru() -> None:
    cache, _ = _cache(max_size=3, ttl=10**9)
    cache.put("a", "A")
    cache.put("b", "B")
    cache.put("c", "C")
    assert cache.get("a") == "A"  # a read does not protect "a"
    cache.put("d", "D")
    assert cache.get("a") is None
    assert cache.get("b") == "B"
    assert cache.get("d") == "D"


def test_golden_sequence_with_clear() -> None:
    cache, _ = _cache(max_size=3, ttl=10**9)
    assert cache.get("a") is None
    cache.put("a", "A")
    assert cache.get("a") == "A"
    cache.put("b", "B")
    cache.put("c", "C")
    cache.put("a", "A2")
    cache.put("d", "D")
    assert cache.get("a") is None
    assert cache.get("b") == "B"
    assert cache.get("d") == "D"
    assert cache.stats == {
        "size": 3,
        "max_size": 3,
        "hits": 3,
        "misses": 2,
        "hit_rate": "60.0%",
        "ttl_sec": 10**9,
    }
    cache.clear()
    assert cache.stats["size"] == 0
    assert cache.stats["hit_rate"] == "60.0%"
    assert cache.get("d") is None
    assert cache.stats["hit_rate"] == "50.0%"


def test_quirk_spec_over_growth_scenario() -> None:
    # max_size=2: put a, put b, a expires and is read, put c, put d -> store {b, c, d}.
    cache, clock = _cache(max_size=2, ttl=10)
    cache.put("a", "A")
    clock.now += 5
    cache.put("b", "B")
    clock.now += 6  # a is 11 s old, b 6 s
    assert cache.get("a") is None
    cache.put("c", "C")
    cache.put("d", "D")
    assert cache.stats["size"] == 3
    assert cache.get("b") == "B"
    assert cache.get("c") == "C"
    assert cache.get("d") == "D"


def test_quirk_golden_over_growth_with_negative_ttl() -> None:
    cache, _ = _cache(max_size=2, ttl=-1)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") is None
    cache.put("c", "C")
    cache.put("d", "D")
    assert cache.stats["size"] == 3
    cache.put("e", "E")
    assert cache.stats["size"] == 3
    assert cache.get("e") is None
    assert cache.stats == {
        "size": 2,
        "max_size": 2,
        "hits": 0,
        "misses": 2,
        "hit_rate": "0.0%",
        "ttl_sec": -1,
    }


def test_quirk_reinserted_key_is_evicted_by_its_stale_entry() -> None:
    cache, clock = _cache(max_size=2, ttl=10)
    cache.put("a", "A")
    clock.now += 11
    assert cache.get("a") is None  # order: [a]
    cache.put("a", "A2")  # order: [a, a]
    cache.put("b", "B")  # order: [a, a, b]; store {a, b}
    cache.put("c", "C")  # pops the stale "a" -> evicts the fresh A2
    assert cache.get("a") is None
    assert cache.get("b") == "B"
    assert cache.get("c") == "C"


def test_quirk_expired_unread_entries_count_in_size() -> None:
    cache, clock = _cache(ttl=1)
    cache.put("a", "A")
    clock.now += 100
    assert cache.stats["size"] == 1


def test_quirk_max_size_zero_put_raises_index_error() -> None:
    cache, _ = _cache(max_size=0)
    with pytest.raises(IndexError, match=r"^pop from an empty deque$"):
        cache.put("a", "A")


def test_clear_keeps_counters_and_resets_order() -> None:
    cache, _ = _cache(max_size=2)
    cache.put("a", "A")
    cache.get("a")
    cache.get("zz")
    cache.clear()
    assert cache.stats["hits"] == 1
    assert cache.stats["misses"] == 1
    cache.put("b", "B")
    cache.put("c", "C")
    cache.put("d", "D")  # evicts "b" (the order was cleared, "a" is gone)
    assert cache.get("b") is None
    assert cache.get("c") == "C"


def test_empty_string_value_is_returned_as_hit() -> None:
    cache, _ = _cache()
    cache.put("a", "")
    assert cache.get("a") == ""
    assert cache.stats["hits"] == 1


# ── stats ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("hits", "misses", "rate"),
    [(0, 0, "0%"), (0, 1, "0.0%"), (1, 1, "50.0%"), (120, 30, "80.0%"), (1, 2, "33.3%")],
)
def test_hit_rate_strings(hits: int, misses: int, rate: str) -> None:
    cache, _ = _cache()
    cache.put("k", "v")
    for _ in range(hits):
        cache.get("k")
    for _ in range(misses):
        cache.get("missing")
    assert cache.stats["hit_rate"] == rate


def test_stats_key_order_and_fresh_dict() -> None:
    cache, _ = _cache()
    stats = cache.stats
    assert list(stats) == ["size", "max_size", "hits", "misses", "hit_rate", "ttl_sec"]
    stats["size"] = 99
    assert cache.stats["size"] == 0


# ── bad input ────────────────────────────────────────────────────────────────


def test_unhashable_key_raises_type_error() -> None:
    cache, _ = _cache()
    bad: Any = ["not", "hashable"]
    with pytest.raises(TypeError):
        cache.get(bad)
    with pytest.raises(TypeError):
        cache.put(bad, "v")


def test_huge_number_of_puts_stays_bounded() -> None:
    cache, _ = _cache(max_size=10, ttl=10**9)
    for i in range(10_000):
        cache.put(f"k{i}", "v")
    assert cache.stats["size"] == 10
    assert cache.get("k9999") == "v"
    assert cache.get("k9989") is None


# ── compositions (citations carried by the cache) ────────────────────────────


def test_composition_round_trips_and_shares_counters_with_get() -> None:
    from zerda_async.core.models import Citation, Composition

    cache, clock = _cache(ttl=10)
    cited = Composition("ctx", (Citation("d", "s", "[Source: s]", 3, 6, True),), False)
    cache.put_composition("k", cited)
    assert cache.get_composition("k") == cited
    assert cache.get("k") == "ctx"
    cache.put("plain", "text")
    assert cache.get_composition("plain") == Composition("text")
    clock.now += 11
    assert cache.get_composition("k") is None
    assert cache.stats["hits"] == 3 and cache.stats["misses"] == 1


def test_composition_entries_evict_like_strings() -> None:
    from zerda_async.core.cache import BoundedContextCache
    from zerda_async.core.models import Composition

    for cache in (ContextCache(max_size=1), BoundedContextCache(max_size=1)):
        cache.put_composition("a", Composition("A"))
        cache.put("b", "B")
        assert cache.get_composition("a") is None
        assert cache.get("b") == "B"
