"""Tests of ChunkFilter (pipeline spec §2 and quirks §7.1-7.4)."""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from support.chunks import Chunk

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.filtering import ChunkFilter
from zerda_async.core.models import ScoredChunk
from zerda_async.core.strategy import ChunkFilterStrategy

Vec = NDArray[Any] | None


def sc(text: str, doc_id: str = "") -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(doc_id, text))


def ids(chunks: list[ScoredChunk]) -> list[str]:
    return [c.doc_id for c in chunks]


def make(**filter_overrides: Any) -> ChunkFilter:
    cfg = ContextEngineConfig()
    for key, value in filter_overrides.items():
        setattr(cfg.filter_cfg, key, value)
    return ChunkFilter(cfg)


def v(*xs: float) -> NDArray[Any]:
    return np.asarray(xs, dtype=np.float64)


# §2.8 single-chunk decisions: (raw text, kept?)
FILTER_VECTORS: list[tuple[str, bool]] = [
    ("", False),
    ("   ", False),
    ("-" * 20, False),
    ("_" * 20, False),
    (" " * 20, False),
    ("==================== ", True),
    ("page 123456789012345", False),
    ("Page 123456789012345", True),
    ("صفحة 123456789012345", False),
    ("page 12 and more text here", True),
    ("page 12", False),
    ("Page 12", False),
    ("صفحة 5", False),
    ("short text", False),
    ("twenty chars here!!!", True),
    ("  twenty chars here  ", True),
    ("x" * 4000, True),
    ("x" * 4001, False),
]


@pytest.mark.parametrize(("text", "kept"), FILTER_VECTORS)
def test_filter_vectors(text: str, kept: bool) -> None:
    out = make().filter([sc(text, "d")])
    assert ids(out) == (["d"] if kept else [])


def test_vector_lengths_match_spec() -> None:
    assert len("==================== ") == 21
    assert len("صفحة 123456789012345") == 20
    assert len("  twenty chars here  ") == 21


def test_noise_decides_before_length() -> None:
    flt = make()
    # Each of these is long enough, so only a noise pattern can drop it.
    assert (
        flt._filter_noise([sc("-" * 20), sc("." * 5), sc("*****"), sc("page 123456789012345")])
        == []
    )
    # Four rule characters are not enough for the rule pattern.
    assert len(flt._filter_noise([sc("----")])) == 1


def test_noise_is_case_sensitive_quirk() -> None:
    flt = make()
    assert len(flt._filter_noise([sc("Page 3")])) == 1
    assert flt._filter_noise([sc("page 3")]) == []


def test_noise_match_is_anchored_at_start_only() -> None:
    flt = make(noise_patterns=["ads?"])
    kept = flt.filter([sc("ads and more text to pass", "a"), sc("no ads here at all, really", "b")])
    assert ids(kept) == ["b"]


def test_noise_uses_stripped_text() -> None:
    flt = make()
    assert flt._filter_noise([sc("   page 42   \n")]) == []


def test_noise_patterns_compiled_once() -> None:
    cfg = ContextEngineConfig()
    flt = ChunkFilter(cfg)
    cfg.filter_cfg.noise_patterns = ["^keep"]
    assert ids(flt.filter([sc("keep this text, it is long", "k")])) == ["k"]
    assert flt.filter([sc("-" * 30, "r")]) == []


def test_invalid_noise_pattern_raises_re_error() -> None:
    cfg = ContextEngineConfig()
    cfg.filter_cfg.noise_patterns = ["("]
    with pytest.raises(re.error):
        ChunkFilter(cfg)


def test_empty_noise_patterns_keep_blank_long_text() -> None:
    assert ids(make(noise_patterns=[]).filter([sc(" " * 25, "b")])) == ["b"]


def test_length_bounds_are_live_and_inclusive() -> None:
    cfg = ContextEngineConfig()
    flt = ChunkFilter(cfg)
    chunks = [sc("x" * n, str(n)) for n in (4, 5, 6, 7)]
    cfg.filter_cfg.min_chunk_length = 5
    cfg.filter_cfg.max_chunk_length = 6
    assert ids(flt._filter_length(chunks)) == ["5", "6"]


def test_length_counts_code_points() -> None:
    # 20 emoji are 20 code points (80 UTF-8 bytes).
    assert ids(make().filter([sc("📚" * 20, "e")])) == ["e"]
    assert make().filter([sc("📚" * 19, "e")]) == []


def test_hash_dedup_keeps_first_occurrence() -> None:
    chunks = [
        sc("Machine   learning is great for data", "a"),
        sc("machine learning IS great for data", "b"),
        sc("Something else entirely, long enough", "c"),
        sc("  MACHINE learning is great\tfor data ", "d"),
    ]
    assert ids(make().filter(chunks)) == ["a", "c"]


def test_filter_order_is_noise_length_hash_and_input_order() -> None:
    chunks = [
        sc("zeta text long enough to pass", "z"),
        sc("page 7", "p"),
        sc("alpha text long enough to pass", "a"),
        sc("zeta text long enough to pass", "z2"),
        sc("tiny", "t"),
    ]
    assert ids(make().filter(chunks)) == ["z", "a"]


def test_filter_returns_new_list_and_same_objects() -> None:
    chunks = [sc("a text that is long enough", "a")]
    out = make().filter(chunks)
    assert out is not chunks
    assert out[0] is chunks[0]
    assert len(chunks) == 1


def test_filter_empty_list() -> None:
    assert make().filter([]) == []


def test_filter_ignores_dedup_method_quirk() -> None:
    for method in ("hash", "prefix", "semantic", "bogus"):
        flt = make(dedup_method=method, prefix_length=5)
        chunks = [
            sc("same prefix but different one", "a"),
            sc("same prefix but different two", "b"),
        ]
        assert ids(flt.filter(chunks)) == ["a", "b"]


def test_chunk_filter_is_not_a_strategy_subclass_quirk() -> None:
    flt = make()
    assert not isinstance(flt, ChunkFilterStrategy)
    assert callable(flt.filter)


def test_filter_logs_only_when_changed(caplog: pytest.LogCaptureFixture) -> None:
    flt = make()
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.filtering"):
        flt.filter([sc("a text that is long enough", "a")])
        assert caplog.records == []
        flt.filter([sc("a text that is long enough", "a"), sc("tiny", "t")])
    assert [r.getMessage() for r in caplog.records] == ["ChunkFilter: 2 → 1 (حُذف 1)"]


def test_filter_none_raises_type_error() -> None:
    with pytest.raises(TypeError):
        make().filter(None)  # type: ignore[arg-type]


def test_filter_rejects_non_chunks() -> None:
    with pytest.raises(AttributeError):
        make().filter(["plain string"])  # type: ignore[list-item]


def test_filter_huge_pool() -> None:
    chunks = [sc(f"chunk number {i} with enough text", str(i)) for i in range(5000)]
    chunks += [sc(f"chunk number {i} with enough text", f"dup{i}") for i in range(5000)]
    assert ids(make().filter(chunks)) == [str(i) for i in range(5000)]


# --- semantic dedup (§2.6-2.8) ---------------------------------------------

THREE = ["first chunk with enough text", "second chunk with enough text", "third chunk enough text"]


def three_chunks() -> list[ScoredChunk]:
    return [sc(t, str(i)) for i, t in enumerate(THREE)]


def test_semantic_vector_near_duplicate() -> None:
    out = make()._dedup_semantic(three_chunks(), [v(1, 0), v(0.99, 0.05), v(0, 1)])
    assert ids(out) == ["0", "2"]


def test_semantic_vector_none_always_kept() -> None:
    out = make()._dedup_semantic(three_chunks(), [v(1, 0), None, v(1, 0)])
    assert ids(out) == ["0", "1"]


def test_filter_with_embeddings_skips_semantic_after_filtering_quirk() -> None:
    chunks = [*three_chunks(), sc("tiny", "3")]
    embs: list[Vec] = [v(1, 0), v(0.99, 0.05), v(0, 1), v(1, 0)]
    assert ids(make().filter_with_embeddings(chunks, embs)) == ["0", "1", "2"]


def test_filter_with_embeddings_applies_semantic_when_nothing_filtered() -> None:
    embs: list[Vec] = [v(1, 0), v(0.99, 0.05), v(0, 1)]
    assert ids(make().filter_with_embeddings(three_chunks(), embs)) == ["0", "2"]


def test_semantic_length_mismatch_returns_same_list() -> None:
    chunks = three_chunks()
    out = make()._dedup_semantic(chunks, [v(1, 0), v(1, 0)])
    assert out is chunks


def test_semantic_matching_lengths_returns_new_list() -> None:
    chunks = three_chunks()
    out = make()._dedup_semantic(chunks, [v(1, 0), v(0, 1), None])
    assert out is not chunks
    assert ids(out) == ["0", "1", "2"]


def test_semantic_zero_vectors_never_compared() -> None:
    out = make(semantic_sim_threshold=-1.0)._dedup_semantic(
        three_chunks(), [v(0, 0), v(0, 0), v(0, 0)]
    )
    assert ids(out) == ["0", "1", "2"]


def test_semantic_threshold_is_inclusive() -> None:
    out = make(semantic_sim_threshold=1.0)._dedup_semantic(
        three_chunks(), [v(1, 0), v(2, 0), v(0, 3)]
    )
    assert ids(out) == ["0", "2"]


def test_semantic_opposite_vectors_with_negative_threshold() -> None:
    embs: list[Vec] = [v(1, 0), v(-1, 0), v(0, 1)]
    assert ids(make(semantic_sim_threshold=-1.0)._dedup_semantic(three_chunks(), embs)) == ["0"]
    assert ids(make(semantic_sim_threshold=-0.5)._dedup_semantic(three_chunks(), embs)) == [
        "0",
        "1",
    ]


def test_semantic_threshold_read_live() -> None:
    cfg = ContextEngineConfig()
    flt = ChunkFilter(cfg)
    embs: list[Vec] = [v(1, 0), v(0.99, 0.05), v(0, 1)]
    cfg.filter_cfg.semantic_sim_threshold = 0.9999
    assert ids(flt._dedup_semantic(three_chunks(), embs)) == ["0", "1", "2"]


def test_semantic_dropped_chunk_no_longer_drops_others() -> None:
    # 1 duplicates 0 and is dropped; 2 is similar to 1 only, so it survives.
    a = v(1, 0)
    b = v(np.cos(0.3), np.sin(0.3))
    c = v(np.cos(0.6), np.sin(0.6))
    out = make(semantic_sim_threshold=float(np.cos(0.35)))._dedup_semantic(
        three_chunks(), [a, b, c]
    )
    assert ids(out) == ["0", "2"]


def test_semantic_flattens_multi_dimensional_embeddings() -> None:
    embs: list[Vec] = [v(1, 0).reshape(1, 2), v(1, 0).reshape(2, 1), v(0, 1).reshape(1, 2)]
    assert ids(make()._dedup_semantic(three_chunks(), embs)) == ["0", "2"]


def test_semantic_single_or_no_embedding() -> None:
    assert ids(make()._dedup_semantic(three_chunks()[:1], [v(1, 0)])) == ["0"]
    assert make()._dedup_semantic([], []) == []


def test_semantic_pairwise_formula_matches_float_division() -> None:
    rng = np.random.default_rng(7)
    embs = [rng.normal(size=8) for _ in range(40)]
    chunks = [sc(f"chunk {i} with plenty of text", str(i)) for i in range(40)]
    threshold = 0.3
    keep = [True] * 40
    for i in range(40):
        if not keep[i]:
            continue
        for j in range(i + 1, 40):
            if keep[j]:
                denom = np.linalg.norm(embs[i]) * np.linalg.norm(embs[j])
                if float(np.dot(embs[i], embs[j]) / denom) >= threshold:
                    keep[j] = False
    expected = [str(i) for i in range(40) if keep[i]]
    embs_opt: list[Vec] = list(embs)
    assert ids(make(semantic_sim_threshold=threshold)._dedup_semantic(chunks, embs_opt)) == (
        expected
    )


def test_semantic_embeddings_none_raises_type_error() -> None:
    with pytest.raises(TypeError):
        make()._dedup_semantic(three_chunks(), None)  # type: ignore[arg-type]


def test_semantic_plain_lists_are_not_arrays() -> None:
    # The documented code calls ``.flatten()`` on each embedding.
    with pytest.raises(AttributeError):
        make()._dedup_semantic(three_chunks(), [[1.0, 0.0], [1.0, 0.0], None])  # type: ignore[list-item]


def test_semantic_dimension_mismatch_raises_value_error() -> None:
    with pytest.raises(ValueError):
        make()._dedup_semantic(three_chunks(), [v(1, 0), v(1, 0, 0), None])


def test_semantic_huge_pool_of_identical_vectors() -> None:
    n = 2000
    chunks = [sc(f"chunk {i} with plenty of text", str(i)) for i in range(n)]
    embs: list[Vec] = [v(1, 1)] * n
    assert ids(make()._dedup_semantic(chunks, embs)) == ["0"]


def test_semantic_threshold_float_edge() -> None:
    a = v(0.3, 0.7, 0.1)
    b = v(0.2, 0.9, -0.4)
    cos = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    embs: list[Vec] = [a, b, None]
    assert ids(make(semantic_sim_threshold=cos)._dedup_semantic(three_chunks(), embs)) == [
        "0",
        "2",
    ]
    above = float(np.nextafter(cos, np.inf))
    assert ids(make(semantic_sim_threshold=above)._dedup_semantic(three_chunks(), embs)) == [
        "0",
        "1",
        "2",
    ]
