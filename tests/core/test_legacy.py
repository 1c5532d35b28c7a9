"""Tests of the tuple-based legacy helpers (spec: legacy_compat.md)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from support.chunks import bare_chunk

from zerda_async.core.counters import char_counter, make_token_counter
from zerda_async.core.legacy import (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)
from zerda_async.core.models import ScoredChunk, content_hash
from zerda_async.core.strategy import (
    CompressionStrategy,
    DeduplicationStrategy,
    RankingStrategy,
)

SEP = "\n---\n"


class Tokens:
    def encode(self, text: str) -> list[str]:
        return text.split()


def _pairs(*texts: str) -> list[tuple[Any, Any]]:
    return [(bare_chunk(doc_id=f"d{i}", text=t), 1.0 - i / 10) for i, t in enumerate(texts)]


def _ids(pairs: list[tuple[Any, Any]]) -> list[str]:
    return [chunk.doc_id for chunk, _ in pairs]


# ── validate_chunk ───────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        (
            object(),
            "Chunk is missing required attributes: ['doc_id', 'text']. "
            "Chunk must expose 'doc_id: str' and 'text: str'.",
        ),
        (
            bare_chunk(doc_id="d"),
            "Chunk is missing required attributes: ['text']. "
            "Chunk must expose 'doc_id: str' and 'text: str'.",
        ),
        (
            bare_chunk(text="x"),
            "Chunk is missing required attributes: ['doc_id']. "
            "Chunk must expose 'doc_id: str' and 'text: str'.",
        ),
        (bare_chunk(doc_id=1, text="x"), "chunk.doc_id must be str, got int."),
        (bare_chunk(doc_id="d", text=None), "chunk.text must be str, got NoneType."),
        (bare_chunk(doc_id="d", text=123), "chunk.text must be str, got int."),
        (bare_chunk(doc_id=None, text=b"x"), "chunk.text must be str, got bytes."),
    ],
)
def test_validate_chunk_messages(chunk: object, message: str) -> None:
    with pytest.raises(TypeError) as info:
        validate_chunk(chunk)
    assert str(info.value) == message


def test_validate_chunk_none() -> None:
    with pytest.raises(TypeError, match=r"\['doc_id', 'text'\]"):
        validate_chunk(None)


def test_validate_chunk_accepts_valid_and_str_subclasses() -> None:
    class MyStr(str):
        pass

    assert validate_chunk(bare_chunk(doc_id="d", text="")) is None  # type: ignore[func-returns-value]
    assert validate_chunk(bare_chunk(doc_id=MyStr("d"), text=MyStr("t"))) is None  # type: ignore[func-returns-value]


# ── PrefixDeduplication ──────────────────────────────────────────────────────


def test_prefix_short_text_raises_for_whole_call() -> None:
    with pytest.raises(ValueError) as info:
        PrefixDeduplication(100).deduplicate([(bare_chunk(doc_id="a", text="short"), 0.9)])
    assert str(info.value) == "prefix_length 100 exceeds chunk text length 5."


def test_prefix_default_length_is_100() -> None:
    assert PrefixDeduplication().prefix_length == 100


def test_prefix_spec_example_case_folded() -> None:
    pairs = _pairs("ABCdef", "abcxyz", "abd")
    assert _ids(PrefixDeduplication(3).deduplicate(pairs)) == ["d0", "d2"]


def test_prefix_exact_length_is_accepted() -> None:
    pairs = _pairs("abc")
    assert _ids(PrefixDeduplication(3).deduplicate(pairs)) == ["d0"]


def test_prefix_raises_even_after_earlier_work() -> None:
    pairs = _pairs("abcdef", "abcdef", "ab")
    with pytest.raises(ValueError, match=r"^prefix_length 3 exceeds chunk text length 2\.$"):
        PrefixDeduplication(3).deduplicate(pairs)


def test_prefix_whitespace_is_not_normalised() -> None:
    pairs = _pairs("a  bc", "a bcd")
    assert _ids(PrefixDeduplication(3).deduplicate(pairs)) == ["d0", "d1"]


def test_prefix_returns_new_tuples() -> None:
    pairs = _pairs("abc")
    out = PrefixDeduplication(3).deduplicate(pairs)
    assert out == pairs
    assert out[0] is not pairs[0]
    assert out[0][0] is pairs[0][0]


def test_prefix_zero_length_keeps_only_first() -> None:
    assert _ids(PrefixDeduplication(0).deduplicate(_pairs("a", "b", ""))) == ["d0"]


def test_prefix_empty_input() -> None:
    assert PrefixDeduplication().deduplicate([]) == []


# ── HashDeduplication ────────────────────────────────────────────────────────


def test_hash_dedup_normalises_case_and_whitespace() -> None:
    pairs = _pairs("Hello   World", " hello world\n", "hello worlds", "x")
    assert _ids(HashDeduplication().deduplicate(pairs)) == ["d0", "d2", "d3"]


def test_hash_signature_matches_content_hash() -> None:
    text = "  Mixed\tCase  text "
    expected = hashlib.sha256(b"mixed case text").hexdigest()
    assert content_hash(text) == expected


def test_hash_dedup_never_raises_on_short_text() -> None:
    assert _ids(HashDeduplication().deduplicate(_pairs("", "", "a"))) == ["d0", "d2"]


def test_hash_dedup_returns_new_tuples_and_keeps_scores() -> None:
    pairs = [(bare_chunk(doc_id="a", text="t"), 0.3), (bare_chunk(doc_id="b", text="T"), 0.9)]
    out = HashDeduplication().deduplicate(pairs)
    assert len(out) == 1
    assert out[0] is not pairs[0]
    assert out[0][1] == 0.3


def test_dedup_accepts_scored_chunks_as_pairs() -> None:
    scored = [
        ScoredChunk(chunk=bare_chunk(doc_id="a", text="same"), composite_score=0.5),
        ScoredChunk(chunk=bare_chunk(doc_id="b", text="SAME"), composite_score=0.7),
    ]
    out = HashDeduplication().deduplicate(scored)  # type: ignore[arg-type]
    assert [(c.doc_id, s) for c, s in out] == [("a", 0.5)]


def test_dedup_bad_items() -> None:
    with pytest.raises(ValueError):
        HashDeduplication().deduplicate([(bare_chunk(text="a"), 0.1, "extra")])  # type: ignore[list-item]
    with pytest.raises(AttributeError):
        HashDeduplication().deduplicate([("plain string", 0.1)])
    with pytest.raises(TypeError):
        HashDeduplication().deduplicate(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        PrefixDeduplication(1).deduplicate([(bare_chunk(text=None), 0.1)])


# ── ScoreRanking ─────────────────────────────────────────────────────────────


def test_score_ranking_spec_example_is_stable() -> None:
    items: list[tuple[Any, Any]] = [("a", 0.1), ("b", 0.9), ("c", 0.9)]
    assert ScoreRanking().rank(items, None) == [("b", 0.9), ("c", 0.9), ("a", 0.1)]


def test_score_ranking_returns_original_tuples() -> None:
    items: list[tuple[Any, Any]] = [("a", 0.1), ("b", 0.9)]
    out = ScoreRanking().rank(items, None)
    assert out[0] is items[1]
    assert out is not items


@pytest.mark.parametrize(
    ("max_chunks", "expected"),
    [
        (None, ["b", "c", "a"]),
        (0, []),
        (1, ["b"]),
        (2, ["b", "c"]),
        (99, ["b", "c", "a"]),
        (-1, ["b", "c"]),
    ],
)
def test_score_ranking_max_chunks(max_chunks: int | None, expected: list[str]) -> None:
    items: list[tuple[Any, Any]] = [("a", 0.1), ("b", 0.9), ("c", 0.5)]
    assert [c for c, _ in ScoreRanking().rank(items, max_chunks)] == expected


def test_score_ranking_max_chunks_is_required() -> None:
    with pytest.raises(TypeError):
        ScoreRanking().rank([])  # type: ignore[call-arg]


def test_score_ranking_bad_input() -> None:
    with pytest.raises(TypeError):
        ScoreRanking().rank([("a", 0.1), ("b", None)], None)
    with pytest.raises(TypeError):
        ScoreRanking().rank(None, None)  # type: ignore[arg-type]
    assert ScoreRanking().rank([], None) == []


# ── GreedyCompression ────────────────────────────────────────────────────────

PARTS = [f"part {i} " + "word " * 20 for i in range(5)]
WORKED = SEP.join(["HEADER", *PARTS, "FOOTER"])


def test_worked_context_shape() -> None:
    assert len(WORKED) == 577
    assert all(len(p) == 107 for p in PARTS)


def test_min_content_length_constant() -> None:
    assert GreedyCompression.MIN_CONTENT_LENGTH == 50


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (50, "HEADER"),
        (
            100,
            "HEADER\n---\npart 0 word word word word word word word word word word word word "
            "word...\n---\nFOOTER",
        ),
        (150, "HEADER" + SEP + PARTS[0] + SEP + "FOOTER"),
        (250, SEP.join(["HEADER", PARTS[0], PARTS[1], "FOOTER"])),
        (
            400,
            SEP.join(["HEADER", *PARTS[:3], "part 3" + " word" * 8 + "..."]),
        ),
        (1000, WORKED),
    ],
)
def test_greedy_worked_examples(target: int, expected: str) -> None:
    assert GreedyCompression().compress(WORKED, target, len, SEP) == expected


@pytest.mark.parametrize(
    ("target", "length"), [(50, 6), (100, 96), (150, 129), (250, 241), (400, 396), (1000, 577)]
)
def test_greedy_worked_lengths(target: int, length: int) -> None:
    assert len(GreedyCompression().compress(WORKED, target, len, SEP)) == length


def test_greedy_quirk_final_clamp_loses_footer() -> None:
    out = GreedyCompression().compress(WORKED, 400, len, SEP)
    assert "FOOTER" not in out
    assert out.endswith("\n---\npart 3 word word word word word word word word...")


def test_greedy_other_examples() -> None:
    gc = GreedyCompression()
    assert gc.compress("a b c d e f g h i j k l m n o p", 10, len, SEP) == "a b c d..."
    assert gc.compress("abc", 0, len, SEP) == ""
    assert gc.compress("", 0, len, SEP) == ""
    assert gc.compress("abc", -5, len, SEP) == ""


def test_greedy_two_parts_truncate_whole_context() -> None:
    context = "head " * 20 + SEP + "foot " * 20
    out = GreedyCompression().compress(context, 30, len, SEP)
    assert out == GreedyCompression._truncate(context, 30, len)
    assert len(out) <= 30


def test_greedy_quirk_skips_part_and_keeps_later_smaller_one() -> None:
    header, footer = "H", "F"
    big = "b" * 200
    first = "a" * 50
    small = "c" * 20
    context = SEP.join([header, first, big, small, footer])
    # overhead = 1 + 1 + 10 = 12; available = 100 - 12 = 88.
    # first fits (used 50); big does not fit and only 38 remain (<= 50): skipped;
    # small fits (used 70).
    out = GreedyCompression().compress(context, 100, len, SEP)
    assert out == SEP.join([header, first, small, footer])


def test_greedy_truncates_part_when_more_than_50_remain_then_stops() -> None:
    context = SEP.join(["H", "x " * 100, "y" * 10, "F"])
    # available = 100 - 12 = 88 > 50: the first part is truncated to 88 and the loop ends.
    out = GreedyCompression().compress(context, 100, len, SEP)
    assert "yyyyyyyyyy" not in out
    assert len(out) <= 100


def test_greedy_remaining_exactly_50_skips() -> None:
    context = SEP.join(["H", "a" * 12, "b" * 100, "F"])
    # available = 62 (target 74): part "a"*12 kept, remaining 50 -> the big part is skipped.
    out = GreedyCompression().compress(context, 74, len, SEP)
    assert out == SEP.join(["H", "a" * 12, "F"])


def test_greedy_header_only_when_little_room() -> None:
    context = SEP.join(["HEADER " * 10, "body " * 30, "FOOTER"])
    out = GreedyCompression().compress(context, 60, len, SEP)
    assert out == GreedyCompression._truncate("HEADER " * 10, 60, len)
    assert "FOOTER" not in out


def test_greedy_token_counter() -> None:
    count = make_token_counter(Tokens())
    part = "w " * 30
    context = SEP.join(["head", part, part, part, part, "foot"])
    # In tokens: overhead = 1 + 1 + 2 * 1 = 4, available = 66; two parts fit (60),
    # the next two are skipped (6 remain, not more than 50).
    out = GreedyCompression().compress(context, 70, count, SEP)
    assert out == SEP.join(["head", part, part, "foot"])
    assert GreedyCompression().compress(context, 10_000, count, SEP) == context


def test_greedy_default_counter_char_counter() -> None:
    assert GreedyCompression().compress(WORKED, 250, char_counter, SEP) == SEP.join(
        ["HEADER", PARTS[0], PARTS[1], "FOOTER"]
    )


def test_greedy_bad_input() -> None:
    gc = GreedyCompression()
    with pytest.raises(ValueError, match="empty separator"):
        gc.compress("x" * 100, 10, len, "")
    with pytest.raises(TypeError):
        gc.compress(None, 10, len, SEP)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gc.compress("abc", 1)  # type: ignore[call-arg]


def test_greedy_huge_context() -> None:
    context = SEP.join(["H", *("word " * 1000 for _ in range(200)), "F"])
    out = GreedyCompression().compress(context, 5000, len, SEP)
    assert len(out) <= 5000


# ── _truncate ────────────────────────────────────────────────────────────────


def test_truncate_backoff_is_80_percent() -> None:
    # cut = "aaaaaaa b" (9 chars); the space at 7 > 9 * 0.8 = 7.2? no -> no back-off.
    assert GreedyCompression._truncate("aaaaaaa bbbbbbbb", 12, len) == "aaaaaaa b..."
    # cut = "aaaaaaaa b" (10 chars); space at 8 > 8.0? no -> no back-off.
    assert GreedyCompression._truncate("aaaaaaaa bbbbbbb", 13, len) == "aaaaaaaa b..."
    # cut = "aaaaaaaaa b" (11 chars); space at 9 > 8.8 -> back off to the space.
    assert GreedyCompression._truncate("aaaaaaaaa bbbbbbb", 14, len) == "aaaaaaaaa..."


def test_truncate_fitting_text_unchanged_and_tiny_budgets() -> None:
    assert GreedyCompression._truncate("abc", 3, len) == "abc"
    assert GreedyCompression._truncate("abcdef", 2, len) == "..."
    assert GreedyCompression._truncate("abcdef", 0, len) == "..."


def test_truncate_is_staticmethod() -> None:
    assert isinstance(GreedyCompression.__dict__["_truncate"], staticmethod)


# ── structural-only interfaces ───────────────────────────────────────────────


def test_quirk_no_inheritance_from_legacy_abcs() -> None:
    assert not isinstance(PrefixDeduplication(), DeduplicationStrategy)
    assert not isinstance(HashDeduplication(), DeduplicationStrategy)
    assert not isinstance(ScoreRanking(), RankingStrategy)
    assert not isinstance(GreedyCompression(), CompressionStrategy)
