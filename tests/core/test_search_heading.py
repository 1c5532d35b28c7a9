"""``metadata["search_heading"]``: BM25 reads a chunk's heading with its text, contexts do not."""

from __future__ import annotations

from support.chunks import Chunk

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig
from zerda_async.core.index.chunks import SEARCH_HEADING, keyword_text

BODY = "It opened in 1957 with three faculties and now teaches forty thousand students."


def _chunks(heading: str | None) -> list[Chunk]:
    meta = {} if heading is None else {SEARCH_HEADING: heading}
    return [
        Chunk("uni", BODY, {"source": "atlas", **meta}),
        Chunk("port", "The port handles container ships all year.", {"source": "atlas"}),
    ]


def test_a_word_only_in_the_heading_finds_the_chunk_and_stays_out_of_the_context() -> None:
    for config in (ContextEngineConfig(), ContextEngineConfig.recommended()):
        engine = ContextEngine(config)
        engine.index(_chunks("Mohammed V University › History"))
        result = engine.run("When did the university open?", record_turn=False)
        assert [sc.doc_id for sc in result.chunks_used][:1] == ["uni"]
        assert "History" not in result.context and BODY in result.context
        without = ContextEngine(config)
        without.index(_chunks(None))
        found = without.run("university history", record_turn=False).chunks_used
        assert "uni" not in [sc.doc_id for sc in found]


def test_keyword_text_is_the_text_itself_without_a_heading() -> None:
    plain, headed = _chunks(None)[0], _chunks("Title")[0]
    assert keyword_text(plain) == BODY
    assert keyword_text(headed) == f"Title\n{BODY}"
    assert keyword_text(Chunk("x", "t", {SEARCH_HEADING: 7})) == "t"  # not a string: ignored
