"""The soak test, short form (CI): see :mod:`.soak`; ``bench/bench_soak.py`` runs 20,000 requests.

``ZERDA_SOAK_REQUESTS`` overrides the number of requests.
"""

from __future__ import annotations

import os

import pytest

from .soak import MB, SoakSettings, problems, run_soak

pytestmark = [pytest.mark.anyio, pytest.mark.soak]


async def test_soak_short_form() -> None:
    settings = SoakSettings(requests=int(os.environ.get("ZERDA_SOAK_REQUESTS", "5000")))
    report = await run_soak(settings)
    assert not problems(report), "\n".join(problems(report))
    # The run exercised what it is about.
    assert report.cancelled and report.timeouts and report.injected_errors
    assert report.streams_left_early and report.ok > settings.requests // 2
    assert report.sessions == settings.max_sessions  # evictions happened, within the bound
    print(
        f"\nsoak: {report.requests} requests in {report.elapsed_s:.1f} s, ok {report.ok},"
        f" cancelled {report.cancelled}, timeouts {report.timeouts},"
        f" injected {report.injected_errors}, RSS +{report.rss_growth / MB:.1f} MB"
    )
