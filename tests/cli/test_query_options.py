"""``zerda query --where``, ``--template auto`` and the citations of ``--json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from support.chunks import Chunk

from zerda_async import AsyncContextEngine, ContextEngineConfig

from .conftest import run_zerda


def _query_json(index: Path, question: str, *options: str) -> dict[str, Any]:
    done = run_zerda(["query", str(index), question, "--json", *options])
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_where_restricts_the_chunks_and_citations_are_context_slices(built_index: Path) -> None:
    plain = _query_json(built_index, "What is BM25 coffee?")
    assert {c["metadata"].get("topic") for c in plain["chunks_used"]} != {"search"}
    result = _query_json(built_index, "What is BM25 coffee?", "--where", "topic=search")
    assert result["chunks_used"]
    assert {c["metadata"]["topic"] for c in result["chunks_used"]} == {"search"}
    previews = {c["doc_id"]: c for c in result["chunks_used"]}
    assert result["citations"] and result["nothing_relevant"] is False
    for cit in result["citations"]:
        chunk = previews[cit["doc_id"]]
        assert chunk["char_count"] <= 200  # the sample chunks are short: the preview is the text
        assert result["context"][cit["start"] : cit["end"]] == chunk["text_preview"].strip()


def test_where_compares_numbers_as_numbers_and_a_repeated_key_matches_either(
    built_index: Path,
) -> None:
    first = _query_json(built_index, "coffee espresso", "--where", "chunk=0")
    assert first["chunks_used"]
    assert {c["metadata"]["chunk"] for c in first["chunks_used"]} == {0}
    ranged = _query_json(built_index, "coffee espresso", "--where", 'chunk={"$gte": 1}')
    assert ranged["chunks_used"]
    assert all(c["metadata"]["chunk"] >= 1 for c in ranged["chunks_used"])
    # A bilingual question: keyword search (the recommended profile) finds both languages.
    either = _query_json(
        built_index,
        "Arabic coffee and التعلم الآلي",
        "--where",
        "lang=ar",
        "--where",
        "lang=en",
    )
    assert {c["metadata"]["lang"] for c in either["chunks_used"]} == {"ar", "en"}


def test_template_auto_follows_the_query_language(built_index: Path) -> None:
    english = _query_json(built_index, "How is Arabic coffee served?", "--template", "auto")
    assert english["context"].startswith("📚 Retrieved Information:")
    assert english["template"] == "auto"
    arabic = _query_json(built_index, "ما هو التعلم الآلي؟", "--template", "auto")
    assert arabic["context"].startswith("📚 المعلومات المسترجعة:")


def test_a_bad_where_is_a_one_line_error(built_index: Path) -> None:
    done = run_zerda(["query", str(built_index), "coffee", "--where", 'year={"$gte": "x"}'])
    assert done.returncode == 1
    assert done.stderr.startswith("zerda: error: filter 'year'")
    assert len(done.stderr.splitlines()) == 1
    usage = run_zerda(["query", str(built_index), "coffee", "--where", "no-equals-sign"])
    assert usage.returncode == 2 and "KEY=VALUE" in usage.stderr


def test_a_saved_configuration_that_does_not_validate_is_a_one_line_error(
    tmp_path: Path,
) -> None:
    config = ContextEngineConfig()
    config.ranking.weight_recency = -2.5  # a negative weight: an error, not merely large

    async def save() -> None:
        async with AsyncContextEngine(config, validate=False) as engine:
            await engine.index([Chunk("nile", "The Nile flows north through Egypt.")])
            await engine.save(tmp_path / "bad")

    anyio.run(save)
    done = run_zerda(["query", str(tmp_path / "bad"), "anything"])
    assert done.returncode == 1
    assert "ranking.weight_recency" in done.stderr
    assert len(done.stderr.splitlines()) == 1
