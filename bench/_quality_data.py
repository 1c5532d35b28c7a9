"""The quality bench's data: public QA sets cut into chunks the product's way, with questions.

Data: ``../shared/quality-data`` (see its README): ARCD (Arabic Wikipedia
paragraphs), COVID-QA (long English articles; a fixed subset of articles, so
that embedding it with e5 stays bounded), the mixed corpus of both, and the
public half of XQuAD asked across languages (Arabic questions over the
English paragraphs and the reverse).  Every context is cut by the product's
own chunker (``zerda_async.apps.split_text``).  A question's relevant
chunks are the chunks of its own paragraph that contain an answer text
(whitespace normalised), else the chunk holding ``answer_start``.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _common import BenchChunk, quality_data_dir

from zerda_async.apps import split_text
from zerda_async.core.index.analysis import normalize_arabic
from zerda_async.readers import SENTENCE_END

__all__ = [
    "DATA",
    "OFF_TOPIC",
    "SEED",
    "Corpus",
    "Question",
    "load_corpora",
    "load_set",
    "normalise",
    "subsample",
]

DATA = quality_data_dir()
OFF_TOPIC = 200
SEED = 20240611


@dataclass
class Question:
    """One question, its answer texts and the ids of its relevant chunks."""

    text: str
    answers: list[str]
    relevant: set[str]


@dataclass
class Corpus:
    """Chunks and questions of one measured set."""

    name: str
    chunks: list[BenchChunk] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    off_topic: list[Question] = field(default_factory=list)
    # Off-topic questions in the language of the chunks (the floor's other test).
    same_language_off_topic: list[Question] = field(default_factory=list)


def _squash(text: str) -> str:
    return " ".join(text.split())


def normalise(text: str) -> str:
    """Text compared for answer-in-context (see the README of the data)."""
    return _squash(normalize_arabic(text).casefold())


def _offsets(context: str, pieces: Sequence[str]) -> list[int]:
    """Where each chunk starts in ``context`` (the chunker strips and rejoins paragraphs)."""
    starts, cursor = [], 0
    for piece in pieces:
        head = piece.split("\n", 1)[0][:40]
        found = context.find(head, cursor)
        starts.append(found if found >= 0 else cursor)
        cursor = max(cursor, found if found >= 0 else cursor)
    return starts


def load_set(
    path: Path, name: str, lang: str, chunk_size: int, sentence_end: re.Pattern[str] = SENTENCE_END
) -> Corpus:
    """Chunks and questions of one SQuAD-format file (``sentence_end``: the chunker's
    sentence rule, the product's own unless given)."""
    corpus = Corpus(name)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    for a, article in enumerate(data):
        number = 0  # a chunk's place in its article, numbered as zerda index numbers a file's
        for p, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            pieces = split_text(context, chunk_size, sentence_end=sentence_end)
            starts = _offsets(context, pieces)
            ids = [f"{lang}-{a}-{p}-{i}" for i in range(len(pieces))]
            for doc_id, piece in zip(ids, pieces, strict=True):
                meta = {"source": f"{lang}-{a}", "lang": lang, "chunk": number}
                number += 1
                corpus.chunks.append(BenchChunk(doc_id=doc_id, text=piece, metadata=meta))
            squashed = [_squash(piece) for piece in pieces]
            for qa in paragraph["qas"]:
                answers = [ans["text"] for ans in qa["answers"] if ans["text"].strip()]
                if not answers:
                    continue
                relevant = {
                    ids[i]
                    for i, text in enumerate(squashed)
                    if any(_squash(ans) in text for ans in answers)
                }
                if not relevant:
                    at = qa["answers"][0]["answer_start"]
                    holder = max(i for i, s in enumerate(starts) if s <= at) if starts else 0
                    relevant = {ids[holder]}
                corpus.questions.append(Question(qa["question"], answers, relevant))
    return corpus


def article(question: Question) -> int:
    """The article number of the question's relevant chunks (ids ``lang-article-paragraph-i``)."""
    return int(sorted(question.relevant)[0].split("-")[1])


def half_of(question: Question) -> str:
    """``"tune"`` (even article) or ``"held-out"`` (odd): the split every bench that fits
    something (a floor, a direction, a map) fits on and measures on."""
    return "tune" if article(question) % 2 == 0 else "held-out"


def subsample(questions: list[Question], count: int) -> list[Question]:
    """At most ``count`` questions, drawn with the fixed seed."""
    if len(questions) <= count:
        return questions
    return random.Random(SEED).sample(questions, count)


# -- systems ------------------------------------------------------------------------------


def articles_subset(corpus: Corpus, count: int) -> Corpus:
    """The chunks and questions of ``count`` articles drawn with the fixed seed.

    Embedding all 7,700 COVID-QA chunks with e5 takes about 20 minutes on two
    cores; a fixed subset of articles keeps the bench's embedding bounded (every
    row of the table measures the same subset).
    """
    sources = sorted({c.metadata["source"] for c in corpus.chunks})
    if count <= 0 or count >= len(sources):
        return corpus
    kept = set(random.Random(SEED).sample(sources, count))
    chunks = [c for c in corpus.chunks if c.metadata["source"] in kept]
    ids = {c.doc_id for c in chunks}
    questions = [q for q in corpus.questions if q.relevant <= ids]
    return Corpus(f"{corpus.name[:-1]}, {count} articles)", chunks, questions)


def cross_lingual(asked: Corpus, over: Corpus, name: str) -> Corpus:
    """``asked``'s questions over ``over``'s chunks (parallel XQuAD: same order of questions).

    A question's relevant chunks and answers are those of its twin in ``over``.
    """
    assert len(asked.questions) == len(over.questions), "XQuAD files must be parallel"
    questions = [
        Question(q.text, twin.answers, twin.relevant)
        for q, twin in zip(asked.questions, over.questions, strict=True)
    ]
    return Corpus(name, over.chunks, questions)


def load_corpora(
    data: Path, chunk_size: int, questions: int, covid_articles: int = 20
) -> list[Corpus]:
    """Arabic, English, mixed and the two cross-lingual corpora, with off-topic questions.

    Off-topic questions are another set's, in another language than the chunks
    (``off_topic``): for ARCD the COVID-QA ones and the reverse, for Arabic
    questions over English XQuAD the ARCD ones, for English over Arabic the
    COVID-QA ones; and in the chunks' language (``same_language_off_topic``):
    XQuAD's Arabic questions over ARCD, its English ones over COVID-QA, COVID-QA's
    over English XQuAD, ARCD's over Arabic XQuAD.
    """
    arabic = load_set(data / "arcd-train.json.gz", "Arabic (ARCD)", "ar", chunk_size)
    english = load_set(data / "covid-qa.json.gz", "English (COVID-QA)", "en", chunk_size)
    english = articles_subset(english, covid_articles)
    arabic.questions = subsample(arabic.questions, questions)
    english.questions = subsample(english.questions, questions)
    mixed = Corpus(
        "mixed (both)",
        arabic.chunks + english.chunks,
        subsample(arabic.questions + english.questions, questions),
    )
    xq_ar = load_set(data / "xquad-ar-public.json.gz", "XQuAD ar", "xar", chunk_size)
    xq_en = load_set(data / "xquad-en-public.json.gz", "XQuAD en", "xen", chunk_size)
    ar_en = cross_lingual(xq_ar, xq_en, "Arabic questions -> English (XQuAD)")
    en_ar = cross_lingual(xq_en, xq_ar, "English questions -> Arabic (XQuAD)")
    arcd, covid = arabic.questions[:OFF_TOPIC], english.questions[:OFF_TOPIC]
    arabic.off_topic, arabic.same_language_off_topic = covid, xq_ar.questions[:OFF_TOPIC]
    english.off_topic, english.same_language_off_topic = arcd, xq_en.questions[:OFF_TOPIC]
    ar_en.off_topic, ar_en.same_language_off_topic = arcd, covid
    en_ar.off_topic, en_ar.same_language_off_topic = covid, arcd
    return [arabic, english, mixed, ar_en, en_ar]
