"""The candidate floor features of ``bench/bench_floor_features.py`` (measured, not shipped)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zerda_async.core.models import ScoredChunk

BENCH = Path(__file__).resolve().parents[2] / "bench"


@dataclass
class _Doc:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
def features(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("bench_floor_features")


def hit(cosine: float, source: str, number: int, text: str = "", keyword_rank: int = 0) -> Any:
    sc = ScoredChunk(_Doc(text or f"{source} {number}", {"source": source, "chunk": number}))
    sc.vector_score, sc.vector_margin, sc.keyword_rank = cosine, cosine - 0.5, keyword_rank
    return sc


def test_source_share_and_neighbours_count_the_best_hits_article(features: Any) -> None:
    listed = [hit(0.9, "a", 3), hit(0.8, "a", 4), hit(0.7, "b", 0), hit(0.6, "a", 9)]
    listed.append(hit(0.5, "c", 1))
    assert features.source_share("", listed) == pytest.approx(3 / 5)
    # chunk 9 shares the article but is not within two chunks of chunk 3
    assert features.neighbours("", listed) == pytest.approx(2 / 5)
    # only the five best count
    assert features.source_share("", [*listed, hit(0.4, "a", 5)]) == pytest.approx(3 / 5)


def test_gaps_and_z_score_read_the_listed_cosines(features: Any) -> None:
    listed = [hit(c, "a", i) for i, c in enumerate((0.9, 0.8, 0.7, 0.6, 0.5))]
    assert features.gap(2)("", listed) == pytest.approx(0.1)
    assert features.gap(5)("", listed) == pytest.approx(0.4)
    assert features.gap(5)("", listed[:2]) == pytest.approx(0.1)  # the last, when fewer
    cosines = np.asarray([0.9, 0.8, 0.7, 0.6, 0.5])
    expected = (0.9 - cosines.mean()) / cosines.std()
    assert features.z_score("", listed) == pytest.approx(expected)
    assert features.z_score("", listed[:2]) == 0.0


def test_agreement_is_the_share_of_vector_hits_the_keywords_rank_high(features: Any) -> None:
    listed = [hit(0.9, "a", 0, keyword_rank=1), hit(0.8, "a", 1, keyword_rank=11)]
    listed += [hit(0.7, "a", 2), hit(0.6, "a", 3, keyword_rank=10)]
    assert features.agreement("", listed) == pytest.approx(2 / 4)


def test_names_keep_digits_across_scripts_and_latin_capitalised_words(features: Any) -> None:
    # "In which year did Tesla arrive?" with Arabic-Indic digits and a Latin name
    assert features.names("في عام ١٨٨٤ وصل Tesla إلى أين؟") == {"1884", "tesla"}
    # an English question's first word is capitalised anyway
    assert features.names("When did Tesla reach New York?") == {"tesla", "new", "york"}
    listed = [hit(0.9, "a", 0, text="وصل تسلا عام 1884 إلى نيويورك")]
    assert features.shared_names("In 1884 where did Tesla go?", listed) == pytest.approx(1 / 2)
    assert features.has_names("what is it?", listed) == 0.0


def test_univariate_auc_counts_ties_half_and_orients(features: Any) -> None:
    x = np.asarray([1.0, 1.0, 0.0, 1.0])
    y = np.asarray([True, True, False, False])
    # pairs (relevant, off-topic): (1,0) wins twice, (1,1) ties twice -> 3 / 4
    assert features.univariate(x, y) == pytest.approx(0.75)
    assert features.univariate(-x, y) == pytest.approx(0.75)
