"""Tests of the rule-based query analyzer against the documented behaviour."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import Any, cast

import pytest

from zerda_async.core import query_analyzer as qa
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import QueryAnalysis, QueryComplexity, QueryIntent
from zerda_async.core.query_analyzer import RuleBasedQueryAnalyzer, build_query_analyzer
from zerda_async.core.strategy import QueryAnalyzerStrategy


def _cp(codes: str) -> str:
    """Build a string from space-separated hexadecimal code points."""
    return "".join(chr(int(c, 16)) for c in codes.split())


def _analyze(query: Any, **overrides: Any) -> QueryAnalysis:
    cfg = ContextEngineConfig()
    for key, value in overrides.items():
        setattr(cfg.query_analyzer, key, value)
    return RuleBasedQueryAnalyzer(cfg).analyze(query)


# ---------------------------------------------------------------------------
# Data tables, checked code point by code point
# ---------------------------------------------------------------------------

_AR_SIGNAL_CODES: dict[QueryIntent, list[str]] = {
    QueryIntent.FACTUAL: [
        "0645 0627",
        "0645 0646",
        "0645 062A 0649",
        "0623 064A 0646",
        "0643 0645",
        "0645 0627 0020 0647 0648",
        "0645 0627 0020 0647 064A",
        "0645 0627 0020 0627 0633 0645",
        "0645 0646 0020 0647 0648",
        "0645 0646 0020 0647 064A",
    ],
    QueryIntent.REASONING: [
        "0644 0645 0627 0630 0627",
        "0643 064A 0641",
        "0645 0627 0020 0633 0628 0628",
        "0645 0627 0020 0639 0644 0629",
        "0641 0633 0651 0631",
        "0648 0636 0651 062D",
        "0627 0634 0631 062D",
    ],
    QueryIntent.COMPARATIVE: [
        "0642 0627 0631 0646",
        "0627 0644 0641 0631 0642",
        "0623 064A 0647 0645 0627",
        "0623 0641 0636 0644",
        "0645 0642 0627 0631 0646 0629",
        "0645 0642 0627 0628 0644",
        "0628 064A 0646",
    ],
    QueryIntent.PROCEDURAL: [
        "0643 064A 0641 064A 0629",
        "062E 0637 0648 0627 062A",
        "0637 0631 064A 0642 0629",
        "0643 064A 0641 0020 0623 0641 0639 0644",
        "0643 064A 0641 0020 064A 0645 0643 0646",
        "0622 0644 064A 0629",
    ],
    QueryIntent.CODE: [
        "0643 0648 062F",
        "0628 0631 0645 062C 0629",
        "062F 0627 0644 0629",
        "0643 0644 0627 0633",
        "0645 062B 0627 0644 0020 0643 0648 062F",
        "0627 0643 062A 0628 0020 0643 0648 062F",
        "0628 0631 0645 062C",
    ],
    QueryIntent.SUMMARIZE: [
        "0644 062E 0651 0635",
        "0645 0644 062E 0635",
        "0628 0627 062E 062A 0635 0627 0631",
        "0623 0639 0637 0646 064A 0020 0641 0643 0631 0629",
        "0634 0631 062D 0020 0645 062E 062A 0635 0631",
        "0645 0627 0020 0647 064A 0020 0627 0644 0646 0642 0627 0637",
    ],
}

_EN_SIGNALS: dict[QueryIntent, list[str]] = {
    QueryIntent.FACTUAL: ["what", "who", "when", "where", "which", "how many", "how much"],
    QueryIntent.REASONING: ["why", "how", "explain", "describe", "elaborate", "analyze", "reason"],
    QueryIntent.COMPARATIVE: [
        "compare",
        "difference",
        "versus",
        "vs",
        "better",
        "worse",
        "contrast",
    ],
    QueryIntent.PROCEDURAL: [
        "how to",
        "steps",
        "procedure",
        "process",
        "guide",
        "tutorial",
        "implement",
    ],
    QueryIntent.CODE: ["code", "function", "class", "implement", "script", "program", "snippet"],
    QueryIntent.SUMMARIZE: ["summarize", "summary", "overview", "briefly", "tldr", "main points"],
}


def test_intent_signal_tables_match_code_points() -> None:
    assert list(qa._INTENT_SIGNALS) == [
        QueryIntent.FACTUAL,
        QueryIntent.REASONING,
        QueryIntent.COMPARATIVE,
        QueryIntent.PROCEDURAL,
        QueryIntent.CODE,
        QueryIntent.SUMMARIZE,
    ]
    for intent, codes in _AR_SIGNAL_CODES.items():
        assert list(qa._INTENT_SIGNALS[intent]["ar"]) == [_cp(c) for c in codes]
        assert list(qa._INTENT_SIGNALS[intent]["en"]) == _EN_SIGNALS[intent]
        assert list(qa._INTENT_SIGNALS[intent]) == ["ar", "en"]


def test_arabic_signals_only_use_expected_letters() -> None:
    # Guards against look-alike Persian/Urdu letters slipping into the tables.
    for table in qa._INTENT_SIGNALS.values():
        for signal in table["ar"]:
            for ch in signal:
                assert ch == " " or unicodedata.name(ch).startswith("ARABIC ")
                assert ch == " " or 0x0621 <= ord(ch) <= 0x0652


def test_high_complexity_pattern_exact() -> None:
    arabic = "|".join(
        _cp(c)
        for c in (
            "0642 0627 0631 0646",
            "062D 0644 0644",
            "0642 064A 0651 0645",
            "0639 0648 0627 0645 0644",
            "0645 0632 0627 064A 0627 0020 0648 0639 064A 0648 0628",
            "0627 0644 0641 0631 0642 0020 0628 064A 0646",
        )
    )
    expected = r"\b(analyze|compare|evaluate|critique|pros.and.cons|trade.?off|" + arabic + r")\b"
    assert qa._COMPLEXITY_HIGH_SIGNALS.pattern == expected
    assert qa._COMPLEXITY_HIGH_SIGNALS.flags & re.I


def test_low_complexity_pattern_exact() -> None:
    expected = (
        "^("
        + "|".join(_cp(c) for c in ("0645 0627", "0645 0646", "0645 062A 0649", "0623 064A 0646"))
        + r"|what is|who is|when|where)\s+\w+"
    )
    assert qa._COMPLEXITY_LOW_SIGNALS.pattern == expected
    assert qa._COMPLEXITY_LOW_SIGNALS.flags & re.I


def test_stop_word_tables() -> None:
    assert len(qa._STOP_WORDS_AR) == 34
    assert len(qa._STOP_WORDS_EN) == 51
    hamza_entries = {
        _cp("0625 0644 0649"),
        _cp("0623 0646"),
        _cp("0625 0646"),
        _cp("0623 0646 062A"),
        _cp("0623 0648"),
    }
    assert hamza_entries <= qa._STOP_WORDS_AR
    for word in ("what", "who", "how", "why", "me", "about", "please", "which", "where", "when"):
        assert word not in qa._STOP_WORDS_EN
    assert {"the", "i", "get", "can", "not"} <= qa._STOP_WORDS_EN


def test_question_prefix_tables() -> None:
    assert list(qa._YN_AR) == [_cp("0647 0644"), _cp("0623")]
    assert qa._WH_EN == ("what", "who", "when", "where", "how", "why", "which")
    assert qa._YN_EN == ("is", "are", "was", "were", "do", "does", "did", "can", "could", "will")
    assert qa._WH_AR[3] == _cp("0623 064A 0646")


def test_entity_and_arabic_regexes() -> None:
    assert qa._ARABIC_RE.pattern == r"[\u0600-\u06FF]"
    assert qa._ENTITY_RE.pattern == (
        r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|[\u0600-\u06FF]{3,}(?:\s+[\u0600-\u06FF]{3,}){1,3})\b"
    )


def test_tables_are_immutable() -> None:
    with pytest.raises(TypeError):
        qa._INTENT_SIGNALS[QueryIntent.FACTUAL] = {}  # type: ignore[index]
    assert isinstance(qa._STOP_WORDS_AR, frozenset)


# ---------------------------------------------------------------------------
# §4 worked examples
# ---------------------------------------------------------------------------

_WORKED: list[tuple[str, dict[str, Any]]] = [
    (
        "ما هو التعلم الآلي؟",
        {
            "normalized": "ما هو التعلم الالي؟",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["التعلم", "الالي؟"],
            "entities": ["التعلم الالي"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "wh-question",
            "context_budget": 800,
        },
    ),
    (
        "What is machine learning?",
        {
            "normalized": "What is machine learning?",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["learning", "machine", "what"],
            "entities": ["What"],
            "is_arabic": False,
            "language": "en",
            "question_type": "wh-question",
            "context_budget": 800,
        },
    ),
    (
        "Compare BERT and GPT architectures",
        {
            "normalized": "Compare BERT and GPT architectures",
            "intent": "comparative",
            "complexity": "high",
            "keywords": ["architectures", "compare", "bert", "gpt"],
            "entities": ["Compare"],
            "is_arabic": False,
            "language": "en",
            "question_type": "open",
            "context_budget": 4000,
        },
    ),
    (
        "قارن بين التعلم الآلي والتعلم العميق، وما هي أبرز الفروقات؟",
        {
            "normalized": "قارن بين التعلم الالي والتعلم العميق، وما هي ابرز الفروقات؟",
            "intent": "factual",
            "complexity": "high",
            "keywords": [
                "الفروقات؟",
                "والتعلم",
                "العميق،",
                "التعلم",
                "الالي",
                "قارن",
                "ابرز",
                "وما",
            ],
            "entities": ["قارن بين التعلم الالي", "والتعلم العميق، وما", "ابرز الفروقات"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "open",
            "context_budget": 4000,
        },
    ),
    (
        "أين تقع مصر؟",
        {
            "normalized": "اين تقع مصر؟",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["مصر؟", "اين", "تقع"],
            "entities": ["اين تقع مصر"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "open",
            "context_budget": 800,
        },
    ),
    (
        "How do LSTM networks work?",
        {
            "normalized": "How do LSTM networks work?",
            "intent": "reasoning",
            "complexity": "low",
            "keywords": ["networks", "lstm", "work", "how"],
            "entities": ["How"],
            "is_arabic": False,
            "language": "en",
            "question_type": "wh-question",
            "context_budget": 800,
        },
    ),
    (
        "Explain the concept of deep learning",
        {
            "normalized": "Explain the concept of deep learning",
            "intent": "reasoning",
            "complexity": "low",
            "keywords": ["learning", "explain", "concept", "deep"],
            "entities": ["Explain"],
            "is_arabic": False,
            "language": "en",
            "question_type": "open",
            "context_budget": 800,
        },
    ),
    (
        "show me the class",
        {
            "normalized": "show me the class",
            "intent": "reasoning",
            "complexity": "low",
            "keywords": ["class", "show", "me"],
            "entities": [],
            "is_arabic": False,
            "language": "en",
            "question_type": "open",
            "context_budget": 800,
        },
    ),
    (
        "هل يمكن ذلك",
        {
            "normalized": "هل يمكن ذلك",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["يمكن", "هل"],
            "entities": ["يمكن ذلك"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "yes/no",
            "context_budget": 800,
        },
    ),
    (
        "Is Python good for data science in 2024?",
        {
            "normalized": "Is Python good for data science in 2024?",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["science", "python", "good", "data", "2024"],
            "entities": ["Is Python"],
            "is_arabic": False,
            "language": "en",
            "question_type": "yes/no",
            "context_budget": 800,
        },
    ),
    (
        "Summarize the pros and cons of FAISS vs Chroma",
        {
            "normalized": "Summarize the pros and cons of FAISS vs Chroma",
            "intent": "comparative",
            "complexity": "high",
            "keywords": ["summarize", "chroma", "faiss", "pros", "cons", "vs"],
            "entities": ["Summarize", "Chroma"],
            "is_arabic": False,
            "language": "en",
            "question_type": "open",
            "context_budget": 4000,
        },
    ),
    (
        "مَا هُوَ   الذَّكاءُ\tالاصطناعي",
        {
            "normalized": "ما هو الذكاء الاصطناعي",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["الاصطناعي", "الذكاء"],
            "entities": ["الذكاء الاصطناعي"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "wh-question",
            "context_budget": 800,
        },
    ),
    (
        "لخّص هذا النص",
        {
            "normalized": "لخص هذا النص",
            "intent": "factual",
            "complexity": "low",
            "keywords": ["النص", "لخص"],
            "entities": ["لخص هذا النص"],
            "is_arabic": True,
            "language": "ar",
            "question_type": "open",
            "context_budget": 800,
        },
    ),
]


@pytest.mark.parametrize(("query", "expected"), _WORKED, ids=[q for q, _ in _WORKED])
def test_worked_examples(query: str, expected: dict[str, Any]) -> None:
    result = _analyze(query).to_dict()
    assert result == {"original_query": query, **expected}


_EMPTY_EXPECTED: dict[str, Any] = {
    "normalized": "",
    "intent": "unknown",
    "complexity": "low",
    "keywords": [],
    "entities": [],
    "is_arabic": False,
    "language": "en",
    "question_type": "",
    "context_budget": 800,
}


@pytest.mark.parametrize("query", ["", "   ", None, "\t\n \u3000", "\u00a0"])
def test_empty_blank_and_none_give_empty_analysis(query: str | None) -> None:
    result = _analyze(query)
    assert result.to_dict() == {"original_query": query, **_EMPTY_EXPECTED}
    assert result.intent is QueryIntent.UNKNOWN
    assert result.complexity is QueryComplexity.LOW


def test_empty_analysis_uses_configured_low_budget() -> None:
    assert _analyze("", budget_low=111, budget_medium=222).context_budget == 111


def test_empty_analysis_does_not_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=qa.__name__):
        _analyze("   ")
    assert caplog.records == []


def test_custom_entities_worked_example() -> None:
    query = "How to implement a PyTorch training loop with RAG and New York Times data"
    result = _analyze(query, custom_entities=["pytorch", "RAG"]).to_dict()
    assert result == {
        "original_query": query,
        "normalized": query,
        "intent": "procedural",
        "complexity": "medium",
        "keywords": [
            "implement",
            "training",
            "pytorch",
            "times",
            "loop",
            "york",
            "data",
            "how",
            "rag",
            "new",
        ],
        "entities": ["How", "New York Times", "pytorch", "RAG"],
        "is_arabic": False,
        "language": "en",
        "question_type": "wh-question",
        "context_budget": 2000,
    }


# ---------------------------------------------------------------------------
# §4.1 boundary and tie-break vectors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "complexity", "budget"),
    [(12, "low", 800), (13, "medium", 2000), (20, "medium", 2000), (21, "high", 4000)],
)
def test_complexity_word_count_boundaries(words: int, complexity: str, budget: int) -> None:
    result = _analyze(" ".join(["cat"] * words))
    assert result.complexity.value == complexity
    assert result.context_budget == budget
    assert result.intent is QueryIntent.FACTUAL


@pytest.mark.parametrize(
    "query",
    ["abc مرحبا", "abcdefg مرحبا", "hello ؟؟؟", "١٢٣ abcdefg", "AB ما"],
)
def test_arabic_detection_true(query: str) -> None:
    result = _analyze(query)
    assert result.is_arabic is True
    assert result.language == "ar"


def test_arabic_detection_false() -> None:
    result = _analyze("abcdefghijklmn م")
    assert result.is_arabic is False
    assert result.language == "en"


_QTYPE_INTENT: list[tuple[str, str, str]] = [
    ("how are you", "wh-question", "reasoning"),
    ("Howdy partner", "wh-question", "reasoning"),
    ("are we there", "yes/no", "factual"),
    ("Do it", "yes/no", "factual"),
    ("which one", "wh-question", "factual"),
    ("Where's my car", "wh-question", "factual"),
    ("tell me", "open", "factual"),
    ("whoever wins", "wh-question", "factual"),
    ("هل تعلم", "yes/no", "factual"),
    ("كيف حالك", "wh-question", "reasoning"),
    ("لماذا", "wh-question", "factual"),
    ("أهلا", "open", "factual"),
    ("متى؟", "wh-question", "factual"),
    ("ماذا تعني", "wh-question", "factual"),
    ("why and how to code a function", "wh-question", "reasoning"),
    ("compare the better and worse options versus contrast", "open", "comparative"),
    ("give me a brief overview summary", "open", "summarize"),
    ("what is the difference between X and Y", "wh-question", "factual"),
    ("explain the procedure", "open", "reasoning"),
    ("كود برمجة دالة", "open", "code"),
    ("ما هي النقاط الرئيسية باختصار", "wh-question", "factual"),
]


@pytest.mark.parametrize(
    ("query", "question_type", "intent"), _QTYPE_INTENT, ids=[r[0] for r in _QTYPE_INTENT]
)
def test_question_type_and_intent(query: str, question_type: str, intent: str) -> None:
    result = _analyze(query)
    assert result.question_type == question_type
    assert result.intent.value == intent


def test_compare_vector_is_high_complexity() -> None:
    assert _analyze("compare the better and worse options versus contrast").complexity is (
        QueryComplexity.HIGH
    )


# ---------------------------------------------------------------------------
# Quirks
# ---------------------------------------------------------------------------


def test_normalize_strips_before_removing_diacritics_quirk() -> None:
    assert _analyze("abc \u064b").normalized == "abc "


def test_normalize_keeps_case_and_untouched_letters() -> None:
    # Tatweel, superscript alef, wasla alef and alef maqsura are left alone.
    text = "X\u0640\u0670\u0671\u0649 Y"
    assert _analyze(text).normalized == text


def test_normalize_folds_every_alef_form_and_diacritic() -> None:
    raw = "\u0625\u0623\u0622\u0627" + "".join(chr(c) for c in range(0x064B, 0x0653)) + "ب"
    assert _analyze(raw).normalized == "\u0627\u0627\u0627\u0627ب"


def test_original_query_is_not_stripped() -> None:
    result = _analyze("  what  is\nthis  ")
    assert result.original_query == "  what  is\nthis  "
    assert result.normalized == "what is this"


def test_hamza_stop_words_never_match_quirk() -> None:
    result = _analyze("ذهبت إلى المدرسة أو البيت")
    assert "الى" in result.keywords
    assert "او" in result.keywords


def test_only_detected_language_stop_words_apply() -> None:
    # An Arabic-detected query keeps English stop words as keywords.
    result = _analyze("the في مرحبا بالعالم")
    assert result.language == "ar"
    assert "the" in result.keywords
    assert "في" not in result.keywords


def test_both_language_signal_lists_always_used() -> None:
    assert _analyze("شكرا جزيلا compare").intent is QueryIntent.COMPARATIVE
    assert _analyze("hello world كود").intent is QueryIntent.CODE


def test_each_signal_counts_once() -> None:
    # "why why why" is one REASONING signal; "what"+"which" are two FACTUAL ones.
    assert _analyze("why why why what which").intent is QueryIntent.FACTUAL


def test_substring_signals_quirk() -> None:
    assert _analyze("decode classic").intent is QueryIntent.CODE
    assert _analyze("however").question_type == "wh-question"


@pytest.mark.parametrize("query", ["island tour", "dozens more", "canada trip"])
def test_prefix_yes_no_quirk(query: str) -> None:
    assert _analyze(query).question_type == "yes/no"


def test_arabic_wh_prefix_is_not_word_bounded() -> None:
    assert _analyze("كمبيوتر جديد").question_type == "wh-question"


def test_all_caps_acronyms_are_not_entities() -> None:
    assert _analyze("BERT GPT FAISS").entities == []


def test_keywords_score_ties_keep_first_occurrence() -> None:
    # Equal length and frequency: first occurrence wins.
    assert _analyze("zeta beta beta zeta gamma").keywords == ["zeta", "beta", "gamma"]


def test_keyword_frequency_outweighs_length() -> None:
    # 2 * (1 + 2 * 0.05) = 2.2 beats 1 * (1 + 13 * 0.05) = 1.65.
    assert _analyze("xy xy architectures").keywords == ["xy", "architectures"]


def test_keyword_single_chars_and_punctuation_dropped() -> None:
    assert _analyze("x y z ab!").keywords == ["ab"]


def test_entities_are_deduplicated_and_custom_use_configured_spelling() -> None:
    result = _analyze("Paris and Paris and paris", custom_entities=["PARIS", "Paris", "rome"])
    assert result.entities == ["Paris", "PARIS"]


def test_custom_entity_matches_as_substring() -> None:
    assert _analyze("use pytorchlightning", custom_entities=["PyTorch"]).entities == ["PyTorch"]


def test_custom_entities_unicode_case_insensitive() -> None:
    result = _analyze("تعلم بايثون الان", custom_entities=["بايثون", "NOT PRESENT"])
    assert result.entities[-1] == "بايثون"
    assert "NOT PRESENT" not in result.entities


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "threshold", "is_arabic"),
    [
        ("AI ذكاء", 0.0, True),
        ("hello", 0.0, True),
        ("AI ذكاء", 0.5, True),
        ("AI ذكاء", 0.9, False),
        ("مرحبا", 1.0, True),
        ("مرحبا", 1.5, False),
        ("ما هو Machine Learning؟", 0.5, False),
    ],
)
def test_arabic_threshold(query: str, threshold: float, is_arabic: bool) -> None:
    result = _analyze(query, arabic_threshold=threshold)
    assert result.is_arabic is is_arabic
    assert result.language == ("ar" if is_arabic else "en")


def test_arabic_threshold_is_inclusive() -> None:
    # 2 Arabic characters out of 4 non-space characters is exactly 0.5.
    assert _analyze("AB ما", arabic_threshold=0.5).is_arabic is True


def test_configured_budgets() -> None:
    budgets = {"budget_low": 111, "budget_medium": 222, "budget_high": 333}
    assert _analyze("Compare A and B", **budgets).context_budget == 333
    assert _analyze("hello", **budgets).context_budget == 111
    assert _analyze(" ".join(["cat"] * 15), **budgets).context_budget == 222


def test_config_is_read_live() -> None:
    cfg = ContextEngineConfig()
    analyzer = RuleBasedQueryAnalyzer(cfg)
    assert analyzer.cfg is cfg.query_analyzer
    assert analyzer.analyze("hello there").context_budget == 800
    cfg.query_analyzer.budget_low = 5
    cfg.query_analyzer.custom_entities.append("there")
    result = analyzer.analyze("hello there")
    assert result.context_budget == 5
    assert result.entities == ["there"]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_int_query_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'int' object has no attribute 'strip'"):
        _analyze(42)


def test_zero_query_is_falsy_and_gives_empty_analysis() -> None:
    result = _analyze(0)
    assert cast(object, result.original_query) == 0
    assert result.intent is QueryIntent.UNKNOWN


def test_list_query_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'list' object has no attribute 'strip'"):
        _analyze(["what is this"])


def test_bytes_query_raises_type_error() -> None:
    with pytest.raises(TypeError, match="cannot use a string pattern on a bytes-like object"):
        _analyze(b"what is this")


def test_non_str_custom_entity_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'int' object has no attribute 'lower'"):
        _analyze("hello", custom_entities=[1])


def test_custom_entity_ignored_for_blank_query() -> None:
    # The empty analysis never looks at the custom entities, even bad ones.
    assert _analyze("  ", custom_entities=[1]).entities == []


def test_huge_query_caps_keywords_and_entities() -> None:
    words = [f"Word{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(400)]
    query = " and ".join(words[:200]) + " " + " ".join(w.lower() for w in words[200:])
    result = _analyze(query)
    assert len(query.split()) == 599
    assert result.complexity is QueryComplexity.HIGH
    assert result.context_budget == 4000
    assert len(result.keywords) == 12
    assert len(result.entities) == 8
    assert result.entities == words[:8]


def test_four_hundred_word_query() -> None:
    query = " ".join(["data"] * 399 + ["Python"])
    result = _analyze(query)
    assert result.complexity is QueryComplexity.HIGH
    assert result.keywords == ["data", "python"]
    assert result.entities == ["Python"]
    assert result.question_type == "open"


def test_arabic_entities_are_two_to_four_words() -> None:
    text = "مدرسة كبيرة جديدة جميلة واسعة"
    assert _analyze(text).entities == ["مدرسة كبيرة جديدة جميلة"]


# ---------------------------------------------------------------------------
# Logging, factory, threads
# ---------------------------------------------------------------------------


def test_debug_log_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=qa.__name__):
        _analyze("What is machine learning?")
    [record] = caplog.records
    assert record.levelno == logging.DEBUG
    assert record.msg == "QueryAnalyzer | intent=%s | complexity=%s | keywords=%s"
    assert record.getMessage() == (
        "QueryAnalyzer | intent=factual | complexity=low | keywords=['learning', 'machine', 'what']"
    )


def test_build_query_analyzer_default() -> None:
    cfg = ContextEngineConfig()
    analyzer = build_query_analyzer(cfg)
    assert isinstance(analyzer, RuleBasedQueryAnalyzer)
    assert isinstance(analyzer, QueryAnalyzerStrategy)
    assert analyzer.analyze("hi").context_budget == 800


class _Custom(QueryAnalyzerStrategy):
    def __init__(self, size: int = 1) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def analyze(self, query: str) -> QueryAnalysis:
        return QueryAnalysis(original_query=query, normalized="custom")


def test_build_query_analyzer_returns_truthy_strategy() -> None:
    custom = _Custom()
    assert build_query_analyzer(ContextEngineConfig(), custom) is custom


def test_build_query_analyzer_replaces_falsy_strategy() -> None:
    result = build_query_analyzer(ContextEngineConfig(), _Custom(size=0))
    assert isinstance(result, RuleBasedQueryAnalyzer)


def test_analyzer_is_safe_from_threads() -> None:
    analyzer = RuleBasedQueryAnalyzer(ContextEngineConfig())
    expected = analyzer.analyze("Compare BERT and GPT architectures").to_dict()
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(50):
            out = analyzer.analyze("Compare BERT and GPT architectures").to_dict()
            with lock:
                results.append(out)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    assert all(r == expected for r in results)
