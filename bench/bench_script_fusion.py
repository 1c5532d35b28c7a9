"""Script-aware convex fusion: keyword evidence the other script's chunks cannot have.

Issue 19: over a bilingual corpus (XQuAD's Arabic questions over XQuAD en +
ARCD) the recommended profile ranks the English answer below the e5 list
alone (``bench/README.md``, pseudo-relevance feedback): keyword evidence
reaches only chunks in the question's script, so an ARCD chunk sharing the
question's common words starts ahead of every English chunk, which has
vector evidence only.  This bench measures fusion rules that read only what
convex fusion already has (each candidate's text and so its script, its
scaled cosine, its keyword evidence), so every index placement would fuse
alike:

* the *home script* is the script of the keyword hits holding the most
  keyword evidence (``core.floor_model.script_of``); the question's script,
  as far as fusion can see it.  A vector candidate of another script is
  *foreign*.  With no keyword evidence, or no foreign candidate, every rule
  leaves the lists as they are: a one-script corpus is unchanged exactly.
* ``impute knn K``: a foreign candidate gets, in place of the keyword
  evidence it cannot have, the mean keyword evidence of the K home-script
  vector candidates nearest to it in scaled cosine (0 for those the keyword
  list did not find, as fusion counts them);
* ``impute best × α``: α × the best home-script keyword evidence × its own
  scaled cosine;
* ``shrink``: the keyword weight times (1 - the foreign share of the vector
  list's top 10); ``, renormalised`` gives the difference to the vector weight;
* ``gated square`` / ``gated cut T``: home-script keyword evidence squared,
  or counted 0 below T, only when a foreign candidate is listed.

Each rule replaces ``core.retrieval.fusion.fuse_convex`` in this process
(every placement fuses through it); the recommended profile (retrieve 20,
filter, rank: ``bench_rerank.ranked_list``) is run per rule over
``bench_pair.ranking_sets`` (nine sets), tune = even articles, held-out =
odd ones.  The rule, on tune only: among the rules losing nothing beyond
noise in any set (the 95% interval of ΔMRR@20 against the profile before
reaches 0 or above), the largest mean ΔMRR@20 over the two bilingual sets.

    PYTHONPATH=$PWD python bench/bench_script_fusion.py [--only NAME] [--rules a;b]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Corpus
from _quality_engines import make_engine
from _quality_metrics import paired_delta
from bench_pair import HALVES, by_half, ranking_sets, split, vector_ranks
from bench_rerank import _config, ranked_list

from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import fusion
from zerda_async.core.retrieval.neighbours import raised_by_neighbours
from zerda_async.core.retrieval.script_evidence import home_script
from zerda_async.core.retrieval.script_evidence import script_of_chunk as script
from zerda_async.embedders import E5Embedder as ProductE5

Ranks = list[int | None]
BILINGUAL = ("XQuAD ar -> XQuAD en + ARCD", "XQuAD en -> XQuAD ar + COVID-QA")
VECTOR, KEYWORD = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD
SHIPPED = fusion.fuse_convex


class Scene:
    """What one fusion call holds, seen by a rule: lists, evidence, scripts, weights."""

    def __init__(self, lists: Sequence[fusion.MethodList], gains: list[list[float]]) -> None:
        self.vector: Sequence[ScoredChunk] = ()
        self.v_at = self.k_at = -1
        for number, (method, results) in enumerate(lists):
            if method is VECTOR:
                self.vector, self.v_at = results, number
            elif method is KEYWORD:
                self.k_at = number
        self.keyword: Sequence[ScoredChunk] = lists[self.k_at][1] if self.k_at >= 0 else ()
        self.gains = gains
        self.cosine = fusion._evidence(VECTOR, self.vector)  # min-max scaled, not raised
        self.home = ""
        self.foreign: list[int] = []
        if self.v_at < 0 or self.k_at < 0:
            return
        # The product's home script: the gains are the evidence times one positive
        # weight, so the script holding the most of either is the same.
        home = home_script(self.keyword, gains[self.k_at])
        if home is None:
            return
        self.home = home
        self.foreign = [i for i, sc in enumerate(self.vector) if script(sc) != self.home]

    def keyword_of(self, weight: float) -> dict[str, float]:
        """Each keyword-listed chunk's evidence (its gain / the keyword weight), by hash."""
        out: dict[str, float] = {}
        for sc, g in zip(self.keyword, self.gains[self.k_at], strict=True):
            out.setdefault(sc.content_hash, g / weight if weight > 0 else 0.0)
        return out

    def impute(self, values: Mapping[int, float], weight: float) -> None:
        """Raise each foreign candidate's gain to ``weight`` × its imputed evidence at least."""
        own = self.keyword_of(weight)
        gain = self.gains[self.v_at]
        for i, value in values.items():
            have = own.get(self.vector[i].content_hash, 0.0)
            gain[i] += weight * max(0.0, value - have)


Rule = Callable[[Scene, Mapping[RetrievalMethod, float]], None]


def impute_knn(k: int) -> Rule:
    """Mean keyword evidence of the ``k`` home-script candidates nearest in scaled cosine."""

    def rule(scene: Scene, weights: Mapping[RetrievalMethod, float]) -> None:
        w = weights[KEYWORD]
        own = scene.keyword_of(w)
        foreign = set(scene.foreign)
        home = [
            (scene.cosine[i], own.get(sc.content_hash, 0.0))
            for i, sc in enumerate(scene.vector)
            if i not in foreign
        ]
        if not home or not foreign:
            return
        values = {}
        for i in scene.foreign:
            v = scene.cosine[i]
            near = sorted(home, key=lambda pair: abs(pair[0] - v))[:k]
            values[i] = statistics.fmean(e for _, e in near)
        scene.impute(values, w)

    return rule


def impute_best(alpha: float, top_foreign: bool = False) -> Rule:
    """``alpha`` × the best home-script keyword evidence × the candidate's scaled cosine.

    ``top_foreign``: only when the vector list's best candidate is foreign (the
    vectors then say the answer is in the other script).
    """

    def rule(scene: Scene, weights: Mapping[RetrievalMethod, float]) -> None:
        if top_foreign and 0 not in scene.foreign:
            return
        w = weights[KEYWORD]
        best = (
            max(
                (
                    e
                    for sc, e in zip(scene.keyword, scene.gains[scene.k_at], strict=True)
                    if script(sc) == scene.home
                ),
                default=0.0,
            )
            / w
            if w > 0
            else 0.0
        )
        scene.impute({i: alpha * best * scene.cosine[i] for i in scene.foreign}, w)

    return rule


def shrink(renormalise: bool, top: int = 10) -> Rule:
    """The keyword weight times (1 - the foreign share of the vector list's ``top``)."""

    def rule(scene: Scene, weights: Mapping[RetrievalMethod, float]) -> None:
        if not scene.foreign:
            return
        share = sum(1 for i in scene.foreign if i < top) / max(1, min(top, len(scene.vector)))
        scene.gains[scene.k_at] = [g * (1 - share) for g in scene.gains[scene.k_at]]
        if renormalise and weights[VECTOR] > 0:
            # The weight taken from keyword evidence goes to the vector evidence.
            factor = 1 + share * weights[KEYWORD] / weights[VECTOR]
            scene.gains[scene.v_at] = [g * factor for g in scene.gains[scene.v_at]]

    return rule


def gated(transform: Callable[[float], float]) -> Rule:
    """Home-script keyword evidence transformed, only when a foreign candidate is listed."""

    def rule(scene: Scene, weights: Mapping[RetrievalMethod, float]) -> None:
        w = weights[KEYWORD]
        if not scene.foreign or w <= 0:
            return
        scene.gains[scene.k_at] = [
            w * transform(g / w) if script(sc) == scene.home else g
            for sc, g in zip(scene.keyword, scene.gains[scene.k_at], strict=True)
        ]

    return rule


RULES: dict[str, Rule] = {
    "impute knn 3": impute_knn(3),
    "impute knn 5": impute_knn(5),
    "impute knn 10": impute_knn(10),
    "impute best × 1": impute_best(1.0),
    "impute best × 0.5": impute_best(0.5),
    "impute best × 1.5": impute_best(1.5),
    "impute best × 2": impute_best(2.0),
    "impute best × 1, top foreign": impute_best(1.0, top_foreign=True),
    "shrink": shrink(False),
    "shrink, renormalised": shrink(True),
    "gated square": gated(lambda e: e * e),
    "gated cut 0.3": gated(lambda e: e if e >= 0.3 else 0.0),
}
_active: list[Rule] = []


def convex_with_rule(
    lists: Sequence[fusion.MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    keyword_evidence: Sequence[float] | None = None,
    neighbour_weight: float = 0.0,
    *,
    cross_script: bool = False,
) -> list[ScoredChunk]:
    """``fuse_convex`` with the active rule applied to its gains (the product's without)."""
    if not _active:
        return SHIPPED(
            lists, top_k, weights, keyword_evidence, neighbour_weight, cross_script=cross_script
        )
    gains: list[list[float]] = []
    floors: list[float] = []
    for method, results in lists:
        floors.append(results[-1].vector_score if results else 0.0)
        evidence = fusion._evidence(method, results)
        if method is KEYWORD and keyword_evidence is not None:
            evidence = list(keyword_evidence)
        elif method is VECTOR and neighbour_weight > 0:
            evidence = raised_by_neighbours(evidence, results, neighbour_weight)
        gains.append([weights[method] * e for e in evidence])
    _active[0](Scene(lists, gains), weights)
    return fusion._accumulate(lists, gains, floors, top_k)


def profile_ranks(engine: Any, corpus: Corpus, rule: Rule | None) -> Ranks:
    """Each question's 1-based answer rank in the recommended profile under ``rule``."""
    _active[:] = [rule] if rule is not None else []
    ranks: Ranks = []
    for q in corpus.questions:
        got = [sc.doc_id for sc in ranked_list(engine, q.text, 20)]
        ranks.append(next((i + 1 for i, x in enumerate(got) if x in q.relevant), None))
    _active.clear()
    return ranks


Scores = dict[str, dict[str, dict[str, tuple[float, float]]]]
"""rule -> set -> half -> (ΔMRR@20 against the profile before, 95% half-width)."""


def choose(scores: Scores) -> str | None:
    """The module's rule on tune: no set loses beyond noise; best mean bilingual gain."""
    safe = [
        name
        for name, per in scores.items()
        if all(m + w >= 0 for d in per.values() for m, w in [d["tune"]])
    ]
    if not safe:
        return None
    return max(
        safe,
        key=lambda n: (
            statistics.fmean(scores[n][s]["tune"][0] for s in BILINGUAL if s in scores[n])
            if any(s in scores[n] for s in BILINGUAL)
            else 0.0
        ),
    )


def run(sets: Sequence[Corpus], rules: Mapping[str, Rule]) -> tuple[Scores, list[list[Any]]]:
    """Every set under the e5 list alone, the profile before, each rule, the profile now.

    "before" is the recommended profile with ``retriever.cross_script_evidence``
    off (the profile the rules were chosen against); "now" has it on, as
    ``recommended()`` ships it, and must rank as ``impute best × 1``.
    """
    e5v = E5Vectors()
    scores: Scores = {name: {} for name in rules}
    rows: list[list[Any]] = []
    for corpus in sets:
        halves = split(corpus)
        n = len(corpus.questions)
        ids = [c.doc_id for c in corpus.chunks]
        before, now = _config(), _config()
        before.retriever.cross_script_evidence = False
        now.retriever.cross_script_evidence = True
        engine = make_engine(before, corpus.chunks, E5Embedder(e5v))
        alone = vector_ranks(_centred_scores(e5v, corpus), ids, corpus)
        base = profile_ranks(engine, corpus, None)
        rows.append([corpus.name, "e5 vector list alone", n, *by_half(alone, halves), "", ""])
        rows.append([corpus.name, "recommended before", n, *by_half(base, halves), "", ""])
        found = {name: profile_ranks(engine, corpus, rule) for name, rule in rules.items()}
        shipped = profile_ranks(make_engine(now, corpus.chunks, E5Embedder(e5v)), corpus, None)
        same = " (= impute best × 1)" if shipped == found.get("impute best × 1") else ""
        found[f"cross_script_evidence, as shipped{same}"] = shipped
        for name, ranks in found.items():
            per = {h: paired_delta(*_half(ranks, base, halves, h)) for h in HALVES}
            if name in rules:
                scores[name][corpus.name] = per
            kept = " unchanged" if ranks == base else ""
            cells = [_cell(*per[h]) for h in HALVES]
            rows.append([corpus.name, f"+ {name}{kept}", n, *by_half(ranks, halves), *cells])
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    return scores, rows


def _half(ranks: Ranks, base: Ranks, halves: Sequence[str], half: str) -> tuple[Ranks, Ranks]:
    """``ranks`` and ``base`` of the questions of one half."""
    keep = [i for i, h in enumerate(halves) if h == half]
    return [ranks[i] for i in keep], [base[i] for i in keep]


def _cell(mean: float, width: float) -> str:
    """``+0.012 ± 0.010``, marked ↑ / ↓ when the interval excludes zero."""
    mark = " ↑" if mean - width > 0 else (" ↓" if mean + width < 0 else "")
    return f"{mean:+.3f} ± {width:.3f}{mark}"


def _centred_scores(e5v: E5Vectors, corpus: Corpus) -> Any:
    """The centred e5 question-by-chunk cosines (the profile's vector search, every chunk)."""
    d = np.asarray(ProductE5.script_direction.unit)
    p = e5v.passages([c.text for c in corpus.chunks]).astype(np.float64)
    q = e5v.queries([q.text for q in corpus.questions]).astype(np.float64)
    q = q - np.outer(q @ d, d)
    return q @ p.T


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--only", default="", help="only the sets whose name contains this")
    parser.add_argument("--rules", default="", help="';'-separated rule names (default: all)")
    args = parser.parse_args(argv)
    load_start = describe_load()
    fusion.fuse_convex = convex_with_rule
    names = [r for r in args.rules.split(";") if r] or list(RULES)
    sets = [c for c in ranking_sets(DATA) if args.only in c.name]
    scores, rows = run(sets, {n: RULES[n] for n in names})
    chosen = choose(scores)
    headers = ["set", "system", "questions", "tune R@20 / MRR@20", "held-out R@20 / MRR@20"]
    headers += ["tune ΔMRR vs before (95%)", "held-out ΔMRR vs before (95%)"]
    text = [
        "# Script-aware convex fusion (bench/bench_script_fusion.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {load_start} at start; {describe_load()} at the end",
        f"Command: {command_line()}",
        "",
        format_table(headers, rows),
        "",
        f"Chosen on tune (no set below noise, best mean bilingual gain): {chosen or 'none'}",
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('script_fusion', out)}")


if __name__ == "__main__":
    main()
