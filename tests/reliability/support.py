"""Hostile inputs, result invariants and faulty dependencies for the reliability tests.

* Strategies: :func:`hostile_text` mixes Arabic with diacritics, tatweel and
  hamza forms, RTL and bidi controls, emoji (with skin tones and ZWJ
  sequences), NUL and other control characters, exotic whitespace, template
  and format metacharacters and arbitrary code points, lone surrogates
  included.
* :func:`check_result` asserts the invariants every ``ContextResult`` keeps.
* The fault components (:class:`FaultyEmbedder`, :class:`FaultyStore`,
  :class:`FaultyTokenizer`) misbehave on texts containing a trigger word, so one
  request fails while the others, submitted with it, must not.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import numpy as np
from hypothesis import strategies as st
from support.chunks import Chunk
from support.embedding import hashed_embedding

from zerda_async.core.models import ContextResult, ScoredChunk
from zerda_async.core.templates import TEMPLATES

__all__ = [
    "ARABIC",
    "SURROGATES",
    "FaultyEmbedder",
    "FaultyStore",
    "FaultyTokenizer",
    "check_budget",
    "check_result",
    "has_surrogate",
    "hostile_chunks",
    "hostile_text",
    "mixed_text",
    "placeholder_contexts",
    "realistic_text",
]

ARABIC = [
    "ما هو التعلم الآلي؟",
    "بِسْمِ اللَّهِ الرَّحْمَٰنِ",
    "الْعَرَبِيَّةُ",
    "إِنَّ أين آلة أيهما",
    "كتـــــاب",  # tatweel
    "، ؛ ؟ ٪",
    "١٢٣٤٥ ۱۲۳",  # Arabic-Indic and extended digits
    "اشرح الفرق بين التعلم العميق والتعلم الآلي",
    "صفحة 12",
    "ﷺ ﻻ",  # ligatures and presentation forms
]
RTL = ["\u200f", "\u200e", "\u202b", "\u202e", "\u2067", "\u2069", "\u061c", "\u202c"]
EMOJI = ["📚", "👍🏽", "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "🇪🇬", "\ufe0f", "🧪"]
CONTROL = [
    "\x00",
    "\x07",
    "\x1b[0m",
    "\r\n",
    "\t",
    "\u00a0",
    "\u2003",
    "\u3000",
    "\u2028",
    "\ufeff",
]
SURROGATES = ["\ud800", "\udfff", "\udc80"]
ENGLISH = [
    "What is machine learning?",
    "Compare BM25 keyword ranking with vector search",
    "How to implement a class in Python step by step",
    "page 12",
    "-----",
    "[Source: x]",
    "[:",
    "---",
    "{idx} {source} {0} %s %(x)s",
    "Ünïcödé İstanbul ß ﬁ",
    "Σίσυφος ΣΑΣ",  # final sigma
    "   ",
]
FRAGMENTS = ARABIC + RTL + EMOJI + CONTROL + SURROGATES + ENGLISH

_ANY_CHAR = st.characters(exclude_categories=())  # every code point, surrogates too


def hostile_text(max_fragments: int = 10) -> st.SearchStrategy[str]:
    """Text built from hostile fragments and arbitrary code points."""
    piece = st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet=_ANY_CHAR, max_size=12))
    return st.lists(piece, max_size=max_fragments).map("".join)


SENTENCES = [
    "Machine learning is a field of artificial intelligence that learns from data.",
    "Retrieval augmented generation adds retrieved documents to the prompt of a model.",
    "BM25 is a keyword ranking function based on term frequency and document length.",
    "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي يركز على بناء أنظمة تتعلم من البيانات.",
    "نموذج المحول يعتمد على آلية الانتباه الذاتي لربط كل كلمة بباقي الكلمات في الجملة.",
    "How does vector search compare dense embeddings with cosine similarity?",
]


def realistic_text(max_fragments: int = 4) -> st.SearchStrategy[str]:
    """A real sentence (English or Arabic) wrapped in hostile fragments."""
    return st.tuples(
        hostile_text(max_fragments), st.sampled_from(SENTENCES), hostile_text(max_fragments)
    ).map("".join)


def mixed_text(max_fragments: int = 10) -> st.SearchStrategy[str]:
    """Half hostile noise, half realistic text (so retrieval finds something)."""
    return st.one_of(hostile_text(max_fragments), realistic_text(max_fragments // 2))


def has_surrogate(*texts: Any) -> bool:
    """True when any text holds a lone surrogate (it cannot be encoded as UTF-8)."""
    return any(isinstance(t, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in t) for t in texts)


@st.composite
def hostile_chunks(draw: st.DrawFn, max_size: int = 20) -> list[Chunk]:
    """A corpus of chunks with hostile texts, sources and metadata values."""
    texts = draw(st.lists(mixed_text(14), max_size=max_size))
    chunks = []
    for i, text in enumerate(texts):
        source = draw(st.one_of(st.none(), st.sampled_from(["Textbook", "مدونة", "📚", ""])))
        lang = draw(st.sampled_from(["ar", "en", None]))
        metadata = {"source": source, "lang": lang, "n": i}
        chunks.append(Chunk(f"d{i}", text, metadata))
    return chunks


def placeholder_contexts(separator: str = "\n---\n") -> set[str]:
    """Every empty-corpus context the composer can produce (any template)."""
    out = set()
    for tmpl in TEMPLATES.values():
        for msg in ("لا تتوفر معلومات.", "No information available."):
            pieces = (tmpl.header.strip(), msg, tmpl.footer.strip())
            out.add(separator.join(p for p in pieces if p))
    return out


def check_budget(context: str, budget: Any, count: Callable[[str], int] = len) -> None:
    """A composed context never exceeds its budget, except that ``"..."`` always fits.

    The composer always includes the first chunk (cut to what is left), then
    clamps the whole string to the budget, so only a budget smaller than the
    ellipsis can be exceeded.  A NaN budget compares false: nothing is cut.
    """
    if isinstance(budget, float) and math.isnan(budget):
        return
    assert count(context) <= max(budget, count("...")), (count(context), budget)


def _finite(value: float) -> bool:
    return math.isfinite(value)


def check_result(
    result: Any,
    corpus: Sequence[Any],
    *,
    budget_rule: bool = True,
    finite_scores: bool = True,
) -> None:
    """The invariants of every run's result.

    * counters agree: ``total_included == len(chunks_used) == total_after_rank
      <= total_after_filter <= total_retrieved``, ``context_length ==
      len(context)``;
    * ``chunks_used`` is a subset of the corpus (the caller's own objects, each
      at most once), best composite score first;
    * every score is finite (for finite embeddings and weights);
    * the context respects its budget (see :func:`check_budget`), or is the
      empty-corpus placeholder when no chunk was used.
    """
    assert isinstance(result, ContextResult)
    assert isinstance(result.context, str)
    assert result.context_length == len(result.context)
    assert result.total_included == len(result.chunks_used)
    if not result.metadata.get("from_cache"):
        assert result.total_after_rank == len(result.chunks_used)
        assert result.total_after_filter <= result.total_retrieved
    ids = {id(c) for c in corpus}
    used = [sc.chunk for sc in result.chunks_used]
    assert all(id(c) in ids for c in used), "a chunk that is not in the corpus was used"
    assert len({id(c) for c in used}) == len(used), "a chunk was used twice"
    assert all(isinstance(sc, ScoredChunk) for sc in result.chunks_used)
    scores = [sc.composite_score for sc in result.chunks_used]
    if finite_scores:
        for sc in result.chunks_used:
            for value in (sc.vector_score, sc.keyword_score, sc.metadata_score, sc.composite_score):
                assert _finite(value), f"non-finite score {value!r} for {sc.doc_id!r}"
        assert scores == sorted(scores, reverse=True), scores
    assert isinstance(result.guard_passed, bool)
    assert all(isinstance(w, str) and w for w in result.guard_warnings)
    if budget_rule and result.chunks_used:
        check_budget(result.context, result.query_analysis.context_budget)
    if not result.chunks_used and not result.metadata.get("from_cache"):
        assert result.context in placeholder_contexts() or result.context == "...", result.context


# -- faulty dependencies ---------------------------------------------------------------------

TRIGGER = "poison"
"""Texts containing this word make the fault components misbehave."""


class FaultyEmbedder:
    """The golden 64-dim embedder, misbehaving (``mode``) on texts containing :data:`TRIGGER`.

    Modes: ``raise``, ``nan``, ``inf``, ``none``, ``text`` (returns a string),
    ``wrong_dim`` (7 numbers), ``hang`` (never returns until :meth:`release`),
    ``slow`` (``delay`` seconds, then a good vector).  ``calls`` counts calls;
    ``inside`` counts calls in progress.  ``sync`` selects plain functions
    (run in worker threads) instead of coroutine functions.
    """

    def __init__(self, mode: str, *, delay: float = 0.0) -> None:
        self.mode = mode
        self.delay = delay
        self.armed = True
        self.calls = 0
        self.inside = 0
        self._lock = threading.Lock()
        self._thread_gate = threading.Event()
        self._async_gate: anyio.Event | None = None

    def release(self) -> None:
        """Let every hanging call return (a good vector)."""
        self._thread_gate.set()
        if self._async_gate is not None:
            self._async_gate.set()

    def _bad(self, text: Any) -> Any:
        mode = self.mode
        if mode == "raise":
            raise ConnectionError(f"embedding service unavailable for {str(text)[:40]!r}")
        if mode == "nan":
            return np.full(64, np.nan)
        if mode == "inf":
            vector = hashed_embedding(text)
            vector[3] = np.inf
            return vector
        if mode == "none":
            return None
        if mode == "text":
            return "not a vector"
        if mode == "wrong_dim":
            return np.ones(7)
        return hashed_embedding(text)

    def _faulty(self, text: Any) -> bool:
        return self.armed and TRIGGER in str(text)

    # -- sync forms (worker threads) ------------------------------------------------------

    def sync_one(self, text: Any) -> Any:
        with self._lock:
            self.calls += 1
            self.inside += 1
        try:
            if self._faulty(text):
                if self.mode == "hang":
                    self._thread_gate.wait(30)
                elif self.mode == "slow":
                    self._thread_gate.wait(self.delay)
                else:
                    return self._bad(text)
            return hashed_embedding(text)
        finally:
            with self._lock:
                self.inside -= 1

    def sync_many(self, texts: list[Any]) -> Any:
        rows = [self.sync_one(t) for t in texts]
        if any(r is None or isinstance(r, str) for r in rows):
            return rows[0] if len(rows) == 1 else rows
        if len({np.asarray(r).shape for r in rows}) > 1:
            return rows  # ragged: not an array
        return np.stack([np.asarray(r, dtype=np.float64) for r in rows])

    # -- coroutine forms (awaited on the loop) --------------------------------------------

    async def one(self, text: Any) -> Any:
        self.calls += 1
        self.inside += 1
        try:
            if self._faulty(text):
                if self.mode == "hang":
                    if self._async_gate is None:
                        self._async_gate = anyio.Event()
                    await self._async_gate.wait()
                elif self.mode == "slow":
                    await anyio.sleep(self.delay)
                else:
                    return self._bad(text)
            await anyio.sleep(0)
            return hashed_embedding(text)
        finally:
            self.inside -= 1

    async def many(self, texts: list[Any]) -> Any:
        rows = [await self.one(t) for t in texts]
        if any(r is None or isinstance(r, str) for r in rows):
            return rows[0] if len(rows) == 1 else rows
        if len({np.asarray(r).shape for r in rows}) > 1:
            return rows
        return np.stack([np.asarray(r, dtype=np.float64) for r in rows])

    def kwargs(self, form: str) -> dict[str, Any]:
        """``index()`` keywords for ``form``: sync_one, sync_many, one, many."""
        if form == "sync_one":
            return {"embed_fn": self.sync_one}
        if form == "sync_many":
            return {"batch_embed_fn": self.sync_many}
        if form == "one":
            return {"embed_fn": self.one}
        if form == "many":
            return {"batch_embed_fn": self.many}
        raise AssertionError(form)


class FaultyStore:
    """A LangChain-style vector store adapter (sync, like most clients).

    ``similarity_search_with_score(query, k)`` ranks the chunks by the golden
    embedder's cosine; on queries containing :data:`TRIGGER` it raises
    (``mode="raise"``) or blocks its worker thread until :meth:`release`
    (``mode="hang"``).
    """

    def __init__(self, chunks: Sequence[Any], mode: str) -> None:
        self.chunks = list(chunks)
        self.mode = mode
        self.matrix = np.stack([hashed_embedding(c.text) for c in self.chunks])
        self.gate = threading.Event()
        self.inside = 0
        self._lock = threading.Lock()

    def release(self) -> None:
        self.gate.set()

    def similarity_search_with_score(self, query: str, k: int = 4) -> list[tuple[Any, float]]:
        with self._lock:
            self.inside += 1
        try:
            if TRIGGER in str(query):
                if self.mode == "raise":
                    raise TimeoutError("vector store read timed out after 2.0 s")
                self.gate.wait(30)
            sims = self.matrix @ hashed_embedding(query)
            order = np.argsort(-sims, kind="stable")[:k]
            return [(self.chunks[i], float(sims[i])) for i in order.tolist()]
        finally:
            with self._lock:
                self.inside -= 1


class FaultyTokenizer:
    """A whitespace tokenizer whose ``encode`` raises on texts containing :data:`TRIGGER`."""

    def encode(self, text: str) -> list[str]:
        if TRIGGER in text:
            raise UnicodeError(f"tokenizer cannot encode {text[:30]!r}")
        return text.split()
