"""Part 2 of ``bench_pair.py``: the relevance floor with e5's evidence and the pair's.

The rows are ``bench_floor_fit.py``'s (one per script group of a question's
listed chunks; answerable rows of the answer's group against every row of
off-topic questions), from e5's lists and from the pair embedder's.
:func:`floor` prints the separability of each feature set (a logistic fit on
the tune half, its rates on both halves); :func:`fit_pair` fits the pair's
own ``FloorModel`` by ``bench_floor_fit``'s rules, with one change on the
other script's side (module notes of :func:`fit_pair`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import format_table
from _e5_vectors import E5Vectors
from _floor_tradeoff import HALVES, TRADEOFF_HEADERS, at, shipped_flags, tradeoff
from _pair_vectors import PairEmbedder, UseVectors
from _quality_data import DATA
from bench_floor import build
from bench_floor_fit import ARABIC, Rows, centred, collect, fit, rates, thresholded

from zerda_async.core.floor_model import FloorWeights

__all__ = ["fit_pair", "floor"]

Matrix = np.ndarray
Halves = dict[str, Matrix]


def use_features(
    rows: Rows, side: tuple[str, bool], usev: UseVectors, chunks: dict[str, Any]
) -> Matrix:
    """Per row: USE's best cosine over the group's listed chunks, and its margin over
    USE's 50th best cosine in the whole corpus."""
    out = []
    corpus_rows: dict[str, Matrix] = {}
    for question, corpus, listed in rows.texts[side]:
        if corpus not in corpus_rows:
            corpus_rows[corpus] = usev.passages([c.text for c in chunks[corpus]]).astype(np.float64)
        q = usev.queries([question])[0].astype(np.float64)
        all_cos = corpus_rows[corpus] @ q
        last = float(np.sort(all_cos)[::-1][min(49, all_cos.size - 1)])
        best = float((usev.passages(listed).astype(np.float64) @ q).max()) if listed else last
        out.append([best, best - last])
    return np.asarray(out)


def _feature_sets(rows: Rows, cross: bool, usev: UseVectors, chunks: Any) -> dict[str, Halves]:
    """e5's features per half, alone and with the centred and the USE columns."""
    keys = {h: (h, cross) for h in HALVES}
    base = {h: np.asarray(rows.features[keys[h]], dtype=np.float64) for h in HALVES}
    use = {h: use_features(rows, keys[h], usev, chunks) for h in HALVES}
    cen = {h: centred(rows, keys[h]) for h in HALVES}
    return {
        "e5 shipped (4)": base,
        "e5 + centred cosine": {h: np.hstack([base[h], cen[h]]) for h in HALVES},
        "e5 + USE cosine, margin": {h: np.hstack([base[h], use[h]]) for h in HALVES},
        "e5 + USE + centred": {h: np.hstack([base[h], use[h], cen[h]]) for h in HALVES},
    }


def floor(per_half: int, covid_articles: int, weights: Sequence[float]) -> str:
    """Part 2's table."""
    e5v, usev = E5Vectors(), UseVectors()
    chunks, _ = build(DATA, covid_articles)
    e5_rows = collect(per_half, covid_articles)
    pair_rows = {w: collect(per_half, covid_articles, PairEmbedder(e5v, usev, w)) for w in weights}
    table = []
    for cross in (False, True):
        side = "other script" if cross else "same script"
        keys = {h: (h, cross) for h in HALVES}
        y = {h: np.asarray(e5_rows.relevant[keys[h]], dtype=bool) for h in HALVES}
        n = f"{len(y['tune'])} / {len(y['held-out'])}"
        # The shipped floor's verdicts, and the share of off-topic rows it flags on tune.
        shipped = {h: np.where(shipped_flags(e5_rows, keys[h]), -1.0, 1.0) for h in HALVES}
        rate = float(np.mean(shipped["tune"][~y["tune"]] < 0))
        verdict = " → ".join(at(shipped[h], y[h], 0.0) for h in HALVES)
        table.append([side, "E5_FLOOR as shipped", n, "—", "—", "—", verdict])
        for name, x in _feature_sets(e5_rows, cross, usev, chunks).items():
            table.append([side, name, n, *tradeoff(x, y, rate)])
            print(" | ".join(table[-1]), file=sys.stderr, flush=True)
        for w, rows in pair_rows.items():
            py = {h: np.asarray(rows.relevant[keys[h]], dtype=bool) for h in HALVES}
            px = {h: np.asarray(rows.features[keys[h]], dtype=np.float64) for h in HALVES}
            label = f"pair w {w}: shipped (4) on its lists"
            pn = f"{len(py['tune'])} / {len(py['held-out'])}"
            table.append([side, label, pn, *tradeoff(px, py, rate)])
            print(" | ".join(table[-1]), file=sys.stderr, flush=True)
    headers = TRADEOFF_HEADERS
    return format_table(headers, table)


def _alone_offtopic(rows: Rows, side: tuple[str, bool]) -> np.ndarray:
    """Off-topic rows of questions with no chunk of their own script listed."""
    y = np.asarray(rows.relevant[side], dtype=bool)
    alone: np.ndarray = np.asarray([m[0] for m in rows.margin[side]], dtype=bool) & ~y
    return alone


def fit_pair(per_half: int, covid_articles: int, w: float) -> str:
    """The pair embedder's ``FloorModel``, fitted on the tune half, as code, with its rates.

    ``same``: ``bench_floor_fit``'s rule (at most 0.5% of the tune half's
    answerable rows flagged).  The other script: weights everywhere (the
    margin rule's 0.05 is e5's scale), their threshold set apart for Arabic
    questions and the others so that the tune half's off-topic questions
    asked in the other language than every listed chunk are flagged as
    often as ``E5_FLOOR`` flags them on e5's lists (its margin rule), with
    as few false flags as that allows.
    """
    e5v, usev = E5Vectors(), UseVectors()
    reference = collect(per_half, covid_articles)
    rows = collect(per_half, covid_articles, PairEmbedder(e5v, usev, w))
    out = []
    fitted: dict[bool, FloorWeights] = {}
    for cross in (False, True):
        side = ("tune", cross)
        x = np.asarray(rows.features[side], dtype=np.float64)
        y = np.asarray(rows.relevant[side], dtype=bool)
        bias, weights = fit(x, y)
        if not cross:
            fitted[cross] = thresholded(bias, weights, x, y, None)
            continue
        # The margin rule's verdicts on e5's lists, per direction, as a count to
        # match on the pair's rows (``threshold`` reads only how many are 1).
        ref_x = np.asarray(reference.features[side], dtype=np.float64)
        ref_alone = _alone_offtopic(reference, side)
        ref_flag = np.asarray([m[1] for m in reference.margin[side]], dtype=bool)
        alone = _alone_offtopic(rows, side)
        synthetic = np.zeros(len(y), dtype=bool)
        for arabic in (False, True):
            ref_mine = ref_alone & ((ref_x[:, ARABIC] > 0.5) == arabic)
            rate = float(ref_flag[ref_mine].mean())
            mine = np.flatnonzero(alone & ((x[:, ARABIC] > 0.5) == arabic))
            synthetic[mine[: round(rate * mine.size)]] = True
            out.append(
                f"E5_FLOOR flags {rate:.1%} of the tune half's off-topic"
                f" {'Arabic' if arabic else 'other'} questions asked across ({ref_mine.sum()} rows)"
            )
        only = np.asarray([m[0] for m in rows.margin[side]], dtype=bool)
        margin = np.stack([only, synthetic], axis=1)
        fitted[cross] = thresholded(bias, weights, x, y, margin)
    for cross in (False, True):
        for half in HALVES:
            hx = np.asarray(rows.features[(half, cross)], dtype=np.float64)
            hy = np.asarray(rows.relevant[(half, cross)], dtype=bool)
            s = fitted[cross].bias + hx @ np.asarray(fitted[cross].weights)
            line = f"{'cross' if cross else 'same'} {half}: {rates(s, hy, 0.0)}"
            for name, arabic in (("Arabic", True), ("other", False)):
                mine = (hx[:, ARABIC] > 0.5) == arabic
                line += f"; {name} questions: {rates(s[mine], hy[mine], 0.0)}"
            out.append(line)
    code = {
        cross: f"FloorWeights({f.bias!r}, ({', '.join(map(repr, f.weights))}))"
        for cross, f in fitted.items()
    }
    out.append(f"PAIR_FLOOR = FloorModel(\n    same={code[False]},\n    cross={code[True]},")
    out.append("    depth=50,\n)")
    return "\n".join(out)
