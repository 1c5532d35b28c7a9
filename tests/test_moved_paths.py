"""The documented import paths that moved in this release still import, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

from zerda_async._compat import MOVED_MODULES


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_an_old_path_imports_the_new_names_and_warns(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    target = importlib.import_module(new)
    assert module.__all__ == list(target.__all__)
    for name in target.__all__:
        assert getattr(module, name) is getattr(target, name)
    sys.modules.pop(old, None)


def test_the_documented_old_names_are_there() -> None:
    documented = {
        "zerda_async.server": ("create_app", "index_app"),
        "zerda_async.hashing_embedder": ("HashingEmbedder",),
        "zerda_async.pipeline.sync_runner": ("failed_stage",),
    }
    for old, names in documented.items():
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning):
            module = importlib.import_module(old)
        for name in names:
            assert callable(getattr(module, name)), f"{old}.{name}"
        sys.modules.pop(old, None)


def test_an_unknown_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("zerda_async.no_such_module")
