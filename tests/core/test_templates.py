"""Tests of the built-in context templates (pipeline spec §4)."""

from __future__ import annotations

import dataclasses

import pytest

from zerda_async.core.templates import (
    ARABIC_PLACEHOLDER,
    DEFAULT_TEMPLATE,
    ENGLISH_PLACEHOLDER,
    TEMPLATES,
    ContextTemplate,
)


def cps(text: str) -> list[int]:
    return [ord(c) for c in text]


def test_keys_in_documented_order() -> None:
    assert list(TEMPLATES) == ["arabic", "english", "minimal", "structured"]
    assert DEFAULT_TEMPLATE == "arabic"
    assert DEFAULT_TEMPLATE in TEMPLATES


def test_exact_strings() -> None:
    ar = TEMPLATES["arabic"]
    assert ar.header == "📚 المعلومات المسترجعة:\n"
    assert ar.chunk_fmt == "[المصدر: {source}]\n{text}"
    assert ar.chunk_fmt_score == "[المصدر: {source} | الدرجة: {score:.3f}]\n{text}"
    assert ar.footer == "\n─── نهاية السياق ───"
    en = TEMPLATES["english"]
    assert en.header == "📚 Retrieved Information:\n"
    assert en.chunk_fmt == "[Source: {source}]\n{text}"
    assert en.chunk_fmt_score == "[Source: {source} | Score: {score:.3f}]\n{text}"
    assert en.footer == "\n─── End of Context ───"
    mi = TEMPLATES["minimal"]
    assert (mi.header, mi.chunk_fmt, mi.chunk_fmt_score, mi.footer) == ("", "{text}", "{text}", "")
    st = TEMPLATES["structured"]
    assert st.header == "=== CONTEXT START ===\n"
    assert st.chunk_fmt == "--- [{idx}] {source} ---\n{text}"
    assert st.chunk_fmt_score == "--- [{idx}] {source} (score={score:.3f}) ---\n{text}"
    assert st.footer == "\n=== CONTEXT END ==="


def test_documented_lengths() -> None:
    expected = {
        "arabic": (23, 25, 47, 21),
        "english": (25, 25, 46, 23),
        "minimal": (0, 6, 6, 0),
        "structured": (22, 31, 51, 20),
    }
    for name, lengths in expected.items():
        t = TEMPLATES[name]
        assert (len(t.header), len(t.chunk_fmt), len(t.chunk_fmt_score), len(t.footer)) == lengths


def test_arabic_header_code_points() -> None:
    assert cps(TEMPLATES["arabic"].header) == [
        0x1F4DA, 0x20, 0x627, 0x644, 0x645, 0x639, 0x644, 0x648, 0x645, 0x627, 0x62A,
        0x20, 0x627, 0x644, 0x645, 0x633, 0x62A, 0x631, 0x62C, 0x639, 0x629, 0x3A, 0x0A,
    ]  # fmt: skip


def test_arabic_chunk_formats_code_points() -> None:
    source_label = [0x627, 0x644, 0x645, 0x635, 0x62F, 0x631]
    score_label = [0x627, 0x644, 0x62F, 0x631, 0x62C, 0x629]
    tmpl = TEMPLATES["arabic"]
    assert cps(tmpl.chunk_fmt) == [0x5B, *source_label, 0x3A, 0x20, *cps("{source}]\n{text}")]
    assert cps(tmpl.chunk_fmt_score) == [
        0x5B, *source_label, 0x3A, 0x20, *cps("{source}"), 0x20, 0x7C, 0x20,
        *score_label, 0x3A, 0x20, *cps("{score:.3f}"), 0x5D, 0x0A, *cps("{text}"),
    ]  # fmt: skip


def test_footers_code_points() -> None:
    assert cps(TEMPLATES["arabic"].footer) == [
        0x0A, 0x2500, 0x2500, 0x2500, 0x20, 0x646, 0x647, 0x627, 0x64A, 0x629, 0x20,
        0x627, 0x644, 0x633, 0x64A, 0x627, 0x642, 0x20, 0x2500, 0x2500, 0x2500,
    ]  # fmt: skip
    assert cps(TEMPLATES["english"].footer) == [
        0x0A, 0x2500, 0x2500, 0x2500, 0x20, *cps("End of Context"), 0x20, 0x2500, 0x2500, 0x2500,
    ]  # fmt: skip


def test_emoji_has_no_variation_selector() -> None:
    for name in ("arabic", "english"):
        header = TEMPLATES[name].header
        assert cps(header[:2]) == [0x1F4DA, 0x20]
        assert "\ufe0f" not in header


def test_placeholders_code_points() -> None:
    assert cps(ARABIC_PLACEHOLDER) == [
        0x644, 0x627, 0x20, 0x62A, 0x62A, 0x648, 0x641, 0x631, 0x20,
        0x645, 0x639, 0x644, 0x648, 0x645, 0x627, 0x62A, 0x2E,
    ]  # fmt: skip
    assert ENGLISH_PLACEHOLDER == "No information available."


def test_formats_fill_named_fields() -> None:
    st = TEMPLATES["structured"]
    assert st.chunk_fmt_score.format(idx=1, source="s", score=0.5, text="t") == (
        "--- [1] s (score=0.500) ---\nt"
    )
    en = TEMPLATES["english"]
    assert en.chunk_fmt_score.format(source="{x}", score=0.12345, text="{y}") == (
        "[Source: {x} | Score: 0.123]\n{y}"
    )
    # Unused fields are ignored by str.format.
    assert TEMPLATES["minimal"].chunk_fmt.format(source="s", text="t", score=1.0, idx=3) == "t"


def test_context_template_is_a_plain_container() -> None:
    t = ContextTemplate("h", "c", "cs", "f")
    assert (t.header, t.chunk_fmt, t.chunk_fmt_score, t.footer) == ("h", "c", "cs", "f")
    kw = ContextTemplate(header="h", chunk_fmt="c", chunk_fmt_score="cs", footer="f")
    assert kw == t


def test_templates_are_read_only() -> None:
    with pytest.raises(TypeError):
        TEMPLATES["bogus"] = TEMPLATES["arabic"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        TEMPLATES["arabic"].header = "x"  # type: ignore[misc]


def test_unknown_name_lookup_falls_back_with_get() -> None:
    assert TEMPLATES.get("bogus", TEMPLATES["arabic"]) is TEMPLATES["arabic"]
    assert "Arabic" not in TEMPLATES
