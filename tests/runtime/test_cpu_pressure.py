"""CPU pressure (PSI) and the rule that sends crowded groups to threads on contended cores.

Every reading is injected (a file written here, or a monkeypatched reader):
nothing depends on the machine's real load.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import zerda_async.runtime._cpu_pressure as pressure_module
import zerda_async.runtime._offload_policy as offload_policy_module
from zerda_async.runtime import CONTENDED, SPARE_CORE, cpu_pressure, thread_pays
from zerda_async.runtime._cpu_pressure import PROBE_EVERY, parse_some_total, pressure_share

SAMPLE = (
    b"some avg10=52.90 avg60=39.92 avg300=33.30 total=3642147570\n"
    b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Clock]:
    """A fresh probe and a clock the test moves."""
    fake = _Clock()
    monkeypatch.setattr(pressure_module, "_probe", {})
    monkeypatch.setattr(pressure_module, "_now", fake.monotonic)
    yield fake


def _psi(path: Path, total_us: int) -> str:
    path.write_bytes(f"some avg10=1.00 avg60=1.00 avg300=1.00 total={total_us}\n".encode())
    return str(path)


def test_the_some_total_is_read_from_a_psi_file() -> None:
    assert parse_some_total(SAMPLE) == 3642147570.0


@pytest.mark.parametrize(
    "text",
    [b"", b"full avg10=0.00 total=5\n", b"some avg10=1.0\n", b"some total=abc\n", b"\x00\xff"],
)
def test_a_malformed_psi_file_gives_no_total(text: bytes) -> None:
    assert parse_some_total(text) is None


@pytest.mark.parametrize(
    ("before", "after", "elapsed", "share"),
    [
        (0, 125_000, 0.25, 0.5),  # waited half of the window
        (0, 0, 0.25, 0.0),
        (0, 400_000, 0.25, 1.0),  # several threads waiting: capped at the whole window
        (100, 50, 0.25, None),  # the counter went backwards
        (0, 10, 0.0, None),  # empty window
    ],
)
def test_the_share_is_the_counter_growth_over_the_window(
    before: float, after: float, elapsed: float, share: float | None
) -> None:
    assert pressure_share(before, after, elapsed) == share


def test_the_pressure_needs_two_samples_and_is_reread_after_the_window(
    tmp_path: Path, clock: _Clock
) -> None:
    path = _psi(tmp_path / "cpu", 1_000_000)
    assert cpu_pressure(path) is None  # one sample: no share yet
    clock.now += PROBE_EVERY
    _psi(tmp_path / "cpu", 1_000_000 + 200_000)
    assert cpu_pressure(path) == pytest.approx(0.8)
    # Within the window the last share is kept, whatever the file says now.
    _psi(tmp_path / "cpu", 5_000_000)
    clock.now += PROBE_EVERY / 2
    assert cpu_pressure(path) == pytest.approx(0.8)
    clock.now += PROBE_EVERY
    _psi(tmp_path / "cpu", 1_000)  # counter reset (went backwards): unknown
    assert cpu_pressure(path) is None


def test_a_missing_psi_file_reads_as_unknown(tmp_path: Path, clock: _Clock) -> None:
    missing = str(tmp_path / "no-pressure")
    assert cpu_pressure(missing) is None
    clock.now += PROBE_EVERY
    assert cpu_pressure(missing) is None


def test_an_unreadable_psi_file_reads_as_unknown(tmp_path: Path, clock: _Clock) -> None:
    # A directory where the file should be: open() or read() fails with an OSError.
    assert cpu_pressure(str(tmp_path)) is None
    garbage = tmp_path / "cpu"
    garbage.write_bytes(b"not psi\n")
    clock.now += PROBE_EVERY
    assert cpu_pressure(str(garbage)) is None


@pytest.mark.parametrize(
    ("free", "pressure", "thread"),
    [
        (2.0, None, True),  # a core is free: a thread, pressure or not
        (SPARE_CORE, 1.0, True),
        (0.2, 1.0, True),  # no core free, every core contended: a thread
        (0.2, CONTENDED, True),
        (0.2, CONTENDED / 2, False),  # busy without a queue: paced
        (0.2, None, False),  # no PSI: the use-based rule alone, as before
        (None, None, False),  # nothing known: paced
        (None, 1.0, True),
    ],
)
def test_a_crowded_group_goes_to_a_thread_on_a_free_or_a_contended_core(
    monkeypatch: pytest.MonkeyPatch, free: float | None, pressure: float | None, thread: bool
) -> None:
    monkeypatch.setattr(offload_policy_module, "free_cores", lambda: free)
    monkeypatch.setattr(offload_policy_module, "cpu_pressure", lambda: pressure)
    assert thread_pays() is thread
