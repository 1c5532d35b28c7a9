"""Learned linear maps on e5-small's question vectors: chosen on the tune half, measured held-out.

Script centring (``core.script_centring``) takes one direction, the script
offset, out of a question vector.  This bench asks whether a full linear map
on top of it, fitted on the public data, brings questions nearer their
answers, above all Arabic questions to English chunks.  Two fits
(``_question_map_fit``): *answer pairs* (a softmax loss over each corpus's
chunks) and *twin alignment* (ridge regression of a question part of the
way toward its translation, XQuAD's parallel questions).  One map per
question script; measured on the vector list alone (cosine of the centred,
mapped question; recall@20 and MRR@20 of the first relevant chunk).

Data: ``bench_floor.build``'s answerable groups (XQuAD en/ar within and
across languages, ARCD, COVID-QA on a few articles, and the bilingual
corpora), split by article parity as every floor bench is: even articles are
the *tune* half, odd ones *held-out*.  Each fit's recipe is chosen per script
by two-fold cross-validation inside the tune half (articles 0 and 2 mod 4)
on the mean MRR@20 gain over that script's groups, refitted on the whole
tune half, cut to ``RANK`` directions as the package would hold it, and
measured once held-out (paired 95% intervals; the Arabic twin map is also
shown cut to other ranks).  ``--write``
stores the Arabic twin map (its chosen recipe, refitted on the tune half,
cut to ``RANK`` directions) as the package's e5 question map;
``--engine`` runs the recommended profile without and with
``retriever.question_map`` over the Arabic questions' sets of
``bench_pair.ranking_sets``.

    PYTHONPATH=$PWD python bench/bench_question_map.py [--write] [--engine]   # ~5 (+5) min
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchChunk,
    command_line,
    describe_load,
    describe_machine,
    format_table,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Question, article
from _quality_metrics import paired_delta, reciprocal
from _question_map_fit import Group, Matrix, fit_pairs, fit_twins, ranks, unit
from bench_floor import Plan, build

from zerda_async.core.floor_model import script_of
from zerda_async.core.script_centring import centre_query
from zerda_async.embedders import E5Embedder as ProductE5

PAIR_RECIPES = list(itertools.product((0.03, 0.05, 0.1), (0.3, 1.0, 3.0)))
"""Answer pairs: (tau, lam)."""
TWIN_RECIPES = list(itertools.product((0.3, 1.0, 3.0, 10.0), (0.3, 0.6, 1.0)))
"""Twin alignment: (lam, blend)."""
FOLDS = {"fold 0": (0,), "fold 2": (2,), "tune": (0, 2), "held-out": (1, 3)}
"""Article index mod 4 of each part of the data."""

Fit = Callable[[str, tuple[float, float]], Matrix]
"""A fit on one part (a ``FOLDS`` key) with one recipe."""


def centred(rows: NDArray[np.floating]) -> Matrix:
    """Unit question rows less the shipped script direction (what the engine searches with)."""
    direction = ProductE5.script_direction
    return unit(np.stack([centre_query(row, direction) for row in rows]))


class Data:
    """The groups of one question script, per part, and XQuAD's question twins
    (``built``: ``bench_floor.build``'s corpora and plan, shared by both scripts)."""

    def __init__(
        self, vectors: E5Vectors, script: str, built: tuple[dict[str, list[BenchChunk]], Plan]
    ) -> None:
        corpora, plan = built
        self.groups: dict[str, list[Group]] = {part: [] for part in FOLDS}
        xquad: dict[str, list[Question]] = {}
        for kind, label, questions, corpus in plan:
            if kind == "answerable, same language" and label.startswith("XQuAD"):
                xquad[label] = questions
            if not kind.startswith("answerable") or script_of(questions[0].text) != script:
                continue
            chunks = corpora[corpus]
            rows = unit(vectors.passages([c.text for c in chunks]))
            where: dict[str, list[int]] = {}
            for i, c in enumerate(chunks):
                where.setdefault(c.doc_id, []).append(i)
            name = f"{kind.removeprefix('answerable, ')}: {label} -> {corpus}"
            for part, keep in FOLDS.items():
                picked = [q for q in questions if article(q) % 4 in keep]
                picked = [q for q in picked if any(r in where for r in q.relevant)]
                relevant = [sorted(i for r in q.relevant for i in where.get(r, [])) for q in picked]
                asked = centred(vectors.queries([q.text for q in picked]))
                self.groups[part].append(Group(name, asked, rows, relevant))
        own, other = ("XQuAD ar", "XQuAD en") if script == "ar" else ("XQuAD en", "XQuAD ar")
        self.articles = np.asarray([article(q) for q in xquad[own]])
        self.asked = centred(vectors.queries([q.text for q in xquad[own]]))
        self.twins = centred(vectors.queries([q.text for q in xquad[other]]))

    def pairs(self, part: str, recipe: tuple[float, float]) -> Matrix:
        return fit_pairs(self.groups[part], *recipe)

    def twin(self, part: str, recipe: tuple[float, float]) -> Matrix:
        keep = np.isin(self.articles % 4, FOLDS[part])
        return fit_twins(self.asked[keep], self.twins[keep], *recipe)


def gains(w: Matrix, groups: Sequence[Group]) -> list[tuple[float, float]]:
    """Per group: the MRR@20 gain of the map ``w`` and its 95% half-width."""
    return [paired_delta(ranks(g.questions @ w, g), ranks(g.questions, g)) for g in groups]


def choose(
    data: Data, fit: Fit, recipes: Sequence[tuple[float, float]], label: str
) -> tuple[tuple[float, float] | None, list[list[str]]]:
    """The recipe of best two-fold gain on the tune half (``None``: none gains)."""
    rows: list[list[str]] = []
    best: tuple[float, tuple[float, float] | None] = (0.0, None)
    for recipe in recipes:
        ab = float(np.mean([g for g, _ in gains(fit("fold 0", recipe), data.groups["fold 2"])]))
        ba = float(np.mean([g for g, _ in gains(fit("fold 2", recipe), data.groups["fold 0"])]))
        mean = (ab + ba) / 2
        rows.append([label, str(recipe), f"{ab:+.4f}", f"{ba:+.4f}", f"{mean:+.4f}"])
        if mean > best[0]:
            best = (mean, recipe)
    return best[1], rows


def figures(r: list[int]) -> str:
    mrr = float(np.mean([reciprocal(x) for x in r]))
    return f"{np.mean(np.asarray(r) <= 20):.1%} / {mrr:.3f}"


RANK = 64
"""Directions kept of the shipped map (held-out, vector list: rank 64 keeps nearly all the
full map's gain, rank 32 half of it; the run prints it)."""
RANK_CUTS = (8, 32, 64)
TARGET = Path(__file__).resolve().parents[1] / "zerda_async" / "embedders" / "data"
TARGET_FILE = TARGET / "e5_question_map.npz"


def factors(w: Matrix, rank: int) -> tuple[Matrix, Matrix]:
    """``(U, V)`` of ``core.question_map`` for the row-vector map ``q -> q w``: the ``rank``
    largest singular directions of ``(w - I)^T``."""
    left, values, right = np.linalg.svd((w - np.eye(w.shape[0])).T)
    return left[:, :rank] * values[:rank], right[:rank].T


def cut(w: Matrix, rank: int) -> Matrix:
    """The row-vector map ``q -> q w`` as it ships: ``I + V U^T`` of :func:`factors`."""
    u, v = factors(w, rank)
    shipped: Matrix = np.eye(w.shape[0]) + v @ u.T
    return shipped


def held_out(data: Data, fit: Fit, recipe: tuple[float, float], label: str) -> list[list[str]]:
    """The recipe refitted on the whole tune half and cut to ``RANK`` directions (as the
    package would hold it), measured on the held-out groups."""
    w = cut(fit("tune", recipe), RANK)
    rows = []
    groups = data.groups["held-out"]
    for group, (gain, half) in zip(groups, gains(w, groups), strict=True):
        before, after = ranks(group.questions, group), ranks(group.questions @ w, group)
        n = str(len(before))
        delta = f"{gain:+.3f} ± {half:.3f}"
        rows.append([label, str(recipe), group.name, n, figures(before), figures(after), delta])
    return rows


def rank_row(data: Data, recipe: tuple[float, float]) -> list[str]:
    """Held-out mean MRR@20 gain over the groups of the Arabic twin map cut to each rank."""
    w = data.twin("tune", recipe)
    cells = []
    for rank in (*RANK_CUTS, w.shape[0]):
        gain = np.mean([g for g, _ in gains(cut(w, rank), data.groups["held-out"])])
        cells.append(f"{gain:+.4f}")
    return [str(recipe), *cells]


def write(w: Matrix, recipe: tuple[float, float]) -> None:
    """Store the Arabic map as the package's ``embedders/data/e5_question_map.npz``."""
    u, v = factors(w, RANK)
    TARGET.mkdir(parents=True, exist_ok=True)
    note = f"bench/bench_question_map.py --write: twin alignment {recipe}, rank {RANK}, tune half"
    np.savez(TARGET_FILE, u=u.astype(np.float32), v=v.astype(np.float32), note=np.array(note))


def engine_rows(vectors: E5Vectors) -> list[list[str]]:
    """The recommended profile (retrieve 20, filter, rank) without and with
    ``retriever.question_map`` (the map the package holds) over ``bench_pair.ranking_sets``'
    sets of Arabic questions, both halves."""
    from _quality_engines import make_engine
    from bench_pair import HALVES, by_half, ranking_sets, split
    from bench_rerank import _config
    from bench_script_fusion import _half, profile_ranks

    rows = []
    for corpus in ranking_sets(DATA):
        if script_of(corpus.questions[0].text) != "ar":
            continue
        halves = split(corpus)
        found = []
        for mapping in (False, True):
            config = _config()
            config.retriever.question_map = mapping
            engine = make_engine(config, corpus.chunks, E5Embedder(vectors))
            found.append(profile_ranks(engine, corpus, None))
        base, new = found
        deltas = (paired_delta(*_half(new, base, halves, x)) for x in HALVES)
        cells = [f"{d:+.3f} ± {h:.3f}" for d, h in deltas]
        rows.append([corpus.name, *by_half(base, halves), *by_half(new, halves), *cells])
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    # The engine reads the map the package held when this process started, so a run
    # that writes a new one cannot measure it: one or the other.
    either = parser.add_mutually_exclusive_group()
    either.add_argument(
        "--engine",
        action="store_true",
        help="also run the recommended profile without and with retriever.question_map",
    )
    either.add_argument(
        "--write", action="store_true", help="store the Arabic twin map in the package"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    vectors = E5Vectors()
    cv_rows: list[list[str]] = []
    held_rows: list[list[str]] = []
    ranked: list[str] = []
    built = build(DATA, 6)  # the corpora and plan of both scripts' groups
    for script in ("ar", "other"):
        data = Data(vectors, script, built)
        for family, fit, recipes in (
            ("answer pairs (tau, lam)", data.pairs, PAIR_RECIPES),
            ("twin alignment (lam, blend)", data.twin, TWIN_RECIPES),
        ):
            label = f"{script}: {family}"
            recipe, rows = choose(data, fit, recipes, label)
            cv_rows += rows
            print(f"  {label}: chose {recipe}", file=sys.stderr)
            if script == "ar" and fit == data.twin and recipe is not None:
                ranked = rank_row(data, recipe)
                if args.write:
                    write(data.twin("tune", recipe), recipe)
            if recipe is None:
                held_rows.append([label, "none gains on the tune half", "", "", "", "", ""])
            else:
                held_rows += held_out(data, fit, recipe, label)
    cv = format_table(
        ["questions: fit", "recipe", "fold 0 -> 2", "fold 2 -> 0", "mean MRR@20 gain"], cv_rows
    )
    held = format_table(
        ["questions: fit", "recipe", "group", "n", "centred r@20 / MRR@20", "mapped", "gain"],
        held_rows,
    )
    parts = []
    if ranked:
        rank_headers = ["recipe", *(f"rank {r}" for r in RANK_CUTS), "full (384)"]
        parts += ["", "## The Arabic twin map cut to fewer directions: held-out mean MRR@20 gain"]
        parts += ["", format_table(rank_headers, [ranked])]
    if args.engine:
        headers = ["set", "tune: map off", "held-out: map off", "tune: map on", "held-out: map on"]
        headers += ["tune: gain", "held-out: gain"]
        table = format_table(headers, engine_rows(vectors))
        title = "## The recommended profile without and with `retriever.question_map`"
        parts += ["", title, "", table]
    text = "\n".join(
        [
            "# Learned question maps (bench_question_map.py)",
            "",
            describe_machine(),
            describe_load(),
            f"- command: `{command_line()}`; {time.perf_counter() - started:.0f} s",
            "",
            "## Two-fold cross-validation on the tune half",
            "",
            cv,
            "",
            f"## Held-out half: each fit's chosen recipe refitted on the tune half, rank {RANK}",
            "",
            held,
            *parts,
        ]
    )
    print(text)
    write_summary("question_map", text)


if __name__ == "__main__":
    main()
