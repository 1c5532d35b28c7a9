"""The vector scan in pieces gives the one-shot scan's cosines and hits, bit for bit."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from zerda_async.core.index import VectorDType, VectorIndex, unit_rows
from zerda_async.core.index.vector_index import STEP_WORK
from zerda_async.runtime import finish, scan_blas_threads, set_scan_blas_threads


def _index(dtype: VectorDType, live: bool) -> VectorIndex:
    """Three segments of uneven sizes (as appends leave them), some rows removed."""
    rng = np.random.default_rng(5)
    index = VectorIndex.from_matrix(rng.normal(size=(1_000, 24)), dtype)
    index = index.appended(unit_rows(rng.normal(size=(333, 24)), dtype))
    index = index.appended(unit_rows(rng.normal(size=(70, 24)), dtype))
    if live:
        mask = rng.random(index.n_positions) > 0.2
        index = index.with_live(mask)
    return index


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("live", [False, True], ids=["all-live", "some-removed"])
@pytest.mark.parametrize("step_work", [1, 24 * 64, 24 * 64 * 3, 24 * 500, 10**9])
def test_stepped_scan_equals_the_one_shot_scan(
    dtype: VectorDType, live: bool, step_work: int
) -> None:
    index = _index(dtype, live)
    query = np.random.default_rng(9).normal(size=24)
    positions, sims = index.similarities(query)
    steps = index.similarity_steps(query, step_work)
    pieces = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            stepped_positions, stepped_sims = done.value
            break
        pieces += 1
    # One piece per block of step_work // 24 rows (at least 64, a multiple of
    # 64), in every segment.
    block = max(64, step_work // 24 // 64 * 64)
    expected = sum(-(-int(s.shape[0]) // block) for s in index.segments) - 1
    assert pieces == expected
    assert stepped_sims.dtype == sims.dtype
    assert stepped_sims.tobytes() == sims.tobytes()
    if positions is None:
        assert stepped_positions is None
    else:
        assert stepped_positions is not None
        assert np.array_equal(stepped_positions, positions)


def test_a_zero_query_scans_in_one_piece_and_scores_zero() -> None:
    index = _index("float64", live=False)
    steps = index.similarity_steps(np.zeros(24), 1)
    _, sims = finish(steps)
    assert not sims.any()
    assert sims.shape == (index.n_positions,)


def test_the_default_step_covers_a_realistic_scan_in_a_few_pieces() -> None:
    # 100,000 chunks of 64 dims: a few pieces, not one, not hundreds.
    assert 2 <= -(-100_000 * 64 // STEP_WORK) <= 10


@pytest.fixture
def one_blas_thread() -> Iterator[None]:
    """Scans on one BLAS thread, whatever the machine's load.

    A product split over BLAS threads sums the rows at each split (and the
    tail) in another order than one thread does, so the one-shot scan itself
    moves by an ulp there with the thread count; the stepped scan is compared
    with it at the same count.
    """
    before = scan_blas_threads()
    set_scan_blas_threads(1)
    yield
    set_scan_blas_threads(before)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stepped_scan_of_a_large_index_equals_the_one_shot_scan(
    dtype: VectorDType, one_blas_thread: None
) -> None:
    rng = np.random.default_rng(3)
    index = VectorIndex.from_matrix(rng.normal(size=(40_003, 64)), dtype)
    query = rng.normal(size=64)
    _, sims = index.similarities(query)
    _, stepped = finish(index.similarity_steps(query, STEP_WORK // 4))
    assert stepped.tobytes() == sims.tobytes()
