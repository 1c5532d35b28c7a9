"""Text analysers for keyword retrieval, on real Arabic and English strings."""

from __future__ import annotations

import pytest

from zerda_async.core.index.analysis import (
    ANALYZER_NAMES,
    analyzer_for,
    light_stem_arabic,
    normalize_arabic,
    stemmer_available,
)
from zerda_async.core.retrieval import tokenize
from zerda_async.errors import ConfigError

needs_stemmer = pytest.mark.skipif(not stemmer_available(), reason="PyStemmer not installed")


def test_documented_analyser_is_the_documented_rule() -> None:
    text = "متى بدأ الموسم؟ The Nile, flows north."
    assert analyzer_for("documented").tokenize(text) == tokenize(text)
    # The documented quirk the multilingual analyser fixes: "؟" is in the Arabic block.
    assert "الموسم؟" in tokenize(text)


def test_arabic_punctuation_splits_words() -> None:
    lite = analyzer_for("multilingual-lite")
    terms = lite.tokenize("متى بدأ الموسم؟ قال «المدير»، ثم غادر؛")
    assert "موسم" in terms and "مدير" in terms
    assert not any(ch in term for term in terms for ch in "؟،؛«»")


def test_normalisation_removes_tashkeel_tatweel_and_unifies_alef() -> None:
    assert normalize_arabic("مُحَمَّدٌ") == "محمد"
    assert normalize_arabic("جمـــيل") == "جميل"
    assert normalize_arabic("أحمد إبراهيم آمن ٱلله") == "احمد ابراهيم امن الله"
    lite = analyzer_for("multilingual-lite")
    assert lite.tokenize("الكِتَابُ") == lite.tokenize("الكتاب")


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("الكتاب", "كتاب"),
        ("والكتاب", "كتاب"),
        ("بالمدرسة", "مدرس"),
        ("للطلاب", "طلاب"),
        ("وقال", "قال"),
        ("ولد", "ولد"),  # too short to lose its first letter
        ("الحب", "حب"),
        ("مدرستها", "مدرست"),
    ],
)
def test_light_stemmer(word: str, stem: str) -> None:
    assert light_stem_arabic(word) == stem


def test_query_and_chunk_forms_meet() -> None:
    lite = analyzer_for("multilingual-lite")
    query = set(lite.tokenize("متى تأسست المكتبة؟"))
    chunk = set(lite.tokenize("تأسست مكتبةُ الإسكندرية، وبالمكتبة آلاف الكتب."))
    assert {"تاسست", "مكتب"} <= query & chunk


def test_english_stopwords_are_dropped() -> None:
    terms = analyzer_for("multilingual-lite").tokenize("What is the capital of Egypt?")
    assert terms == ["capital", "egypt"]


@needs_stemmer
def test_english_snowball_stemming() -> None:
    ml = analyzer_for("multilingual")
    assert ml.tokenize("The viruses were running; studies") == ["virus", "run", "studi"]
    assert ml.tokenize("virus") == ml.tokenize("Viruses")


@needs_stemmer
def test_snowball_arabic_variant() -> None:
    snow = analyzer_for("multilingual-snowball")
    assert snow.tokenize("بالمدرسة") == snow.tokenize("المدرسة") == ["مدرس"]
    # Snowball Arabic keeps "وال" that the light stemmer strips.
    assert snow.tokenize("والمكتبة") == ["والمكتب"]
    assert analyzer_for("multilingual").tokenize("والمكتبة") == ["مكتب"]


def test_digits_are_kept() -> None:
    assert "1990" in analyzer_for("multilingual-lite").tokenize("في عام 1990، بدأ")


def test_unknown_analyser_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"retriever\.text_analyzer 'porter'"):
        analyzer_for("porter")
    assert "multilingual" in ANALYZER_NAMES
