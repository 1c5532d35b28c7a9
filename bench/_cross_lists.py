"""The recommended profile's ranked candidates of every question, written for the cross-encoder.

``bench_cross.py`` trains and measures a reranker that reads a question and a
chunk together.  Its training runs in a separate environment (PyTorch, which
the project does not depend on), so the candidate lists are written once,
here, as JSON lines in ``bench/out/cross/lists.jsonl``: per question of
``bench_pair.ranking_sets`` (every question, both halves), its set, half,
text, relevant chunk ids, the ids of the recommended profile's 20 chunks
with e5 (retrieve 20, filter, rank: ``bench_rerank.ranked_list``) and its top ``DEPTH``
with their texts and ranker scores.  Off-topic questions (a fixed sample of ARCD's and
COVID-QA's, asked over each set that holds none of their set's chunks) come
with ``"relevant": []``: a reranker that also judges relevance learns from
them that nothing may fit.

    PYTHONPATH=$PWD python bench/_cross_lists.py   # ~1 min with the e5 cache filled
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Corpus, Question, half_of, load_set, subsample
from _quality_engines import make_engine
from bench_pair import ranking_sets
from bench_rerank import _config, ranked_list

__all__ = ["DEPTH", "LISTS", "read_lists"]

DEPTH = 8
LISTS = Path(__file__).resolve().parent / "out" / "cross" / "lists.jsonl"


def _record(corpus: Corpus, engine: Any, q: Question, half: str) -> dict[str, Any]:
    listed = ranked_list(engine, q.text, 20)
    ranked = listed[:DEPTH]
    texts = {c.doc_id: c.text for c in corpus.chunks}
    return {
        "set": corpus.name,
        "half": half,
        "question": q.text,
        "relevant": sorted(q.relevant),
        "answers": q.answers,
        "listed": [sc.doc_id for sc in listed],
        "candidates": [
            {"id": sc.doc_id, "text": texts[sc.doc_id], "score": sc.composite_score}
            for sc in ranked
        ],
    }


def _off_topic() -> dict[str, list[Question]]:
    """A fixed sample of ARCD's and COVID-QA's questions, by the chunk-id prefix of their set."""
    arcd = load_set(DATA / "arcd-train.json.gz", "ARCD", "ar", 400)
    covid = load_set(DATA / "covid-qa.json.gz", "COVID-QA", "en", 400)
    return {"ar": subsample(arcd.questions, 60), "en": subsample(covid.questions, 60)}


def write_lists() -> None:
    """Write every question's candidates to :data:`LISTS`."""
    vectors = E5Vectors()
    embedder = E5Embedder(vectors)
    pools = _off_topic()
    LISTS.parent.mkdir(parents=True, exist_ok=True)
    with LISTS.open("w", encoding="utf-8") as out:
        for corpus in ranking_sets(DATA):
            engine = make_engine(_config(), corpus.chunks, embedder)
            records = [_record(corpus, engine, q, half_of(q)) for q in corpus.questions]
            # Off-topic: a pool's questions over a corpus holding none of its set's chunks.
            prefixes = {c.doc_id.split("-", 1)[0] for c in corpus.chunks}
            for prefix, pool in pools.items():
                if prefix in prefixes:
                    continue
                for q in pool:
                    record = _record(corpus, engine, q, half_of(q))
                    record.update(set=corpus.name + " (off-topic)", relevant=[])
                    records.append(record)
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            print(f"{corpus.name}: {len(records)} questions", flush=True)


def read_lists(path: Path = LISTS) -> list[dict[str, Any]]:
    """The records :func:`write_lists` wrote."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


if __name__ == "__main__":
    write_lists()
