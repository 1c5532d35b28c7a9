"""Packing quality: answer-in-context and context length, documented vs recommended packing.

Method (the measurements of ``../shared/quality-data/README.md``):

* corpora: ARCD train (Arabic, 198 paragraphs, 594 questions) and COVID-QA
  (English, 98 long articles, 1,380 questions), each split with the product's
  own chunker (``zerda index``'s ``split_text``) at ``--chunk-size`` characters;
* retrieval is the existing keyword-only (BM25) path of ``sync_api.ContextEngine``
  with the documented ranker: only the packing settings differ between rows;
* "documented" is ``ContextEngineConfig()``; "recommended" is
  ``ContextEngineConfig.recommended()`` (budgets, fit packing, relevance floor,
  ``auto`` template);
* answer-in-context: share of questions whose context contains an answer text,
  after normalisation on both sides (Arabic: tashkeel and tatweel removed, alef
  forms unified; case folded; whitespace collapsed), at the profile's own
  budget and with ``override_budget=4000``;
* off-topic: each corpus is queried with the other language's questions (no
  relevant passage exists); "flagged" is the share of results with
  ``nothing_relevant``, and "false flags" the share of on-topic questions flagged.

Runs one question at a time on one engine per corpus, in file order (the
adaptive budget statistics are on, as a user gets them).  Prints a Markdown table
and writes ``bench/out/packing.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (
    command_line,
    describe_machine,
    format_table,
    quality_data_dir,
    write_summary,
)

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async.apps import split_text

DATA = quality_data_dir()
_TASHKEEL = re.compile("[\u064b-\u0652\u0670\u0640]")
_ALEF = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا"})


def normalise(text: str) -> str:
    """The comparison form of a text (see the module docstring)."""
    text = unicodedata.normalize("NFC", text)
    text = _TASHKEEL.sub("", text).translate(_ALEF).casefold()
    return " ".join(text.split())


@dataclass
class Chunk:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Question:
    text: str
    answers: list[str]


def load(name: str, chunk_size: int) -> tuple[list[Chunk], list[Question]]:
    """Chunks of every paragraph and the questions with their normalised answers."""
    with gzip.open(DATA / name, "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    chunks: list[Chunk] = []
    questions: list[Question] = []
    for a_idx, article in enumerate(data):
        for p_idx, para in enumerate(article["paragraphs"]):
            for c_idx, text in enumerate(split_text(para["context"], chunk_size)):
                source = f"{article.get('title', a_idx)}-{p_idx}"
                chunks.append(Chunk(f"{a_idx}-{p_idx}-{c_idx}", text, {"source": source}))
            for qa in para["qas"]:
                answers = [normalise(a["text"]) for a in qa["answers"] if a["text"].strip()]
                if answers:
                    questions.append(Question(qa["question"], answers))
    return chunks, questions


def measure(
    engine: ContextEngine, questions: list[Question], budget: int | None
) -> dict[str, float]:
    """Answer-in-context, mean context length, citations and flags over ``questions``."""
    hits = 0
    lengths: list[int] = []
    cited: list[int] = []
    flagged = 0
    for q in questions:
        result = engine.run(q.text, override_budget=budget, record_turn=False, use_history=False)
        context = normalise(result.context)
        hits += any(a in context for a in q.answers)
        lengths.append(result.context_length)
        cited.append(len(result.citations))
        flagged += result.nothing_relevant
    n = len(questions)
    return {
        "aic": 100.0 * hits / n,
        "mean_len": statistics.fmean(lengths),
        "cited": statistics.fmean(cited),
        "flagged": 100.0 * flagged / n,
    }


def engine_for(profile: str, chunks: list[Chunk]) -> ContextEngine:
    config = (
        ContextEngineConfig.recommended() if profile == "recommended" else ContextEngineConfig()
    )
    # Repeated questions would be served from the cache without measuring packing.
    config.cache.enabled = False
    return ContextEngine(config).index(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunk-size", type=int, nargs="+", default=[400, 800])
    parser.add_argument("--limit", type=int, default=0, help="questions per set (0: all)")
    args = parser.parse_args()
    started = time.perf_counter()
    rows: list[list[Any]] = []
    for size in args.chunk_size:
        sets = {
            lang: load(name, size)
            for lang, name in (("ar", "arcd-train.json.gz"), ("en", "covid-qa.json.gz"))
        }
        for profile in ("documented", "recommended"):
            for lang, (chunks, questions) in sets.items():
                qs = questions[: args.limit] if args.limit else questions
                other = sets["en" if lang == "ar" else "ar"][1]
                off = other[: len(qs)]
                engine = engine_for(profile, chunks)
                own = measure(engine, qs, None)
                at_4k = measure(engine_for(profile, chunks), qs, 4000)
                off_topic = measure(engine_for(profile, chunks), off, None)
                rows.append(
                    [
                        size,
                        profile,
                        lang,
                        len(chunks),
                        len(qs),
                        f"{own['aic']:.1f}%",
                        f"{at_4k['aic']:.1f}%",
                        f"{own['mean_len']:.0f}",
                        f"{own['cited']:.1f}",
                        f"{own['flagged']:.1f}%",
                        f"{off_topic['flagged']:.1f}%",
                    ]
                )
                print(rows[-1], file=sys.stderr)
    headers = [
        "chunk size",
        "profile",
        "set",
        "chunks",
        "questions",
        "answer in context (default)",
        "answer in context (4,000)",
        "mean default context",
        "chunks cited",
        "false flags",
        "off-topic flagged",
    ]
    table = format_table(headers, rows)
    text = (
        f"# Packing quality\n\n{describe_machine()}\n\n"
        f"Command: `{command_line()}` ({time.perf_counter() - started:.0f} s)\n\n"
        "Method: keyword-only retrieval and the documented ranker for both profiles; see "
        "the docstring of `bench/bench_packing.py`.\n\n" + table + "\n"
    )
    print(text)
    write_summary("packing", text)


if __name__ == "__main__":
    main()
