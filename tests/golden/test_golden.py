"""Every public golden case, replayed through ``sync_api`` (one test per case id)."""

from __future__ import annotations

from typing import Any

import pytest

from .replay import REPLAYERS, check_case, load_cases

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    difference = check_case(case, REPLAYERS[case["kind"]](case["input"]))
    assert difference is None, difference


def test_every_kind_has_a_replayer() -> None:
    assert {c["kind"] for c in CASES} <= set(REPLAYERS)
