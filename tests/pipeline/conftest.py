"""Fixtures of the runner tests: a fresh engine state over a small corpus."""

from __future__ import annotations

import pytest

from pipeline.helpers import chunks, embed
from zerda_async.pipeline import EngineState


@pytest.fixture
def state() -> EngineState:
    """An engine state indexed over the corpus with the test embedder."""
    engine_state = EngineState()
    engine_state.index(chunks(), embed)
    return engine_state
