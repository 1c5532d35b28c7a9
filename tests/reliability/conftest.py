"""Reliability tests fail any asyncio test that blocks the event loop (blockbuster).

The fixture is the async-engine tests' one (see ``tests/engine/conftest.py``):
a sync embedder, vector store or tokenizer that ran on the loop instead of in
a worker thread would raise ``BlockingError`` and fail its test.  The
hypothesis profile is set in ``tests/conftest.py``.
"""

from __future__ import annotations

from engine.conftest import no_blocking_on_the_loop

__all__ = ["no_blocking_on_the_loop"]
