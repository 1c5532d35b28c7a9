"""The vector scan's BLAS threads and the offload threshold: the knobs of the runtime fixes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

import zerda_async.runtime._scan_threads as scan_threads_module
from zerda_async import AsyncContextEngine
from zerda_async.core.index import STEP_WORK, VectorIndex
from zerda_async.pipeline import OffloadPolicy, RunnerSettings, default_threshold_ms
from zerda_async.runtime import (
    SMALL_SCAN,
    free_cores,
    scan_blas_threads,
    scan_threads,
    set_scan_blas_threads,
)

BLAS = ThreadpoolController().select(user_api="blas")


def blas_threads() -> int:
    return int(BLAS.info()[0]["num_threads"])


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """BLAS at 2 threads (so a limit of 1 is visible), the setting restored afterwards."""
    if not BLAS.lib_controllers:
        pytest.skip("numpy has no BLAS that threadpoolctl can see")
    before = scan_blas_threads()
    with BLAS.limit(limits=2):
        if blas_threads() != 2:
            pytest.skip("this BLAS cannot run 2 threads")
        yield
    set_scan_blas_threads(before)


@pytest.mark.parametrize("bad", ["", "two", "0", 0, -1, True, 1.5])
def test_a_bad_setting_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ValueError, match="scan BLAS threads must be 'auto', 'off'"):
        set_scan_blas_threads(bad)  # type: ignore[arg-type]


def test_a_bad_environment_value_names_the_variable() -> None:
    env = {**os.environ, "ZERDA_SCAN_BLAS_THREADS": "many"}
    done = subprocess.run(
        [sys.executable, "-c", "import zerda_async"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ZERDA_SCAN_BLAS_THREADS must be 'auto', 'off'" in done.stderr


def test_a_count_limits_blas_during_the_scan_and_restores_it(two_blas_threads: None) -> None:
    set_scan_blas_threads("1")
    assert scan_blas_threads() == 1
    with scan_threads():
        assert blas_threads() == 1
        with scan_threads():  # a concurrent scan shares the limit
            assert blas_threads() == 1
        assert blas_threads() == 1  # not restored while one scan still runs
    assert blas_threads() == 2


def test_off_leaves_blas_alone(two_blas_threads: None) -> None:
    set_scan_blas_threads("off")
    with scan_threads():
        assert blas_threads() == 2


def test_a_limit_never_adds_threads(two_blas_threads: None) -> None:
    with BLAS.limit(limits=1):
        set_scan_blas_threads(2)
        with scan_threads():
            assert blas_threads() == 1


def test_auto_uses_at_most_the_free_cores(two_blas_threads: None) -> None:
    set_scan_blas_threads("auto")
    free = free_cores()
    assert free is not None  # Linux: /proc/stat is there
    assert 0.0 <= free <= len(os.sched_getaffinity(0))
    with scan_threads(SMALL_SCAN + 1):
        assert 1 <= blas_threads() <= 2
    assert blas_threads() == 2


def test_the_scan_gives_the_same_cosines_whatever_the_threads(two_blas_threads: None) -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex.from_matrix(rng.standard_normal((3000, 64)))
    query = rng.standard_normal(64)
    set_scan_blas_threads("off")
    _, two = index.similarities(query)
    set_scan_blas_threads(1)
    _, one = index.similarities(query)
    np.testing.assert_array_equal(one, two)


def test_the_default_offload_threshold_is_two_switch_intervals() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.004)
        assert default_threshold_ms() == pytest.approx(8.0)
        assert OffloadPolicy(None, 0).threshold_ms == pytest.approx(8.0)
        sys.setswitchinterval(0.0001)
        assert default_threshold_ms() == 2.0  # never below the hop's own worth
    finally:
        sys.setswitchinterval(before)
    assert OffloadPolicy(3.5, 0).threshold_ms == 3.5


def test_a_negative_offload_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="offload_threshold_ms must be >= 0"):
        RunnerSettings(offload_threshold_ms=-1.0)
    with pytest.raises(ValueError, match="offload_threshold_ms must be >= 0"):
        AsyncContextEngine(offload_threshold_ms=float("nan"))


def test_the_policy_keeps_work_under_the_threshold_inline() -> None:
    policy = OffloadPolicy(10.0, min_corpus=20_000)
    assert policy.should_offload(100_000)  # before any measurement: the corpus size
    policy.observe(4.0)
    assert not policy.should_offload(100_000)
    for _ in range(20):
        policy.observe(30.0)
    assert policy.should_offload(100_000)


def test_a_full_scan_block_runs_on_one_thread_even_with_cores_free(
    two_blas_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_scan_blas_threads("auto")
    monkeypatch.setattr(scan_threads_module, "free_cores", lambda: 2.0)
    with scan_threads(STEP_WORK):  # a stepped scan's block: SMALL_SCAN multiply-adds
        assert blas_threads() == 1
    with scan_threads(SMALL_SCAN + 1):
        assert blas_threads() == 2
    assert blas_threads() == 2


def test_auto_scans_a_small_product_on_one_thread(two_blas_threads: None) -> None:
    set_scan_blas_threads("auto")
    with scan_threads(SMALL_SCAN - 1):
        assert blas_threads() == 1
    assert blas_threads() == 2
