"""Candidate features for the relevance floor, measured before any is shipped (issue 19).

The rows are ``bench_floor_fit.py``'s (one per script group of a question's
vector-listed chunks: an answerable question's group of its answer's script
against every group of an off-topic question; even articles tune, odd ones
held-out), over the 15 chunks the composer's floor reads
(``ranking.max_chunks_to_rank``; ``--fused``: all 20, as ``E5_FLOOR`` was
fitted).  Every candidate reads only what the floor has at hand, the
question and the fused ``ScoredChunk`` list (cosines, margins, ranks,
keyword coverage, text, ``source`` and the ``chunk`` number in the
metadata), so it would compute alike in every index placement:

* ``source share``: of the group's five best vector hits, the share from the
  best hit's ``source`` (an answerable question's hits cluster in its
  article, an off-topic one's scatter);
* ``neighbours``: of the same five, the share from that source within two
  chunk numbers of the best hit;
* ``gap 1-2``, ``gap 1-5``: the best cosine less the group's 2nd and 5th;
* ``z-score``: the best cosine's z-score among the group's listed cosines;
* ``agreement``: the share of the group's ten best vector hits that the
  keyword list ranks in its ten best too;
* ``shared names``: the share of the question's digits and Latin
  capitalised words (the tokens a translation keeps) found in the group's
  three best hits, and ``has names``: whether the question has any;
* ``word match``: over the question's content words, the mean of each one's
  best e5 cosine to a word of the group's best hit, the words embedded alone
  (``_word_translation.WordVectors``: a word lies near its translation), and
  ``word match, best 2``: the mean of the two best-matched words only.

Each feature set is the shipped four (:data:`~zerda_async.core.floor_model.FEATURES`)
plus candidates, fitted on the tune half by ``bench_floor_fit``'s logistic
regression; the table (``_floor_tradeoff.py``) gives its AUC on both halves
and the tune → held-out false flags / off-topic flagged at thresholds set on
the tune half: 1% false flags, 97.5% flagged, and the share ``E5_FLOOR``
flags today.

    PYTHONPATH=$PWD python bench/bench_floor_features.py [--per-half 150]
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe_load, describe_machine, format_table
from _floor_tradeoff import HALVES, TRADEOFF_HEADERS, at, shipped_flags, tradeoff
from _word_translation import WordVectors
from bench_floor import add_plan_arguments
from bench_floor_fit import Rows, collect

from zerda_async.core.floor_model import script_of
from zerda_async.core.models import ScoredChunk

Matrix = np.ndarray
Feature = Callable[[str, list[ScoredChunk]], float]
"""(question, the group's listed chunks, best cosine first) -> one value."""

_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "01234567890123456789")
_NUMBER = re.compile(r"\d+")
_LATIN = re.compile(r"\b[A-Z][A-Za-z]+")


def _source(sc: ScoredChunk) -> str:
    return str(sc.source)


def _number(sc: ScoredChunk) -> int | None:
    value = sc.metadata.get("chunk")
    return value if isinstance(value, int) else None


def source_share(_: str, listed: list[ScoredChunk]) -> float:
    """Of the five best hits, the share from the best hit's source."""
    top = listed[:5]
    return sum(_source(sc) == _source(top[0]) for sc in top) / len(top)


def neighbours(_: str, listed: list[ScoredChunk]) -> float:
    """Of the five best hits, the share within two chunk numbers of the best, same source."""
    top = listed[:5]
    first = _number(top[0])
    if first is None:
        return 0.0
    near = [
        sc
        for sc in top
        if _source(sc) == _source(top[0]) and abs((_number(sc) or -99) - first) <= 2
    ]
    return len(near) / len(top)


def gap(k: int) -> Feature:
    """The best cosine less the ``k``-th (the last listed, when fewer)."""

    def value(_: str, listed: list[ScoredChunk]) -> float:
        return listed[0].vector_score - listed[min(k, len(listed)) - 1].vector_score

    return value


def z_score(_: str, listed: list[ScoredChunk]) -> float:
    """The best cosine's z-score among the group's listed cosines (0 for fewer than 3)."""
    cosines = [sc.vector_score for sc in listed]
    if len(cosines) < 3:
        return 0.0
    spread = statistics.pstdev(cosines)
    return (cosines[0] - statistics.fmean(cosines)) / spread if spread > 0 else 0.0


def agreement(_: str, listed: list[ScoredChunk]) -> float:
    """The share of the ten best vector hits the keyword list ranks in its ten best too."""
    top = listed[:10]
    return sum(1 for sc in top if 0 < sc.keyword_rank <= 10) / len(top)


def names(question: str) -> set[str]:
    """The question's digit runs and Latin capitalised words (not its first word)."""
    text = question.translate(_DIGITS)
    words = set(_NUMBER.findall(text))
    latin = _LATIN.findall(text)
    if latin and text.lstrip().startswith(latin[0]):
        latin = latin[1:]  # an English question's first word is capitalised anyway
    return words | {w.lower() for w in latin}


def shared_names(question: str, listed: list[ScoredChunk]) -> float:
    """The share of the question's :func:`names` found in the three best hits' text."""
    wanted = names(question)
    if not wanted:
        return 0.0
    text = " ".join(sc.text for sc in listed[:3]).translate(_DIGITS).lower()
    return sum(1 for w in wanted if re.search(rf"\b{re.escape(w)}\b", text)) / len(wanted)


def has_names(question: str, _: list[ScoredChunk]) -> float:
    return 1.0 if names(question) else 0.0


@functools.cache
def _words() -> WordVectors:
    """The e5 word vectors, made on first use (importing the bench loads no model)."""
    return WordVectors()


def _best_match(question: str, listed: list[ScoredChunk]) -> np.ndarray:
    return _words().best_match(question, listed[0].text) if listed else np.zeros(1)


def word_match(question: str, listed: list[ScoredChunk]) -> float:
    return float(_best_match(question, listed).mean())


def word_match_best_2(question: str, listed: list[ScoredChunk]) -> float:
    return float(np.sort(_best_match(question, listed))[-2:].mean())


CANDIDATES: dict[str, Feature] = {
    "source share": source_share,
    "neighbours": neighbours,
    "gap 1-2": gap(2),
    "gap 1-5": gap(5),
    "z-score": z_score,
    "agreement": agreement,
    "shared names": shared_names,
    "has names": has_names,
    "word match": word_match,
    "word match, best 2": word_match_best_2,
}

SETS: dict[str, tuple[str, ...]] = {
    "shipped (4)": (),
    **{f"+ {name}": (name,) for name in CANDIDATES if name != "has names"},
    "+ shared names, has names": ("shared names", "has names"),
    "+ source share, neighbours": ("source share", "neighbours"),
    "+ gaps, z-score": ("gap 1-2", "gap 1-5", "z-score"),
    "+ z-score, neighbours": ("z-score", "neighbours"),
    "+ z-score, source share, neighbours": ("z-score", "source share", "neighbours"),
    "+ word match, z-score": ("word match", "word match, best 2", "z-score"),
    "+ all": tuple(CANDIDATES),
}


def listed_of(group: str, fused: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """The group's vector-listed chunks (positive margin), best cosine first."""
    mine = [sc for sc in fused if sc.vector_margin > 0 and script_of(sc.text) == group]
    return sorted(mine, key=lambda sc: sc.vector_score, reverse=True)


def candidates(rows: Rows, side: tuple[str, bool]) -> dict[str, Matrix]:
    """Each candidate's column over the rows of ``side``."""
    questions = [texts[0] for texts in rows.texts[side]]
    listed = [listed_of(group, fused) for group, fused in rows.fused[side]]
    return {
        name: np.asarray([feature(q, lst) for q, lst in zip(questions, listed, strict=True)])
        for name, feature in CANDIDATES.items()
    }


def univariate(x: Matrix, y: np.ndarray) -> float:
    """One column's AUC, ties counted half, oriented to at least 0.5 (a fit can flip a sign)."""
    negatives = np.sort(x[~y])
    below = np.searchsorted(negatives, x[y], side="left")
    equal = np.searchsorted(negatives, x[y], side="right") - below
    value = float((below + 0.5 * equal).sum() / (y.sum() * negatives.size))
    return max(value, 1.0 - value)


def table(rows: Rows) -> tuple[str, str]:
    """The feature-set table and the one-feature AUC table."""
    out, single = [], []
    for cross in (False, True):
        side = "other script" if cross else "same script"
        keys = {h: (h, cross) for h in HALVES}
        y = {h: np.asarray(rows.relevant[keys[h]], dtype=bool) for h in HALVES}
        base = {h: np.asarray(rows.features[keys[h]], dtype=np.float64) for h in HALVES}
        extra = {h: candidates(rows, keys[h]) for h in HALVES}
        shipped = {h: np.where(shipped_flags(rows, keys[h]), -1.0, 1.0) for h in HALVES}
        rate = float(np.mean(shipped["tune"][~y["tune"]] < 0))
        n = f"{len(y['tune'])} / {len(y['held-out'])}"
        verdict = " → ".join(at(shipped[h], y[h], 0.0) for h in HALVES)
        out.append([side, "E5_FLOOR as shipped", n, "—", "—", "—", verdict])
        for label, names_ in SETS.items():
            x = {h: np.column_stack([base[h], *(extra[h][c] for c in names_)]) for h in HALVES}
            out.append([side, label, n, *tradeoff(x, y, rate)])
            print(" | ".join(out[-1]), file=sys.stderr, flush=True)
        for name in CANDIDATES:
            cells = [f"{univariate(extra[h][name], y[h]):.3f}" for h in HALVES]
            means = [
                f"{extra['held-out'][name][y['held-out'] == r].mean():.3f}" for r in (True, False)
            ]
            single.append([side, name, " / ".join(cells), " / ".join(means)])
    headers = TRADEOFF_HEADERS
    one = ["side", "feature alone", "AUC tune / held-out", "held-out mean: answerable / off-topic"]
    return format_table(headers, out), format_table(one, single)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_plan_arguments(parser)
    parser.add_argument(
        "--fused",
        action="store_true",
        help="read the 20 fused chunks (bench_floor_fit's rows), not the 15 the floor reads",
    )
    args = parser.parse_args(argv)
    rows = collect(args.per_half, args.covid_articles, ranked=not args.fused)
    sets, single = table(rows)
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}\n")
    print(sets, "\n", single, sep="\n")


if __name__ == "__main__":
    main()
