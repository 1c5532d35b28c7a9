"""``history_enrichment`` through both engines: only questions that refer back are enriched.

On the demo corpus plus two documents, a session asks who founded Velmora (a
bakery chain), records the answer, then asks how saffron bread is baked.
Enriching every question (the documented ``always``) retrieves Velmora's
paragraph first for that unrelated question; ``refers_back`` (the recommended
profile) retrieves it as it is, and still enriches "When did she open ...".
"""

from __future__ import annotations

from typing import Any

import pytest

import sync_api
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import DemoChunk, load_demo_corpus
from zerda_async.errors import ConfigError

pytestmark = pytest.mark.anyio

VELMORA = DemoChunk(
    "velmora-001",
    "Velmora is a small bakery chain founded in 1998 by Ines Carvalho, a pastry cook from "
    "Porto, who opened its first shop in Lisbon.",
    {"source": "company-notes", "lang": "en", "topic": "bakeries"},
)
SAFFRON = DemoChunk(
    "saffron-001",
    "Saffron bread is baked from an enriched dough coloured with saffron steeped in warm "
    "milk, shaped into buns and glazed with egg before baking.",
    {"source": "baking-notes", "lang": "en", "topic": "baking"},
)
FIRST = "Who founded Velmora?"
ANSWER = "Velmora was founded by Ines Carvalho in 1998."
SWITCH = "How is saffron bread baked?"
FOLLOW_UP = "When did she open the first shop?"
ENRICHED = "[Previous conversation:\nQ: " + FIRST + "\nA: " + ANSWER + "]\n\nCurrent question: "


CORPUS = [*load_demo_corpus(), VELMORA, SAFFRON]


def config(mode: str | None) -> ContextEngineConfig:
    """The recommended profile, keyword only, with ``mode`` (None: the profile's own)."""
    cfg = ContextEngineConfig.recommended()
    cfg.retriever.use_vector = False
    if mode is not None:
        cfg.history_enrichment = mode
    return cfg


def first_doc(result: Any) -> str:
    return str(result.chunks_used[0].doc_id)


# (mode, switch enriched, follow-up enriched)
MODES = [("always", True, True), (None, False, True), ("never", False, False)]


@pytest.mark.parametrize(("mode", "switch_enriched", "follow_enriched"), MODES)
def test_sync_facade(mode: str | None, switch_enriched: bool, follow_enriched: bool) -> None:
    engine = sync_api.ContextEngine(config(mode)).index(CORPUS)
    engine.run(FIRST)
    history = engine.get_history()
    assert history is not None
    history.turns[-1].answer = ANSWER
    switch = engine.run(SWITCH)
    assert (switch.query_analysis.original_query == ENRICHED + SWITCH) is switch_enriched
    assert switch.query_analysis.original_query in (SWITCH, ENRICHED + SWITCH)
    # The issue: enriched, the saffron question gets Velmora's paragraph first.
    assert first_doc(switch) == ("velmora-001" if switch_enriched else "saffron-001")
    history.turns.pop()  # forget the switch turn: the follow-up's last turn is FIRST
    follow = engine.run(FOLLOW_UP)
    assert follow.query_analysis.original_query == (
        ENRICHED + FOLLOW_UP if follow_enriched else FOLLOW_UP
    )
    assert first_doc(follow) == "velmora-001"


def test_the_documented_default_still_enriches_every_question() -> None:
    engine = sync_api.ContextEngine().index(CORPUS)
    engine.run(FIRST)
    history = engine.get_history()
    assert history is not None
    history.turns[-1].answer = ANSWER
    assert engine.run(SWITCH).query_analysis.original_query == ENRICHED + SWITCH


@pytest.mark.parametrize(("mode", "switch_enriched", "follow_enriched"), MODES)
async def test_async_sessions(
    mode: str | None, switch_enriched: bool, follow_enriched: bool
) -> None:
    async with AsyncContextEngine(config(mode)) as engine:
        await engine.index(CORPUS)
        await engine.run(FIRST, session_id="s")
        assert await engine.record_answer("s", ANSWER)
        switch = await engine.run(SWITCH, session_id="s")
        assert (switch.query_analysis.original_query != SWITCH) is switch_enriched
        assert first_doc(switch) == ("velmora-001" if switch_enriched else "saffron-001")
        # A question left alone is a plain query: cached for every conversation.
        plain = await engine.run(SWITCH)
        assert bool(plain.metadata.get("from_cache")) is (not switch_enriched)
        if not switch_enriched:
            assert plain.context == switch.context
        # The follow-up's last answered turn is still the Velmora one.
        follow = await engine.run(FOLLOW_UP, session_id="s")
        assert (follow.query_analysis.original_query != FOLLOW_UP) is follow_enriched
        assert first_doc(follow) == "velmora-001"
        # An enriched context is private to its session; another one computes its own.
        other = await engine.run(FOLLOW_UP, session_id="t")
        assert not other.metadata.get("from_cache") or not follow_enriched
        assert [t.query for t in await engine.turns("s")] == [FIRST, SWITCH, FOLLOW_UP]


def test_an_unknown_mode_names_the_field() -> None:
    bad = config("sometimes")
    with pytest.raises(ConfigError, match=r"^history_enrichment must be one of"):
        AsyncContextEngine(bad)
    # sync_api validates nothing at construction (documented); the history stage checks
    # the added field on every run.
    engine = sync_api.ContextEngine(bad).index(CORPUS)
    with pytest.raises(ConfigError, match="history_enrichment"):
        engine.run(FIRST)
