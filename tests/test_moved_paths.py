"""The documented import paths that moved in this release still import, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

from zerda_async._compat import MOVED_MODULES, MOVED_NAMES


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


@pytest.mark.parametrize(
    ("old", "name", "new"),
    sorted((old, name, new) for old, moved in MOVED_NAMES.items() for name, new in moved.items()),
)
def test_a_moved_name_still_imports_from_its_old_module_and_warns(
    old: str, name: str, new: str
) -> None:
    module = importlib.import_module(old)
    assert name not in module.__dict__, "the name itself left the old module"
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    with pytest.warns(DeprecationWarning):
        exec(f"from {old} import {name}", {})  # the form users write


def test_an_unknown_name_of_a_module_with_moved_names_is_still_an_attribute_error() -> None:
    import zerda_async.errors

    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(zerda_async.errors, "no_such_name")  # noqa: B009
