"""Fit the relevance floor's model (``E5_FLOOR``) on the tune half of the floor bench.

For every question of ``bench_floor.py``'s plan (same corpora, same halves:
even articles tune, odd ones held-out) the recommended profile retrieves the
chunks, and :func:`~zerda_async.core.floor_model.group_features` gives one
feature row per script of the vector-listed chunks.  Rows are labelled:

* an answerable question's row of the answer's script is relevant (its other
  rows are left out: in a bilingual corpus the other script's chunks are not
  where its answer is, and must not teach the model that they are);
* every row of an off-topic question is irrelevant.

Rows in the question's script fit the ``same`` weights, the others the
``cross`` weights (an L2-regularised logistic regression on standardised
features, by gradient descent).  The thresholds, folded into the biases:

* ``same``: at most 0.5% of the tune half's relevant rows fall below it
  (half of a 1% false-flag budget, the other half for data it was not fitted
  on): the ``floor(0.005 n)`` lowest, the threshold halfway between the last
  of them and the next;
* ``cross``: off-topic questions must be flagged at least as often as the
  margin rule of before (``E5_MARGIN_FLOOR``) flags them.  On the tune half's
  off-topic questions with no chunk of their own script listed (asked in the
  other language than the corpus) the threshold flags exactly as many as the
  rule does, and no more rows of any kind than that needs (the lowest
  false-flag rate under the constraint).  e5-small's cross-language evidence
  cannot meet a 1% budget with most off-topic questions flagged (the run
  prints the trade-off).

The weights are rounded to 4 decimals before the thresholds are set on
their scores, and the biases rounded up (toward accepting), so the printed
code flags no more rows than the rule says.

The ``cross`` threshold is set apart for Arabic questions and the others
(through the ``arabic_question`` weight): the rule flags each direction at
its own rate.  The ``same`` one is shared (split, each direction's 0.5% held
out less well: 1.0% of the held-out Arabic rows).

Then, for the other script's chunks alone in the list and beside chunks of
the question's script apart, the run compares the weights with the margin
rule applied to that group (:data:`RULE`) on the tune half, and keeps the
rule where it flags no more answerable rows in either direction (alone: the
two flag as many off-topic rows by construction).  The printed model says
which judges where (``cross``, ``cross_alone``).

It prints the fitted model as code (paste it into
``zerda_async/embedders/_e5_floor.py``), each side's rates on both halves,
and the trade-off the issue's targets ask for (>= 97.5% of off-topic rows
flagged, <= 1% of answerable ones) with these features and with one more the
engine does not compute: the best *centred* cosine of the group, question and
chunks each less the mean vector of their kind and script (the means of the
tune half's questions and of its articles' chunks), which removes much of
e5's language and question/passage offsets (:func:`centred`).

    PYTHONPATH=$PWD python bench/bench_floor_fit.py [--per-half 150]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe_load, describe_machine
from _e5_vectors import E5Embedder, E5Vectors
from _logistic import descend
from _quality_data import DATA
from bench_floor import add_plan_arguments, build, halves, make_engine

from zerda_async.core.floor_model import (
    FEATURES,
    FloorWeights,
    MarginRule,
    group_features,
    script_of,
)
from zerda_async.core.models import ScoredChunk
from zerda_async.core.vector_floor import covers_query
from zerda_async.embedders import E5_MARGIN_FLOOR

Matrix = NDArray[np.float64]

Side = tuple[str, bool]
"""(half, cross: the chunks' script differs from the question's)."""


@dataclass
class Rows:
    """Per side: the shipped features, the centring inputs and the labels of each row."""

    features: dict[Side, list[list[float]]] = field(default_factory=dict)
    relevant: dict[Side, list[bool]] = field(default_factory=dict)
    probes: dict[Side, list[tuple[str, str, Matrix, Matrix]]] = field(default_factory=dict)
    """(question's script, chunks' script, question vector, listed chunks' vectors)."""
    questions: dict[str, list[Matrix]] = field(default_factory=dict)
    """The tune half's question vectors by script (their means centre questions)."""
    chunks: dict[str, list[Matrix]] = field(default_factory=dict)
    """The tune half's chunk vectors by script."""
    texts: dict[Side, list[tuple[str, str, list[str]]]] = field(default_factory=dict)
    """(question, corpus name, the listed chunks of the row's group): other models' features."""
    fused: dict[Side, list[tuple[str, list[ScoredChunk]]]] = field(default_factory=dict)
    """(the row group's script, a copy of the question's fused list): other features."""
    margin: dict[Side, list[tuple[bool, bool, bool]]] = field(default_factory=dict)
    """(the question's listed chunks are all in the other script, E5_MARGIN_FLOOR flags
    the question, the margin rule as ``cross`` or ``cross_alone`` would apply it fails
    this row: :data:`RULE` on the row's group, or on the whole list when alone)."""

    def add(
        self,
        side: Side,
        features: list[float],
        relevant: bool,
        probe: Any,
        margin: Any,
        texts: tuple[str, str, list[str]],
        fused: tuple[str, list[ScoredChunk]],
    ) -> None:
        self.texts.setdefault(side, []).append(texts)
        self.fused.setdefault(side, []).append(fused)
        self.features.setdefault(side, []).append(features)
        self.relevant.setdefault(side, []).append(relevant)
        self.probes.setdefault(side, []).append(probe)
        self.margin.setdefault(side, []).append(margin)


SAME_BUDGET = 0.005
RULE = MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree)
"""E5_MARGIN_FLOOR's margins as a rule for one script group."""


def tune_article(doc_id: str) -> bool:
    return int(doc_id.split("-")[1]) % 2 == 0


def collect(per_half: int, covid_articles: int, embedder: Any = None, ranked: bool = False) -> Rows:
    """Feature rows of every question of the plan, by half and side.

    ``embedder``: the bench's e5 wrapper by default; another in its shape
    (``bench/_pair_vectors.py``) gives the rows of its own vector lists.
    ``ranked``: only the ``ranking.max_chunks_to_rank`` first fused chunks,
    those the composer's floor reads (``E5_FLOOR`` was fitted on all 20: its
    features read the best chunk; a z-score over the list needs ``True``).
    """
    corpora, plan = build(DATA, covid_articles)
    e5 = embedder if embedder is not None else E5Embedder(E5Vectors())
    rows = Rows()
    for name in ("XQuAD en", "XQuAD ar", "ARCD", "COVID-QA"):
        tune = [c for c in corpora[name] if tune_article(c.doc_id)]
        vectors = np.asarray(e5.embed_batch([c.text for c in tune]), dtype=np.float64)
        rows.chunks.setdefault(script_of(tune[0].text), []).append(vectors)
    engines = {}
    for kind, _, questions, corpus in plan:
        if corpus not in engines:
            engines[corpus] = make_engine(corpora[corpus], e5)
        state = engines[corpus]._state
        retriever = state.retriever
        assert retriever is not None
        scripts = {c.doc_id: script_of(c.text) for c in corpora[corpus]}
        top_k = state.config.retriever.top_k
        keep = state.config.ranking.max_chunks_to_rank if ranked else top_k
        minimum = state.config.composer.min_query_coverage
        for half, picked in halves(questions, per_half).items():
            for q in picked:
                answer = scripts.get(sorted(q.relevant)[0]) if kind[0] == "a" else None
                asked = script_of(q.text)
                vector = np.asarray(e5(q.text), dtype=np.float64)
                if half == "tune":
                    rows.questions.setdefault(asked, []).append(vector[None, :])
                fused = retriever.retrieve(q.text, top_k)[:keep]
                groups = group_features(fused, q.text)
                # The margin rule's verdict on the same list (composer.min_vector_margin 0).
                flagged = not covers_query(fused, minimum, 0.0, E5_MARGIN_FLOOR, q.text)
                only = all(cross for cross, _ in groups)
                for cross, features in groups:
                    group = ("other" if asked == "ar" else "ar") if cross else asked
                    if answer is not None and group != answer:
                        continue
                    mine = [sc for sc in fused if script_of(sc.text) == group]
                    # Alone, the rule judges the whole list (keyword-only
                    # chunks of the question's script too), as E5_FLOOR does.
                    fails = flagged if only else not RULE.passes(mine, minimum)
                    margin = (only, flagged, fails)
                    listed = [
                        sc.text
                        for sc in fused
                        if sc.vector_margin > 0 and script_of(sc.text) == group
                    ]
                    probe = (asked, group, vector, np.asarray(e5.embed_batch(listed)))
                    texts = (q.text, corpus, listed)
                    # Copies: a retriever may hand the same objects back, reset.
                    kept = (group, [msgspec.structs.replace(sc) for sc in fused])
                    rows.add(
                        (half, cross), features, answer is not None, probe, margin, texts, kept
                    )
    return rows


def centred(rows: Rows, side: Side) -> Matrix:
    """Each row's best centred cosine (see the module notes), one column."""
    question_mean = {s: np.concatenate(v).mean(axis=0) for s, v in rows.questions.items()}
    chunk_mean = {s: np.concatenate(v).mean(axis=0) for s, v in rows.chunks.items()}
    out = []
    for asked, group, vector, listed in rows.probes[side]:
        q = vector - question_mean[asked]
        p = listed - chunk_mean[group]
        cosines = (p @ q) / (np.linalg.norm(p, axis=1) * np.linalg.norm(q))
        out.append(float(cosines.max()))
    return np.asarray(out)[:, None]


def fit(x: Matrix, y: NDArray[np.bool_], l2: float = 1e-3) -> tuple[float, Matrix]:
    """Logistic regression (threshold 0.5 in the bias) in raw feature units: (bias, weights)."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    b, w = descend((x - mean) / scale, y, 4000, l2=l2)
    raw = w / scale
    return float(b - raw @ mean), raw


def threshold(s: Matrix, y: NDArray[np.bool_], counted: Matrix | None = None) -> float:
    """The score below which to flag (see the module notes).

    ``counted`` (``cross``): per row, the margin rule's verdict on an
    off-topic question with no chunk in its own script (-1: not counted).
    The threshold flags as many of those rows as the rule does, and no more
    rows of any kind than that needs: halfway between the last of them it must
    flag and the next score above.
    """
    if counted is None:
        # Flag k = floor(0.005 n) relevant rows exactly (a quantile would
        # interpolate past the k-th): halfway to the next one up.
        ranked = np.sort(s[y])
        k = int(SAME_BUDGET * ranked.size)
        if k == 0:
            return float(ranked[0]) - 1.0
        if k >= ranked.size:
            return float(ranked[-1])
        return (float(ranked[k - 1]) + float(ranked[k])) / 2
    target = int((counted == 1).sum())
    if target == 0:
        return float(s.min())
    kth = float(np.sort(s[counted >= 0])[target - 1])
    above = s[s > kth]
    return (kth + float(above.min())) / 2 if above.size else kth + 1.0


ARABIC = FEATURES.index("arabic_question")


def thresholded(
    bias: float, w: Matrix, x: Matrix, y: NDArray[np.bool_], margin: NDArray[np.bool_] | None
) -> FloorWeights:
    """The fitted weights with the threshold (:func:`threshold`) folded in.

    On the ``cross`` side (``margin``: per row, whether the question had only
    other-script chunks and whether ``E5_MARGIN_FLOOR`` flags it: the first
    two fields of :attr:`Rows.margin`) it is set
    apart for Arabic questions and the others: their cross-script cosines sit
    on different scales, and the margin rule flags each direction's off-topic
    questions at its own rate.
    """
    # Round the weights first and set the threshold on the rounded scores;
    # the bias is then rounded up (toward accepting), so rounding never adds
    # a false flag.
    w = np.asarray([round(float(v), 4) for v in w])
    s = bias + x @ w
    arabic = x[:, ARABIC] > 0.5
    if margin is None:  # one budget for all: split, each direction's 0.5% held out less well
        return FloorWeights(_up(bias - threshold(s, y)), tuple(float(v) for v in w))
    # Only the off-topic rows of questions with no chunk in their own script
    # are the margin rule's cross-language flags to match.
    counted = np.where(margin[:, 0] & ~y, margin[:, 1].astype(np.float64), -1.0)
    at = {a: threshold(s[arabic == a], y[arabic == a], counted[arabic == a]) for a in (False, True)}
    weights = [float(v) for v in w]
    shifted = _up(bias - at[False])
    # Arabic questions' bias (shifted + the arabic weight) rounded up as well.
    weights[ARABIC] = _up(bias + float(w[ARABIC]) - at[True] - shifted)
    return FloorWeights(shifted, tuple(weights))


def _up(value: float) -> float:
    """``value`` rounded up to 4 decimals."""
    return round(math.ceil(round(value * 1e4, 6)) / 1e4, 4)


def rates(s: Matrix, y: NDArray[np.bool_], at: float) -> str:
    false = float(np.mean(s[y] < at)) if y.any() else 0.0
    flagged = float(np.mean(s[~y] < at)) if (~y).any() else 0.0
    return (
        f"false flags {false:.1%} of {int(y.sum())},"
        f" off-topic flagged {flagged:.1%} of {int((~y).sum())}"
    )


def false_flags(s: Matrix, y: NDArray[np.bool_]) -> float:
    """The share of relevant rows scoring below zero."""
    return float(np.mean(s[y] < 0)) if y.any() else 0.0


def auc(s: Matrix, y: NDArray[np.bool_]) -> float:
    """The chance that a relevant row outscores an off-topic one."""
    ranks = s.argsort().argsort() + 1.0
    n, m = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - n * (n + 1) / 2) / (n * m))


def targets(rows: Rows, side: Side, extra: bool) -> str:
    """Held-out rates at the tune half's 1% false flags and at its 97.5% off-topic flags."""
    x = {h: np.asarray(rows.features[(h, side[1])], dtype=np.float64) for h in HALVES}
    if extra:
        x = {h: np.hstack([x[h], centred(rows, (h, side[1]))]) for h in HALVES}
    y = {h: np.asarray(rows.relevant[(h, side[1])], dtype=bool) for h in HALVES}
    bias, w = fit(x["tune"], y["tune"])
    s = {h: bias + x[h] @ w for h in HALVES}
    strict = float(np.quantile(s["tune"][y["tune"]], 0.01))
    flagging = float(np.quantile(s["tune"][~y["tune"]], 0.975))
    held = (s["held-out"], y["held-out"])
    return (
        f"AUC {auc(*held):.3f}; at 1% false flags: {rates(*held, strict)};"
        f" at 97.5% flagged: {rates(*held, flagging)}"
    )


HALVES = ("tune", "held-out")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_plan_arguments(parser)
    args = parser.parse_args(argv)
    rows = collect(args.per_half, args.covid_articles)
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}")
    print(f"Features: {', '.join(FEATURES)}")
    fitted: dict[bool, FloorWeights] = {}
    rule_wins = {True: True, False: True}  # alone (no own-script chunk listed) or beside
    for cross in (False, True):
        side = "cross" if cross else "same"
        x = np.asarray(rows.features[("tune", cross)], dtype=np.float64)
        y = np.asarray(rows.relevant[("tune", cross)], dtype=bool)
        margin = np.asarray(rows.margin[("tune", cross)], dtype=bool)
        bias, w = fit(x, y)
        fitted[cross] = thresholded(bias, w, x, y, margin if cross else None)
        for half in HALVES:
            hx = np.asarray(rows.features[(half, cross)], dtype=np.float64)
            hy = np.asarray(rows.relevant[(half, cross)], dtype=bool)
            hm = np.asarray(rows.margin[(half, cross)], dtype=bool)
            s = fitted[cross].bias + hx @ np.asarray(fitted[cross].weights)
            rule = np.where(hm[:, 2], -1.0, 1.0)
            print(f"{side} {half}: weights: {rates(s, hy, 0.0)}")
            for name, arabic in (("Arabic", True), ("other", False)):
                mine = (hx[:, ARABIC] > 0.5) == arabic
                print(f"  {name} questions, weights: {rates(s[mine], hy[mine], 0.0)}")
                for alone in (True, False) if cross else ():
                    where = "no own-script chunk" if alone else "beside own-script chunks"
                    only = mine & (hm[:, 0] == alone)
                    for label, v in (("weights", s), ("margin rule", rule)):
                        print(f"    {where}, {label}: {rates(v[only], hy[only], 0.0)}")
                    if half == "tune" and false_flags(rule[only], hy[only]) > false_flags(
                        s[only], hy[only]
                    ):
                        rule_wins[alone] = False
    # Where the threshold was matched (no own-script chunk) the rule and the
    # weights flag as many off-topic questions: the rule wins when it flags no
    # more answerable ones.  Beside own-script chunks the same-script weights
    # flag most off-topic questions already; fewer false flags decide.
    for alone in (True, False):
        where = "no own-script chunk" if alone else "beside own-script chunks"
        print(f"tune, {where}: {'margin rule' if rule_wins[alone] else 'weights'}")
    print("\nHeld-out trade-off of the same model family, thresholds from the tune half:")
    for cross in (False, True):
        for extra in (False, True):
            label = "+ centred cosine" if extra else "shipped features"
            side = "cross" if cross else "same"
            print(f"  {side}, {label}: {targets(rows, ('', cross), extra)}")
    margins = "MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree)"
    weights = {
        cross: f"FloorWeights({w.bias!r}, ({', '.join(map(repr, w.weights))}))"
        for cross, w in fitted.items()
    }
    print(f"\nE5_FLOOR = FloorModel(\n    same={weights[False]},")
    print(f"    cross={margins if rule_wins[False] else weights[True]},\n    depth=50,")
    if rule_wins[True] != rule_wins[False]:
        print(f"    cross_alone={margins if rule_wins[True] else weights[True]},")
    print(")")


if __name__ == "__main__":
    main()
