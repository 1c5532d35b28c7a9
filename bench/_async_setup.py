"""What the parts of ``bench_async.py`` share: the engine configuration and the record of
contexts that differ from the sync facade's (the script exits 1 when it is not empty)."""

from __future__ import annotations

from sync_api import ContextEngineConfig

FAILURES: list[str] = []
"""One line per run whose async contexts differ from the sync facade's."""


def config(cache: bool = True) -> ContextEngineConfig:
    """The default configuration, with the cache on or off."""
    cfg = ContextEngineConfig()
    cfg.cache.enabled = cache
    return cfg
