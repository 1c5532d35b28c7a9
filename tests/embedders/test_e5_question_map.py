"""e5-small's question map: stored beside its module, loaded with a clear error when it is not."""

from __future__ import annotations

import pytest

from zerda_async.embedders import _e5_question_map
from zerda_async.embedders._e5_question_map import E5_QUESTION_MAP, load_question_map


def test_the_stored_map_loads_as_the_one_e5_carries() -> None:
    fresh = load_question_map()
    assert (fresh.script, fresh.dim, fresh.rank) == (E5_QUESTION_MAP.script, 384, 64)


def test_a_missing_data_file_names_itself_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_e5_question_map, "_FILE", ("data", "no_such_map.npz"))
    with pytest.raises(RuntimeError, match=r"no_such_map\.npz is missing or damaged.*reinstall"):
        load_question_map()
