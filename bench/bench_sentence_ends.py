"""Where the chunker ends a sentence: after every full stop, or not after an initial.

A paragraph longer than the chunk size is cut between sentences.  Cutting after
every full stop splits "John C. Messenger", "E. coli", "Dr. Smith" or the
Arabic "و. هايدون بيرنز" between two chunks, and a question on that name then
finds half of it in each.  The product's rule
(``zerda_async.readers.SENTENCE_END``) does not cut after a capital letter or
an Arabic letter standing alone, nor after a few titles and abbreviations.

Measured here against the plain rule (every ``. ! ? ؟ 。`` followed by white
space), on every question of ARCD, XQuAD's public half (English and Arabic)
and all 98 COVID-QA articles, chunks of 400 characters: the cuts the rule
keeps out, and the answer in the recommended profile's default context and
in a 4,000-character one, keyword only (no model, so every question of
COVID-QA is asked).  ``--e5`` adds the rows of the recommended profile with
e5 (its vectors cached under ``bench/out/cache``), COVID-QA on 20 articles.

    PYTHONPATH=$PWD python bench/bench_sentence_ends.py [--e5]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_report
from _quality_data import DATA, Corpus, articles_subset, load_set
from _quality_engines import make_engine
from _quality_metrics import context_metrics
from bench_rerank import _config

from zerda_async.readers import SENTENCE_END

EVERY_STOP = re.compile(r"(?<=[.!?؟。])\s+")
"""The plain rule: white space after any sentence mark."""
SETS = (
    ("arcd-train.json.gz", "Arabic (ARCD)", "ar"),
    ("xquad-en-public.json.gz", "English (XQuAD en)", "xen"),
    ("xquad-ar-public.json.gz", "Arabic (XQuAD ar)", "xar"),
    ("covid-qa.json.gz", "English (COVID-QA)", "en"),
)


def kept_cuts(path: Path) -> int:
    """How many cuts of the plain rule the product's rule does not make in this file."""
    corpus = load_set(path, "count", "c", 10**9)  # one chunk per paragraph: its whole text
    return sum(
        1
        for chunk in corpus.chunks
        for match in EVERY_STOP.finditer(chunk.text)
        if not SENTENCE_END.match(chunk.text, match.start())
    )


def answers_in_context(corpus: Corpus, embedder: Any) -> tuple[float, float]:
    """Shares of questions whose answer is in the default and the 4,000-character context."""
    figures = context_metrics(make_engine(_config(), corpus.chunks, embedder), corpus.questions, [])
    return figures.default, figures.wide


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--e5", action="store_true", help="add the profile with e5's vectors")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    systems: list[tuple[str, Any]] = [("recommended, keyword only", None)]
    if args.e5:
        from _e5_vectors import E5Embedder, E5Vectors

        systems.append(("recommended + e5", E5Embedder(E5Vectors())))
    rows = []
    for file, name, lang in SETS:
        cuts = kept_cuts(DATA / file)
        for system, embedder in systems:
            cells = []
            for rule in (EVERY_STOP, SENTENCE_END):
                corpus = load_set(DATA / file, name, lang, 400, sentence_end=rule)
                if embedder is not None and lang == "en":
                    corpus = articles_subset(corpus, 20)
                default, wide = answers_in_context(corpus, embedder)
                cells.append((len(corpus.chunks), len(corpus.questions), default, wide))
                print(f"{name} | {system} | {cells[-1]}", file=sys.stderr, flush=True)
            (n_old, q, d_old, w_old), (n_new, _, d_new, w_new) = cells
            rows.append(
                [
                    name,
                    system,
                    q,
                    cuts,
                    f"{n_old} → {n_new}",
                    f"{d_old:.1%} → {d_new:.1%}",
                    f"{w_old:.1%} → {w_new:.1%}",
                ]
            )
    headers = [
        "set",
        "system",
        "questions",
        "cuts kept out",
        "chunks",
        "answer in default context",
        "at 4,000 characters",
    ]
    print_report("every full stop → the product's rule", headers, rows, started)


if __name__ == "__main__":
    main()
