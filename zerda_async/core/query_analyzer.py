"""Rule-based query understanding: language, intent, complexity, keywords, entities.

The analyzer uses word lists and regular expressions only (no model).  Its data
tables and matching rules reproduce the documented package exactly, including
the surprising parts: text is normalised (diacritics dropped, hamza forms of
alef folded to a bare alef) *before* matching, so table entries spelled with a
hamza or a shadda can never match; intent signals match as plain substrings in
both languages; and intent ties go to the intent declared first.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType

from .config import ContextEngineConfig
from .models import QueryAnalysis, QueryComplexity, QueryIntent
from .strategy import QueryAnalyzerStrategy

__all__ = ["RuleBasedQueryAnalyzer", "build_query_analyzer"]

logger = logging.getLogger(__name__)

# Insertion order is the tie-break order of intents; keep it as declared.
# The tables are immutable so that analyzers in worker threads share them safely.
_INTENT_SIGNALS: Mapping[QueryIntent, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        QueryIntent.FACTUAL: MappingProxyType(
            {
                "ar": (
                    "ما",
                    "من",
                    "متى",
                    "أين",
                    "كم",
                    "ما هو",
                    "ما هي",
                    "ما اسم",
                    "من هو",
                    "من هي",
                ),
                "en": ("what", "who", "when", "where", "which", "how many", "how much"),
            }
        ),
        QueryIntent.REASONING: MappingProxyType(
            {
                "ar": ("لماذا", "كيف", "ما سبب", "ما علة", "فسّر", "وضّح", "اشرح"),
                "en": ("why", "how", "explain", "describe", "elaborate", "analyze", "reason"),
            }
        ),
        QueryIntent.COMPARATIVE: MappingProxyType(
            {
                "ar": ("قارن", "الفرق", "أيهما", "أفضل", "مقارنة", "مقابل", "بين"),
                "en": ("compare", "difference", "versus", "vs", "better", "worse", "contrast"),
            }
        ),
        QueryIntent.PROCEDURAL: MappingProxyType(
            {
                "ar": ("كيفية", "خطوات", "طريقة", "كيف أفعل", "كيف يمكن", "آلية"),
                "en": ("how to", "steps", "procedure", "process", "guide", "tutorial", "implement"),
            }
        ),
        QueryIntent.CODE: MappingProxyType(
            {
                "ar": ("كود", "برمجة", "دالة", "كلاس", "مثال كود", "اكتب كود", "برمج"),
                "en": ("code", "function", "class", "implement", "script", "program", "snippet"),
            }
        ),
        QueryIntent.SUMMARIZE: MappingProxyType(
            {
                "ar": ("لخّص", "ملخص", "باختصار", "أعطني فكرة", "شرح مختصر", "ما هي النقاط"),
                "en": ("summarize", "summary", "overview", "briefly", "tldr", "main points"),
            }
        ),
    }
)

_OTHER_LANGUAGE: Mapping[str, str] = MappingProxyType({"ar": "en", "en": "ar"})

# Per detected language, each intent's signals (own language first, then the
# other one), lower-cased once here instead of on every call.
_SIGNALS_BY_LANG: Mapping[str, tuple[tuple[QueryIntent, tuple[str, ...]], ...]] = MappingProxyType(
    {
        lang: tuple(
            (
                intent,
                tuple(s.lower() for s in (*table[lang], *table[_OTHER_LANGUAGE[lang]])),
            )
            for intent, table in _INTENT_SIGNALS.items()
        )
        for lang in ("ar", "en")
    }
)

_COMPLEXITY_HIGH_SIGNALS = re.compile(
    r"\b(analyze|compare|evaluate|critique|pros.and.cons|trade.?off"
    r"|قارن|حلل|قيّم|عوامل|مزايا وعيوب|الفرق بين)\b",
    re.I,
)

# Kept for fidelity although it can never change the outcome (see _estimate_complexity).
_COMPLEXITY_LOW_SIGNALS = re.compile(r"^(ما|من|متى|أين|what is|who is|when|where)\s+\w+", re.I)

_STOP_WORDS_AR: frozenset[str] = frozenset(
    {
        "في", "من", "إلى", "على", "عن", "مع", "هذا", "هذه", "ذلك", "التي", "الذي",
        "أن", "إن", "كان", "كانت", "هو", "هي", "هم", "نحن", "أنت", "ما", "لا",
        "لم", "قد", "كل", "بعض", "بين", "حيث", "ثم", "أو", "لكن", "و", "ب", "ل",
    }
)  # fmt: skip

_STOP_WORDS_EN: frozenset[str] = frozenset(
    {
        "the", "a", "an", "and", "or", "but", "in", "on", "at", "to", "for", "of",
        "with", "by", "from", "is", "are", "was", "were", "be", "been", "have",
        "has", "had", "do", "does", "did", "will", "would", "could", "should",
        "this", "that", "these", "those", "it", "its", "we", "you", "he", "she",
        "they", "them", "their", "our", "your", "my", "i", "not", "can", "get",
    }
)  # fmt: skip

_ARABIC_RE = re.compile(r"[\u0600-\u06FF]")

# Case-sensitive on purpose: capitalised ASCII words are the English entity cue.
_ENTITY_RE = re.compile(
    r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*"
    r"|[\u0600-\u06FF]{3,}(?:\s+[\u0600-\u06FF]{3,}){1,3})\b"
)

_DIACRITICS_RE = re.compile(r"[\u064B-\u0652]")
_ALEF_FORMS_RE = re.compile(r"[إأآا]")
_WHITESPACE_RE = re.compile(r"\s+")
# The Arabic block is added explicitly, so Arabic punctuation sticks to words.
_KEYWORD_RE = re.compile(r"[\w\u0600-\u06FF]{2,}")

_WH_AR: tuple[str, ...] = ("ما", "من", "متى", "أين", "كيف", "لماذا", "كم")
_WH_EN: tuple[str, ...] = ("what", "who", "when", "where", "how", "why", "which")
_YN_AR: tuple[str, ...] = ("هل", "أ")
_YN_EN: tuple[str, ...] = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "will")

_MAX_KEYWORDS = 12
_MAX_ENTITIES = 8


class RuleBasedQueryAnalyzer(QueryAnalyzerStrategy):
    """Default analyzer: fills every field of :class:`QueryAnalysis` from fixed rules.

    It keeps a live reference to ``config.query_analyzer``, so later edits of
    budgets, custom entities or the Arabic threshold apply to the next call.
    """

    def __init__(self, config: ContextEngineConfig) -> None:
        """Remember the analyzer section of ``config`` (not a copy)."""
        self.cfg = config.query_analyzer

    def analyze(self, query: str) -> QueryAnalysis:
        """Analyse ``query``; ``None``, ``""`` or blank text give the empty analysis.

        ``original_query`` is the argument exactly as given.  A truthy
        non-string without ``strip`` raises :class:`AttributeError`.
        """
        if not query or not query.strip():
            return self._empty_analysis(query)

        normalized = self._normalize(query)
        is_arabic = self._detect_arabic(normalized)
        lang = "ar" if is_arabic else "en"
        intent = self._extract_intent(normalized, lang)
        complexity = self._estimate_complexity(normalized, lang)
        keywords = self._extract_keywords(normalized, lang)
        entities = self._extract_entities(normalized)
        q_type = self._question_type(normalized, lang)
        budget = self._compute_budget(complexity)

        logger.debug(
            "QueryAnalyzer | intent=%s | complexity=%s | keywords=%s",
            intent.value,
            complexity.value,
            keywords[:5],
        )
        return QueryAnalysis(
            original_query=query,
            normalized=normalized,
            intent=intent,
            complexity=complexity,
            keywords=keywords,
            entities=entities,
            is_arabic=is_arabic,
            language=lang,
            question_type=q_type,
            context_budget=budget,
        )

    @staticmethod
    def _normalize(query: str) -> str:
        """Strip, drop Arabic diacritics, fold alef forms, collapse whitespace runs.

        Stripping comes first, so whitespace exposed by removing a trailing
        diacritic survives as a single trailing space.
        """
        text = query.strip()
        text = _DIACRITICS_RE.sub("", text)
        text = _ALEF_FORMS_RE.sub("ا", text)
        return _WHITESPACE_RE.sub(" ", text)

    def _detect_arabic(self, text: str) -> bool:
        """Whether Arabic-block characters make up at least the configured share.

        The denominator ignores ASCII spaces only and is at least 1.
        """
        arabic = len(_ARABIC_RE.findall(text))
        total = len(text.replace(" ", "")) or 1
        return arabic / total >= self.cfg.arabic_threshold

    @staticmethod
    def _extract_intent(text: str, lang: str) -> QueryIntent:
        """The intent with the most signals found as substrings; ``FACTUAL`` if none.

        Each signal counts once; on a tie the intent declared first wins.
        """
        text_lower = text.lower()
        best = QueryIntent.FACTUAL
        best_count = 0
        for intent, signals in _SIGNALS_BY_LANG[lang]:
            count = sum(1 for s in signals if s in text_lower)
            # Strictly greater keeps the earliest intent on ties.
            if count > best_count:
                best, best_count = intent, count
        return best

    @staticmethod
    def _estimate_complexity(text: str, lang: str) -> QueryComplexity:
        """``HIGH`` on a high signal or > 20 words, ``LOW`` up to 12 words, else ``MEDIUM``.

        ``lang`` is accepted for signature parity and not used.
        """
        word_count = len(text.split())
        if _COMPLEXITY_HIGH_SIGNALS.search(text):
            return QueryComplexity.HIGH
        if word_count > 20:
            return QueryComplexity.HIGH
        if _COMPLEXITY_LOW_SIGNALS.match(text) and word_count <= 7:
            return QueryComplexity.LOW
        if word_count <= 12:
            return QueryComplexity.LOW
        return QueryComplexity.MEDIUM

    @staticmethod
    def _extract_keywords(text: str, lang: str) -> list[str]:
        """Up to 12 non-stop words, by frequency weighted with length, descending.

        Only the stop list of the detected language is applied; ties keep the
        order of first occurrence.
        """
        stop = _STOP_WORDS_AR if lang == "ar" else _STOP_WORDS_EN
        words = [w for w in _KEYWORD_RE.findall(text.lower()) if w not in stop]
        freq = Counter(words)
        scored = sorted(
            freq.items(),
            key=lambda item: item[1] * (1 + len(item[0]) * 0.05),
            reverse=True,
        )
        return [word for word, _ in scored[:_MAX_KEYWORDS]]

    def _extract_entities(self, text: str) -> list[str]:
        """Regex entities, then configured entities found in the text, deduplicated, max 8."""
        entities = [m.group(0).strip() for m in _ENTITY_RE.finditer(text)]
        text_lower = text.lower()
        entities.extend(ent for ent in self.cfg.custom_entities if ent.lower() in text_lower)
        return list(dict.fromkeys(entities))[:_MAX_ENTITIES]

    @staticmethod
    def _question_type(text: str, lang: str) -> str:
        """``"wh-question"``, ``"yes/no"`` or ``"open"`` from the text's prefix.

        Prefixes are not word-bounded, so ``"island"`` reads as yes/no.
        """
        text_l = text.lower().strip()
        wh, yn = (_WH_AR, _YN_AR) if lang == "ar" else (_WH_EN, _YN_EN)
        if text_l.startswith(wh):
            return "wh-question"
        if text_l.startswith(yn):
            return "yes/no"
        return "open"

    def _compute_budget(self, complexity: QueryComplexity) -> int:
        """The configured budget for ``complexity``."""
        if complexity is QueryComplexity.LOW:
            return self.cfg.budget_low
        if complexity is QueryComplexity.MEDIUM:
            return self.cfg.budget_medium
        return self.cfg.budget_high

    def _empty_analysis(self, query: str) -> QueryAnalysis:
        """The analysis of a missing or blank query (``UNKNOWN``, ``LOW``, low budget)."""
        return QueryAnalysis(
            original_query=query,
            normalized="",
            intent=QueryIntent.UNKNOWN,
            complexity=QueryComplexity.LOW,
            context_budget=self.cfg.budget_low,
        )


def build_query_analyzer(
    config: ContextEngineConfig,
    strategy: QueryAnalyzerStrategy | None = None,
) -> QueryAnalyzerStrategy:
    """Return ``strategy`` when it is truthy, else a :class:`RuleBasedQueryAnalyzer`."""
    if strategy:
        return strategy
    return RuleBasedQueryAnalyzer(config)
