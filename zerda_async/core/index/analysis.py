"""Text analysers for keyword retrieval: one rule, applied identically to chunks and queries.

An analyser turns a text into the terms the BM25 index stores.  Which one built
an index is part of the index (:attr:`KeywordIndex.analyzer`), and queries are
always tokenised by the index's own analyser, so the two can never disagree.

* ``"documented"`` — the documented package's rule (:func:`.tokens.tokenize`):
  runs of two or more word characters or Arabic-block letters of the
  lower-cased text.  The Arabic block includes ``؟ ، ؛``, so ``"الموسم؟"`` is
  one token that never matches ``"الموسم"``.
* ``"multilingual"`` — Unicode-aware words (letters and digits; every
  punctuation mark, Arabic ``؟ ، ؛ « »`` included, splits), NFKC and
  lower-casing, Arabic normalisation (tashkeel, tatweel and superscript alef
  removed; ``أ إ آ ٱ`` become ``ا`` and ``ى`` becomes ``ي``), a light Arabic stemmer (the article
  ``ال وال بال كال فال لل`` or one proclitic ``و ب ل ف ك``, then one common
  suffix, are stripped when enough of the word remains), English and Arabic
  function words dropped and English words reduced by the Snowball stemmer
  (PyStemmer, the ``stemming`` extra).
* ``"multilingual-snowball"`` — the same, but Arabic words go through
  Snowball Arabic too (what bm25s users get); kept for comparison in
  ``bench/bench_quality.py``.
* ``"multilingual-lite"`` — ``"multilingual"`` without English stemming, for
  machines without PyStemmer (:func:`best_multilingual` picks it there).

Analysers are pure functions of the text with a per-analyser memo of word
results (bounded); they are safe to call from several threads at once.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Protocol

from ...errors import ConfigError
from .tokens import tokenize as documented_tokenize

__all__ = [
    "ANALYZER_NAMES",
    "DOCUMENTED",
    "Analyzer",
    "TermMemo",
    "analyzer_for",
    "best_multilingual",
    "fold_arabic",
    "light_stem_arabic",
    "normalize_arabic",
    "stemmer_available",
]

DOCUMENTED = "documented"
ANALYZER_NAMES = ("documented", "multilingual", "multilingual-snowball", "multilingual-lite")
"""Every analyser name ``retriever.text_analyzer`` accepts."""

_MEMO_MAX = 1 << 20
"""Words each analyser remembers before it starts over (bounds its memory)."""

# Tashkeel (U+064B–U+065F), superscript alef (U+0670) and tatweel (U+0640).
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670\u0640]")
_ALEF_FORMS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا"})
# Retrieval folds further than normalize_arabic: alef maqsura is written for a final
# ya and the reverse ("في" / "فى", "توفي" / "توفى"), so both become ya.  (Dropping
# the alef of the accusative tanween, "جنوبًا" -> "جنوب", measured worse on ARCD.)
_RETRIEVAL_FORMS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي"})
# Letters and digits only: ``[^\W_]`` is ``\w`` without the underscore, and
# Arabic punctuation (؟ ، ؛ « ») is not a word character, so it splits.
_WORD = re.compile(r"[^\W_]+")
_ARABIC_LETTER = re.compile("[\u0621-\u064a]")

_ARTICLES = ("وال", "بال", "كال", "فال", "لل", "ال")
_PROCLITICS = frozenset("وبلفك")
# Pronoun, dual, plural and feminine endings (the "light10" family of light
# stemmers), longest first; one is removed at most.
_SUFFIXES = ("ها", "ان", "ات", "ون", "ين", "يه", "ية", "ه", "ة", "ي")
# A proclitic is stripped only when this many letters remain, so short
# words ("ولد", "بلد", "كتب") keep their first letter; an article may leave
# one letter less (the article itself is unambiguous: "الحب" -> "حب").
_MIN_STEM = 3

# Written for this project: function words that carry no topic in questions or
# answers.  Words are looked up after normalisation, so alef forms are unified.
_ENGLISH_WORDS = """
    a an and are as at be been being but by can could did do does doing for from had has
    have having he her here hers him his how i if in into is it its itself me more most my
    no nor not of on or our ours she should so some such than that the their theirs them
    then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours also about above
    after again against all am any because before below between both during each few
    further just only other out over own same once"""
_ARABIC_WORDS = """
    في من على الى إلى عن ما ماذا هو هي هم هذا هذه ذلك تلك التي الذي الذين ان أن إن كان
    كانت او أو ثم قد لا لم لن مع بين كل بعض عند حتى اذا إذا هل اي أي متى كيف اين أين لماذا كم
    ماهي ماهو ما هى فى"""
_ENGLISH_STOPWORDS = frozenset(_ENGLISH_WORDS.split())
_ARABIC_STOPWORDS = frozenset(_ARABIC_WORDS.translate(_RETRIEVAL_FORMS).split())


class Analyzer(Protocol):
    """A named rule turning a text into index terms (used for chunks and queries alike)."""

    @property
    def name(self) -> str:
        """The name saved with an index and checked when it is loaded."""
        ...

    def tokenize(self, text: str) -> list[str]:
        """The terms of ``text`` in order of appearance (duplicates kept)."""
        ...


class _Documented:
    """The documented rule (see :func:`.tokens.tokenize`)."""

    name = DOCUMENTED

    def tokenize(self, text: str) -> list[str]:
        return documented_tokenize(text)


def normalize_arabic(text: str) -> str:
    """``text`` without tashkeel, tatweel and superscript alef, with ``أ إ آ ٱ`` as ``ا``."""
    return _ARABIC_MARKS.sub("", text).translate(_ALEF_FORMS)


def fold_arabic(text: str) -> str:
    """:func:`normalize_arabic` for retrieval: also ``ى`` as ``ي`` (``"فى"`` -> ``"في"``)."""
    return _ARABIC_MARKS.sub("", text).translate(_RETRIEVAL_FORMS)


def light_stem_arabic(word: str) -> str:
    """``word`` without its article or one proclitic, then without one common suffix.

    The article forms are tried longest first (``وال`` before ``ال``; two
    letters must remain); only when none applies is a single proclitic
    (``و ب ل ف ك``) removed (three must remain).  Then one suffix (``ها ان ات
    ون ين يه ية ه ة ي``, longest first) goes when three letters remain.
    """
    for article in _ARTICLES:
        if word.startswith(article) and len(word) - len(article) >= _MIN_STEM - 1:
            word = word[len(article) :]
            break
    else:
        if len(word) > _MIN_STEM and word[0] in _PROCLITICS:
            word = word[1:]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def stemmer_available() -> bool:
    """Whether PyStemmer (the ``stemming`` extra) is importable."""
    return importlib.util.find_spec("Stemmer") is not None


def _snowball(language: str, analyzer: str) -> Callable[[str], str]:
    try:
        import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type hints
    except ImportError as exc:
        raise ConfigError(
            f"retriever.text_analyzer {analyzer!r} needs PyStemmer: "
            "pip install 'zerda-async[stemming]' (or use 'multilingual-lite')"
        ) from exc
    stemmer: Any = Stemmer.Stemmer(language)
    stem: Callable[[str], str] = stemmer.stemWord
    return stem


class _Multilingual:
    """Unicode words, Arabic normalisation and light stemming, English stemming."""

    def __init__(self, name: str, english: bool, arabic_snowball: bool) -> None:
        self.name = name
        self._english = _snowball("english", name) if english else None
        self._arabic = _snowball("arabic", name) if arabic_snowball else None
        self._memo: dict[str, str] = {}

    def tokenize(self, text: str) -> list[str]:
        words = _WORD.findall(fold_arabic(unicodedata.normalize("NFKC", text).lower()))
        memo = self._memo
        if len(memo) > _MEMO_MAX:
            # Rebinding (not clearing) keeps concurrent readers of the old dict safe.
            memo = self._memo = {}
        terms = []
        for word in words:
            term = memo.get(word)
            if term is None:
                term = memo[word] = self._term(word)
            if term:
                terms.append(term)
        return terms

    def _term(self, word: str) -> str:
        """The index term of one normalised word, or ``""`` to drop it."""
        if word.isdigit():
            return word
        if _ARABIC_LETTER.match(word):
            if word in _ARABIC_STOPWORDS:
                return ""
            stem = self._arabic(word) if self._arabic is not None else light_stem_arabic(word)
            return stem if len(stem) >= 2 else ""
        if len(word) < 2 or word in _ENGLISH_STOPWORDS:
            return ""
        return self._english(word) if self._english is not None else word


@functools.cache
def analyzer_for(name: str) -> Analyzer:
    """The analyser called ``name`` (one shared instance per name).

    Raises :class:`~zerda_async.errors.ConfigError` naming
    ``retriever.text_analyzer`` for an unknown name, or for a Snowball
    analyser when PyStemmer is not installed.
    """
    if name == DOCUMENTED:
        return _Documented()
    if name == "multilingual":
        return _Multilingual(name, english=True, arabic_snowball=False)
    if name == "multilingual-snowball":
        return _Multilingual(name, english=True, arabic_snowball=True)
    if name == "multilingual-lite":
        return _Multilingual(name, english=False, arabic_snowball=False)
    raise ConfigError(
        f"unknown retriever.text_analyzer {name!r}; expected one of {', '.join(ANALYZER_NAMES)}"
    )


def best_multilingual() -> str:
    """``"multilingual"`` when PyStemmer is installed, else ``"multilingual-lite"``."""
    return "multilingual" if stemmer_available() else "multilingual-lite"


_TERM_MEMO_MAX = 1 << 16
"""Texts whose analysed term sets a :class:`TermMemo` keeps before it starts over."""


class TermMemo:
    """The analysed term set of each chunk text, by analyser and content hash.

    Indexed chunks are immutable (as for the retrievers' hash memo), and the same
    chunks come back for many queries, so each is analysed once.  Plain dict
    operations only: concurrent callers at worst analyse a text twice.
    """

    __slots__ = ("_sets",)

    def __init__(self) -> None:
        self._sets: dict[tuple[str, str], frozenset[str]] = {}

    def terms(self, chunk: Any, analyzer: Analyzer) -> frozenset[str]:
        """The terms of ``chunk.text`` (``chunk.content_hash`` is the memo key)."""
        key = (analyzer.name, chunk.content_hash)
        found = self._sets.get(key)
        if found is None:
            if len(self._sets) >= _TERM_MEMO_MAX:
                self._sets = {}
            found = self._sets[key] = frozenset(analyzer.tokenize(chunk.text))
        return found
