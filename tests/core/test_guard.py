"""Tests of the context guard (spec: guard_and_learning.md §1)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.guard import ContextGuard
from zerda_async.core.models import QueryAnalysis
from zerda_async.core.strategy import ContextGuardStrategy

ARABIC_PLACEHOLDER = "📚 المعلومات المسترجعة:\n---\nلا تتوفر معلومات.\n---\n─── نهاية السياق ───"
NO_SOURCE = "no valid source found in context."
EMPTY = "context is empty ⚠"


def _analysis(query: str = "q") -> QueryAnalysis:
    return QueryAnalysis(original_query=query, normalized=query)


def _validate(context: Any, cfg: ContextEngineConfig | None = None) -> tuple[bool, list[str]]:
    guard = ContextGuard(cfg or ContextEngineConfig())
    return guard.validate(context, "q", _analysis())


def _pair_embed(query_vec: list[float], ctx_vec: list[float], query: str = "q") -> Any:
    def embed(text: str) -> np.ndarray[Any, Any]:
        return np.array(query_vec if text == query else ctx_vec, dtype=float)

    return embed


def _relevance_cfg(threshold: float = 0.10) -> ContextEngineConfig:
    cfg = ContextEngineConfig()
    cfg.guard.check_relevance = True
    cfg.guard.relevance_threshold = threshold
    return cfg


# ── spec §1.2 example table ──────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ("", (False, [EMPTY])),
        ("   ", (False, [EMPTY])),
        ("short", (False, ["context is too short (5 characters < 10).", NO_SOURCE])),
        ("hello world no markers here", (True, [NO_SOURCE])),
        ("[: x", (False, ["context is too short (4 characters < 10)."])),
        ("[anything: no", (True, [NO_SOURCE])),
        ("a --- b", (False, ["context is too short (7 characters < 10)."])),
        ("[Source: x] abc", (True, [])),
        ("[المصدر: x] abc", (True, [NO_SOURCE])),
        (
            "x" * 9000,
            (True, ["context is too long (9000 > 8000). consider compressing it.", NO_SOURCE]),
        ),
        (ARABIC_PLACEHOLDER, (True, [])),
    ],
)
def test_spec_example_table(context: str, expected: tuple[bool, list[str]]) -> None:
    assert _validate(context) == expected


def test_arabic_placeholder_is_69_code_points() -> None:
    assert len(ARABIC_PLACEHOLDER) == 69


def test_empty_warning_has_no_variation_selector() -> None:
    _, warnings = _validate("")
    assert warnings[0].endswith(" \u26a0")
    assert "\ufe0f" not in warnings[0]


# ── source regex quirks ──────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "context",
    ["[source: a] text", "[Source:x]", "prefix [: suffix text", "text with --- inside it"],
)
def test_source_markers_that_match(context: str) -> None:
    assert NO_SOURCE not in _validate(context)[1]


@pytest.mark.parametrize(
    "context",
    [
        "[SOURCE: a] text here",
        "[Src: a] text here",
        "[foo: bar] not a source",
        "[ Source: spaced ]",
        "two -- dashes only",
        "[source] no colon",
    ],
)
def test_source_markers_that_do_not_match(context: str) -> None:
    assert _validate(context) == (True, [NO_SOURCE])


def test_source_check_can_be_disabled() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.check_source_coverage = False
    assert _validate("plain text without markers", cfg) == (True, [])


# ── check order, pass/fail semantics ─────────────────────────────────────────


def test_too_short_and_too_long_together_keep_order() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.min_context_length = 100
    cfg.guard.max_context_length = 50
    context = "what is machine learning? machine learning is great"
    assert _validate(context, cfg) == (
        False,
        [
            "context is too short (51 characters < 100).",
            "context is too long (51 > 50). consider compressing it.",
            NO_SOURCE,
        ],
    )


def test_empty_short_circuits_before_length_checks() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.min_context_length = 100
    assert _validate("\n\t", cfg) == (False, [EMPTY])


def test_empty_with_check_empty_off_runs_other_checks() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.check_empty = False
    assert _validate("\n\t", cfg) == (
        False,
        ["context is too short (2 characters < 10).", NO_SOURCE],
    )
    assert _validate("", cfg) == (
        False,
        ["context is too short (0 characters < 10).", NO_SOURCE],
    )


def test_boundaries_are_strict() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.max_context_length = 20
    assert _validate("[Source:]" + "x" * 1, cfg) == (True, [])  # exactly 10
    assert _validate("[Source:]" + "x" * 11, cfg) == (True, [])  # exactly 20
    assert _validate("[Source:]" + "x" * 12, cfg)[1] == [
        "context is too long (21 > 20). consider compressing it."
    ]


def test_min_length_zero_never_too_short() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.min_context_length = 0
    assert _validate("xxxxxxxxx", cfg) == (True, [NO_SOURCE])


def test_float_limits_are_printed_with_str() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.min_context_length = 10.0  # type: ignore[assignment]
    assert _validate("[: x", cfg)[1] == ["context is too short (4 characters < 10.0)."]


def test_length_counts_code_points() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.min_context_length = 3
    assert _validate("📚📚📚", cfg) == (True, [NO_SOURCE])


def test_disabled_guard_returns_pass_without_checks() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.enabled = False
    assert _validate("", cfg) == (True, [])
    assert _validate("xxxxxxxxx", cfg) == (True, [])


def test_enabled_flag_is_snapshotted_at_construction() -> None:
    cfg = ContextEngineConfig()
    guard = ContextGuard(cfg)
    cfg.guard.enabled = False
    assert guard.validate("", "q", _analysis()) == (False, [EMPTY])

    cfg2 = ContextEngineConfig()
    cfg2.guard.enabled = False
    off_guard = ContextGuard(cfg2)
    cfg2.guard.enabled = True
    assert off_guard.validate("", "q", _analysis()) == (True, [])


def test_thresholds_are_read_live() -> None:
    cfg = ContextEngineConfig()
    guard = ContextGuard(cfg)
    assert guard.validate("[: x", "q", _analysis())[0] is False
    cfg.guard.min_context_length = 2
    assert guard.validate("[: x", "q", _analysis()) == (True, [])


def test_analysis_is_not_read() -> None:
    guard = ContextGuard(ContextEngineConfig())
    assert guard.validate("[Source: x] abc", "q", None) == (True, [])  # type: ignore[arg-type]


def test_is_a_guard_strategy() -> None:
    assert isinstance(ContextGuard(ContextEngineConfig()), ContextGuardStrategy)


# ── relevance (spec §1.3 table) ──────────────────────────────────────────────

RELEVANCE_CONTEXT = "[Source: a] some context text"


@pytest.mark.parametrize(
    ("query_vec", "ctx_vec", "threshold", "expected"),
    [
        (
            [1, 0],
            [0, 1],
            0.10,
            (False, ["context is not relevant to the query (similarity=0.000 < 0.1)."]),
        ),
        ([1, 0], [1, 1], 0.10, (True, [])),
        (
            [0.05, 1],
            [1, 0],
            0.10,
            (False, ["context is not relevant to the query (similarity=0.050 < 0.1)."]),
        ),
        (
            [0.05, 1],
            [1, 0],
            0.25,
            (False, ["context is not relevant to the query (similarity=0.050 < 0.25)."]),
        ),
    ],
)
def test_relevance_vectors(
    query_vec: list[float],
    ctx_vec: list[float],
    threshold: float,
    expected: tuple[bool, list[str]],
) -> None:
    guard = ContextGuard(_relevance_cfg(threshold), embed_fn=_pair_embed(query_vec, ctx_vec))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == expected


def test_relevance_exception_passes_and_logs_debug(caplog: pytest.LogCaptureFixture) -> None:
    def boom(text: str) -> np.ndarray[Any, Any]:
        raise RuntimeError("embedder down")

    guard = ContextGuard(_relevance_cfg(), embed_fn=boom)
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.guard"):
        assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])
    assert "ContextGuard: failed to check relevance: embedder down" in caplog.messages


def test_relevance_zero_vector_fails() -> None:
    guard = ContextGuard(_relevance_cfg(), embed_fn=_pair_embed([0, 0], [1, 0]))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (
        False,
        ["context is not relevant to the query (similarity=0.000 < 0.1)."],
    )


def test_relevance_zero_vector_passes_with_zero_threshold() -> None:
    guard = ContextGuard(_relevance_cfg(0.0), embed_fn=_pair_embed([0, 0], [1, 0]))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])


def test_relevance_non_array_result_passes() -> None:
    guard = ContextGuard(_relevance_cfg(0.99), embed_fn=lambda text: [1.0, 0.0])
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])


def test_relevance_mismatched_dimensions_pass() -> None:
    guard = ContextGuard(_relevance_cfg(0.99), embed_fn=_pair_embed([1, 0, 0], [1, 0]))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])


def test_relevance_non_numeric_threshold_passes() -> None:
    cfg = _relevance_cfg()
    cfg.guard.relevance_threshold = "high"  # type: ignore[assignment]
    guard = ContextGuard(cfg, embed_fn=_pair_embed([1, 0], [0, 1]))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])


def test_relevance_flattens_2d_embeddings() -> None:
    def embed(text: str) -> np.ndarray[Any, Any]:
        return np.array([[1.0, 0.0]]) if text == "q" else np.array([[0.0], [1.0]])

    guard = ContextGuard(_relevance_cfg(), embed_fn=embed)
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis())[0] is False


def test_relevance_embeds_query_then_first_512_code_points() -> None:
    calls: list[str] = []

    def embed(text: str) -> np.ndarray[Any, Any]:
        calls.append(text)
        return np.array([1.0, 0.0])

    guard = ContextGuard(_relevance_cfg(), embed_fn=embed)
    context = "[Source: a] " + "é" * 1000
    assert guard.validate(context, "the query", _analysis()) == (True, [])
    assert calls == ["the query", context[:512]]
    assert len(calls[1]) == 512


def test_relevance_skipped_without_embed_fn() -> None:
    guard = ContextGuard(_relevance_cfg(0.99))
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])


def test_relevance_not_run_when_flag_off() -> None:
    calls: list[str] = []

    def embed(text: str) -> np.ndarray[Any, Any]:
        calls.append(text)
        return np.zeros(2)

    guard = ContextGuard(ContextEngineConfig(), embed_fn=embed)
    assert guard.validate(RELEVANCE_CONTEXT, "q", _analysis()) == (True, [])
    assert calls == []


def test_relevance_runs_after_too_short_and_appends_last() -> None:
    guard = ContextGuard(_relevance_cfg(), embed_fn=_pair_embed([1, 0], [0, 1]))
    assert guard.validate("--- ", "q", _analysis()) == (
        False,
        [
            "context is too short (4 characters < 10).",
            "context is not relevant to the query (similarity=0.000 < 0.1).",
        ],
    )


def test_check_relevance_direct_call() -> None:
    guard = ContextGuard(_relevance_cfg(), embed_fn=_pair_embed([1, 0], [1, 1]))
    assert guard._check_relevance("ctx", "q") == (True, "")
    no_embed = ContextGuard(_relevance_cfg())
    assert no_embed._check_relevance("ctx", "q") == (True, "")


# ── logging ──────────────────────────────────────────────────────────────────


def test_warning_log_joins_warnings(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.guard"):
        _validate("short")
    assert caplog.records[-1].levelno == logging.WARNING
    assert caplog.messages[-1] == (
        "ContextGuard: context is too short (5 characters < 10). | " + NO_SOURCE
    )


def test_debug_log_when_valid(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.guard"):
        _validate("[Source: x] abc")
    assert caplog.messages == ["ContextGuard: ✓ context is valid (length=15)"]


def test_empty_and_disabled_do_not_log(caplog: pytest.LogCaptureFixture) -> None:
    cfg = ContextEngineConfig()
    cfg.guard.enabled = False
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.guard"):
        _validate("")
        _validate("", cfg)
    assert caplog.records == []


# ── bad input ────────────────────────────────────────────────────────────────


def test_none_context_raises_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _validate(None)


def test_none_context_without_empty_check_raises_type_error() -> None:
    cfg = ContextEngineConfig()
    cfg.guard.check_empty = False
    with pytest.raises(TypeError):
        _validate(None, cfg)


def test_non_string_context_raises() -> None:
    with pytest.raises(AttributeError):
        _validate(12345)


def test_huge_context_only_warns() -> None:
    passed, warnings = _validate("[Source: x] " + "y" * 1_000_000)
    assert passed is True
    assert warnings == ["context is too long (1000012 > 8000). consider compressing it."]
